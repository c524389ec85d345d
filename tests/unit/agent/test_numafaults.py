"""The kernel's hinting faults, read per vCPU thread: parser and backend.

The backend tests describe a guest's qemu in the fixture tree: its
pidfile, its cmdline, and under ``proc/<pid>/task`` one directory per
thread with its ``comm`` and ``sched`` as the kernel prints them.
"""

import fixtures

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality
from nova_numa_policy.decisions import reporting
from nova_numa_policy.loops import runner as loop_runner
from nova_numa_policy.loops import vnuioa

from agent.sensors import numafaults
from tests import base as test_base
from tests import topology_factory
from tests.unit.agent import base
from tests.unit.agent import test_pagemove_backend as guest_files

PID = 5151


def sched_text(name, tid, faults):
    """A thread's sched file as the kernel prints it (6.1, 2 nodes)."""
    lines = [f'{name} ({tid}, #threads: 4)', '-' * 67,
             'se.exec_start                                :   226560.35',
             'mm->numa_scan_seq                            :           12',
             'numa_pages_migrated                          :            0',
             'numa_preferred_nid                           :            1',
             f'total_numa_faults                            : '
             f'{sum(faults.values()):12}',
             'current_node=0, numa_group_id=0']
    for node in (0, 1):
        private = faults.get(node, 0)
        lines.append(f'numa_faults node={node} task_private={private} '
                     f'task_shared=0 group_private=0 group_shared=0')
    return '\n'.join(lines) + '\n'


def write_threads(root, pid, threads):
    """``threads``: {tid: (comm, {node: faults})}."""
    guest_files.write_stat(root, f'proc/{pid}/stat', pid, 'qemu')
    for tid, (comm, faults) in threads.items():
        guest_files.write(root, f'proc/{pid}/task/{tid}/comm', comm + '\n')
        # psutil lists the threads by their task/<tid>/stat, and reads
        # each one's name from its own /proc/<tid> (the command line
        # too, for a name of 15 characters, which may be cut short).
        guest_files.write_stat(root, f'proc/{pid}/task/{tid}/stat', tid,
                               comm)
        guest_files.write_stat(root, f'proc/{tid}/stat', tid, comm)
        guest_files.write(root, f'proc/{tid}/cmdline',
                          '/usr/bin/qemu-system-x86_64\0')
        guest_files.write(root, f'proc/{pid}/task/{tid}/sched',
                          sched_text(comm, tid, faults))


class ParseTest(test_base.TestCase):

    def test_private_and_shared_faults_add_up_per_node(self):
        text = sched_text('CPU 0/KVM', 11, {0: 40, 1: 300}).replace(
            'node=1 task_private=300 task_shared=0',
            'node=1 task_private=300 task_shared=12')
        faults = numafaults.parse_sched(text, vcpu=0)
        self.assertEqual({0: 40, 1: 312}, faults.per_node)
        self.assertEqual(352, sum(faults.per_node.values()))
        self.assertEqual(0, faults.vcpu)

    def test_a_kernel_without_numa_balancing_gives_nothing(self):
        text = 'qemu (11, #threads: 1)\nse.exec_start : 1.0\n'
        self.assertEqual({}, numafaults.parse_sched(text).per_node)

    def test_vcpu_threads_are_named_by_qemu(self):
        self.assertEqual(3, numafaults.vcpu_of('CPU 3/KVM\n'))
        self.assertEqual(0, numafaults.vcpu_of('CPU 0/TCG'))
        for other in ('qemu-system-x86', 'IO mon_iothread', 'worker',
                      'CPU x/KVM', 'vhost-4242'):
            self.assertIsNone(numafaults.vcpu_of(other), other)

    def test_balancing_modes(self):
        self.assertTrue(numafaults.samples_locality(1))
        self.assertTrue(numafaults.samples_locality(3))
        # Memory tiering alone scans slow tiers, never DRAM nodes.
        self.assertFalse(numafaults.samples_locality(2))
        self.assertFalse(numafaults.samples_locality(0))
        self.assertFalse(numafaults.samples_locality(None))


class ReadTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path

    def test_only_vcpu_threads_are_read(self):
        write_threads(self.root, PID, {
            PID: ('qemu-system-x86', {0: 9000}),
            PID + 1: ('CPU 0/KVM', {1: 300}),
            PID + 2: ('CPU 1/KVM', {0: 20, 1: 100}),
            PID + 3: ('IO mon_iothread', {0: 500})})
        threads = numafaults.vcpu_threads(self.root, PID)
        self.assertEqual({PID + 1: 0, PID + 2: 1}, threads)
        read = numafaults.read(self.root, PID, threads)
        self.assertEqual([0, 1], [t.vcpu for t in read])
        self.assertEqual({0: 20, 1: 400}, numafaults.add(read))

    def test_a_thread_gone_is_left_out(self):
        write_threads(self.root, PID, {PID + 1: ('CPU 0/KVM', {1: 3})})
        read = numafaults.read(self.root, PID, {PID + 1: 0, PID + 9: 1})
        self.assertEqual([0], [t.vcpu for t in read])

    def test_a_process_gone_has_no_threads(self):
        self.assertEqual({}, numafaults.vcpu_threads(self.root, 999999))

    def test_the_sysctl(self):
        self.assertIsNone(numafaults.balancing_mode(self.root))
        guest_files.write(self.root, numafaults.SYSCTL, '1\n')
        self.assertEqual(1, numafaults.balancing_mode(self.root))


