"""Run-queue delay of a guest's vCPU threads: parser, kernel, backend.

The kernel test reads what this machine's kernel writes for two busy
processes made to share one CPU; the backend tests describe a guest's
qemu in a fixture tree (``proc/<pid>/task/<tid>/schedstat``), as
test_numafaults does.
"""

import os
import subprocess
import sys
import time

from nova_numa_policy.contracts import backend
from nova_numa_policy.decisions import reporting

from agent.backend import libvirt_backend
from agent.backend import settings
from agent.sensors import guestproc
from agent.sensors import schedstat
from tests import base as test_base
from tests.unit.agent import base
from tests.unit.agent import test_numafaults
from tests.unit.agent import test_pagemove_backend as guest_files

PID = test_numafaults.PID


class ParseTest(test_base.TestCase):

    def test_ran_and_waited_are_the_first_two_numbers(self):
        self.assertEqual((8120034, 51200),
                         schedstat.parse('8120034 51200 17\n'))

    def test_anything_else_is_not_a_schedstat(self):
        for text in ('', '12\n', 'x y z\n'):
            self.assertIsNone(schedstat.parse(text), text)

    def test_the_wait_share_is_waited_over_ran_plus_waited(self):
        self.assertEqual(0.25, schedstat.wait_share((100, 10), (400, 110)))

    def test_no_share_without_time_or_after_a_restart(self):
        self.assertIsNone(schedstat.wait_share(None, (400, 110)))
        self.assertIsNone(schedstat.wait_share((400, 110), (400, 110)))
        self.assertIsNone(schedstat.wait_share((400, 110), (50, 200)))


def _spinner(cpu):
    proc = subprocess.Popen([sys.executable, '-c', 'while True: pass'])
    os.sched_setaffinity(proc.pid, {cpu})
    return proc


class KernelTest(test_base.TestCase):
    """What this machine's kernel says of two busy processes on one CPU."""

    def test_sharing_a_cpu_shows_as_waiting_half_the_time(self):
        self.assertTrue(schedstat.available('/'),
                        'this kernel keeps no run-queue delay per thread '
                        '(CONFIG_SCHED_INFO)')
        cpu = min(os.sched_getaffinity(0))
        procs = [_spinner(cpu), _spinner(cpu)]
        for proc in procs:
            self.addCleanup(proc.wait)
            self.addCleanup(proc.kill)

        def times():
            found = [schedstat.read('/', p.pid, [p.pid]) for p in procs]
            return (sum(t[0] for t in found), sum(t[1] for t in found))

        time.sleep(0.2)
        before = times()
        time.sleep(1.0)
        share = schedstat.wait_share(before, times())
        # Both always runnable, one CPU: each waits while the other
        # runs, so at least about half their time is waiting (more when
        # anything else runs on that CPU too).
        self.assertGreater(share, 0.4)
        self.assertLessEqual(share, 1.0)

    def test_a_thread_that_is_gone_reads_as_nothing(self):
        proc = subprocess.Popen([sys.executable, '-c', 'pass'])
        proc.wait()
        self.assertIsNone(schedstat.read('/', proc.pid, [proc.pid]))


class BackendWaitTest(base.TestDriverHostTest):
    """HOME_FROM_NOVA's qemu: two vCPU threads with schedstat files."""

    def setUp(self):
        super().setUp()
        self.now = 100.0
        self.backend = libvirt_backend.LibvirtBackend(
            self.connection, paths=settings.HostPaths(root=self.root),
            timing=settings.Timing(clock=lambda: self.now, sleep=self.advance))
        guest_files.write_qemu(self.root, 'instance-00000002',
                               base.HOME_FROM_NOVA, PID)
        test_numafaults.write_threads(self.root, PID, {
            PID + 1: ('CPU 0/KVM', {}), PID + 2: ('CPU 1/KVM', {})})

    def advance(self, seconds):
        self.now += seconds

    def kernel_has_schedstat(self):
        guest_files.write(self.root, schedstat.SELF, '1 2 3\n')

    def times(self, first, second):
        for tid, (ran, waited) in ((PID + 1, first), (PID + 2, second)):
            guest_files.write(self.root, f'proc/{PID}/task/{tid}/schedstat',
                              f'{ran} {waited} 9\n')

    def instance(self):
        return [i for i in self.backend.observe().instances
                if i.uuid == base.HOME_FROM_NOVA][0]

    def test_the_share_is_measured_over_the_period(self):
        self.kernel_has_schedstat()
        self.times((1000, 0), (1000, 0))
        self.instance()  # the first window's baseline
        self.times((4000, 1000), (2000, 0))  # 4000 ns ran, 1000 waited
        self.advance(5.0)
        self.assertEqual(0.2, self.instance().cpu_wait)
        self.assertIn(backend.MEASURE_CPU_WAIT, self.backend.measurements())

    def test_a_kernel_without_it_measures_nothing(self):
        self.times((1000, 0), (1000, 0))
        self.instance()
        self.times((4000, 1000), (2000, 0))
        self.advance(5.0)
        self.assertIsNone(self.instance().cpu_wait)
        self.assertNotIn(backend.MEASURE_CPU_WAIT,
                         self.backend.measurements())
        self.assertIn(backend.MEASURE_INTERFACE_TRAFFIC,
                      self.backend.measurements())

    def test_a_restarted_qemu_starts_a_new_window(self):
        self.kernel_has_schedstat()
        self.times((9000, 900), (9000, 900))
        self.instance()
        new_pid = PID + 100
        guest_files.write_qemu(self.root, 'instance-00000002',
                               base.HOME_FROM_NOVA, new_pid)
        test_numafaults.write_threads(self.root, new_pid, {
            new_pid + 1: ('CPU 0/KVM', {}), new_pid + 2: ('CPU 1/KVM', {})})
        for tid in (new_pid + 1, new_pid + 2):
            guest_files.write(self.root,
                              f'proc/{new_pid}/task/{tid}/schedstat',
                              '100 0 1\n')
        self.advance(5.0)
        # Times went backwards: no share rather than a negative one.
        self.assertIsNone(self.instance().cpu_wait)

    def test_the_report_carries_the_share_and_what_the_host_measures(self):
        self.kernel_has_schedstat()
        self.times((1000, 0), (1000, 0))
        self.instance()
        self.times((4000, 1000), (2000, 0))
        self.advance(5.0)
        report = reporting.build_report(
            self.backend.observe(), 'compute1', 'compute1', 1, 5.0,
            self.backend.capabilities(),
            locality_signal=self.backend.locality_signal(),
            measurements=self.backend.measurements())
        waits = {i.uuid: i.cpu_wait for i in report.instances}
        self.assertEqual(0.2, waits[base.HOME_FROM_NOVA])
        self.assertIsNone(waits[base.NO_POLICY])
        self.assertEqual(['cpu-wait', 'interface-traffic'],
                         report.measurements)


class OpenFilesTest(test_base.TestCase):
    """Files kept open across periods, on this machine's kernel."""

    def setUp(self):
        super().setUp()
        self.files = guestproc.OpenFiles(limit=2)
        self.addCleanup(self.files.close)

    def test_each_read_is_the_kernels_answer_now(self):
        proc = _spinner(min(os.sched_getaffinity(0)))
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        path = f'/proc/{proc.pid}/task/{proc.pid}/schedstat'
        first = schedstat.parse(self.files.read_text(path))
        time.sleep(0.3)
        second = schedstat.parse(self.files.read_text(path))
        self.assertEqual(1, len(self.files))
        self.assertGreater(second[0], first[0])

    def test_a_file_of_a_thread_that_ended_reads_as_none_and_closes(self):
        proc = subprocess.Popen([sys.executable, '-c',
                                 'import time; time.sleep(30)'])
        self.addCleanup(proc.wait)
        path = f'/proc/{proc.pid}/task/{proc.pid}/schedstat'
        self.assertIsNotNone(self.files.read_text(path))
        proc.kill()
        proc.wait()
        self.assertIsNone(self.files.read_text(path))
        self.assertEqual(0, len(self.files))

    def test_files_not_read_since_the_last_sweep_are_closed(self):
        me = f'/proc/self/task/{os.getpid()}'
        self.files.read_text(f'{me}/schedstat')
        self.files.read_text(f'{me}/sched')
        self.files.sweep()
        self.files.read_text(f'{me}/sched')
        self.files.sweep()
        self.assertEqual(1, len(self.files))

    def test_beyond_the_limit_a_file_is_read_without_being_kept(self):
        me = f'/proc/self/task/{os.getpid()}'
        for name in ('schedstat', 'sched', 'stat'):
            self.assertTrue(self.files.read_text(f'{me}/{name}'))
        self.assertEqual(2, len(self.files))