class BackendSignalTest(base.TestDriverHostTest):
    """HOME_FROM_NOVA's qemu: vCPU 0 samples node 1, vCPU 1 node 0."""

    def setUp(self):
        super().setUp()
        guest_files.write_qemu(self.root, 'instance-00000002',
                               base.HOME_FROM_NOVA, PID)
        write_threads(self.root, PID, {
            PID + 1: ('CPU 0/KVM', {1: 600}),
            PID + 2: ('CPU 1/KVM', {0: 200})})

    def balancing(self, mode):
        guest_files.write(self.root, numafaults.SYSCTL, f'{mode}\n')

    def instance(self, uuid=base.HOME_FROM_NOVA):
        return [i for i in self.backend.observe().instances
                if i.uuid == uuid][0]

    def test_without_the_kernels_balancing_nothing_is_measured(self):
        self.balancing(0)
        self.assertIsNone(self.backend.locality_signal())
        self.assertNotIn(backend.CAP_ACCESS_COUNTERS,
                         self.backend.capabilities())
        guest = self.instance()
        self.assertIsNone(guest.accesses_per_node)
        self.assertIsNone(guest.access_signal)
        self.assertIsNone(guest.vcpu_penalty)

    def test_with_it_the_vcpu_threads_sampled_accesses_are_observed(self):
        self.balancing(1)
        self.assertEqual(locality.SIGNAL_HINTING_FAULTS,
                         self.backend.locality_signal())
        self.assertIn(backend.CAP_ACCESS_COUNTERS,
                      self.backend.capabilities())
        guest = self.instance()
        self.assertEqual({0: 200, 1: 600}, guest.accesses_per_node)
        self.assertEqual(locality.SIGNAL_HINTING_FAULTS, guest.access_signal)
        # Each vCPU's penalty is where its own samples went, from the
        # node it runs on (the test driver's: node 1 for this guest).
        topology = self.backend.topology()
        nodes = [topology.node_of_cpu(cpu) for cpu in guest.vcpu_cpus]
        expected = tuple(
            locality.remote_penalty(topology, node, faults)
            for node, faults in zip(nodes, ({1: 600}, {0: 200})))
        self.assertEqual(expected, guest.vcpu_penalty)
        self.assertNotEqual(expected[0], expected[1])

    def test_a_guest_whose_memory_the_kernel_never_scans_is_unmeasured(self):
        # Bound or interleaved memory is not scanned: no faults at all.
        self.balancing(1)
        write_threads(self.root, PID, {PID + 1: ('CPU 0/KVM', {}),
                                       PID + 2: ('CPU 1/KVM', {})})
        guest = self.instance()
        self.assertIsNone(guest.accesses_per_node)
        self.assertIsNone(guest.access_signal)

    def test_turned_on_while_the_agent_runs_it_is_seen_next_period(self):
        self.balancing(0)
        self.assertIsNone(self.instance().accesses_per_node)
        self.balancing(1)
        self.assertEqual({0: 200, 1: 600},
                         self.instance().accesses_per_node)

    def test_a_restarted_qemu_is_listed_again(self):
        self.balancing(1)
        self.instance()
        new_pid = PID + 100
        guest_files.write_qemu(self.root, 'instance-00000002',
                               base.HOME_FROM_NOVA, new_pid)
        write_threads(self.root, new_pid, {
            new_pid + 1: ('CPU 0/KVM', {0: 7}),
            new_pid + 2: ('CPU 1/KVM', {0: 5})})
        self.assertEqual({0: 12}, self.instance().accesses_per_node)

    def test_the_report_names_the_signal_and_the_class(self):
        self.balancing(1)
        snapshot = self.backend.observe()
        report = reporting.build_report(
            snapshot, 'compute1', 'compute1', 1, 5.0,
            self.backend.capabilities() | {backend.CAP_PAGE_MIGRATION},
            locality_signal=self.backend.locality_signal(),
            judges=loop_runner.judges())
        self.assertEqual('hinting-faults', report.locality_signal)
        self.assertIn('first-touch+carrefour', report.enforceable_policies)
        self.assertIn('auto', report.enforceable_policies)
        classes = {i.uuid: i.access_class for i in report.instances}
        # 600 against 200 samples over the guest's two nodes: an
        # imbalance of 50 %, below auto's 85 %.
        self.assertEqual('low', classes[base.HOME_FROM_NOVA])
        # Guests without a qemu the agent could read are not classed.
        self.assertIsNone(classes[base.NO_POLICY])


class ReportedIoTest(test_base.TestCase):
    """io_intensive in the report: vNUIOA's rule, the flavor first."""

    def report(self, **instance):
        inst = backend.InstanceState(uuid=base.HOME_FROM_NOVA,
                                     requested_policy='first-touch',
                                     **instance)
        topology = topology_factory.host_topology(cpus=2, memory_mb=1024)
        snapshot = backend.HostSnapshot(topology, (), (inst,), 0.0)
        (reported,) = reporting.build_report(
            snapshot, 'h', 'h', 1, 5.0, frozenset(),
            judges=[(vnuioa.Vnuioa, vnuioa.Config(io_threshold_rps=500.0))]
        ).instances
        return reported

    def test_measured_rate_against_the_threshold(self):
        self.assertTrue(self.report(io_rate=800.0).io_intensive)
        self.assertFalse(self.report(io_rate=20.0).io_intensive)

    def test_the_flavors_word_prevails(self):
        self.assertTrue(self.report(io_rate=0.0,
                                    io_intensity='high').io_intensive)
        self.assertFalse(self.report(io_rate=9000.0,
                                     io_intensity='low').io_intensive)
