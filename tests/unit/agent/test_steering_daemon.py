"""What the steering daemon accepts and does (agent.privsep.irqs).

Entry points run in this process as in the daemon (privsep's unit-test
convention). The host they write is a fixture tree (``irqs.ROOT``
points at it): this machine's own /proc/irq is never touched. irqbalance
is a fake speaking its socket protocol, in a thread; vhost workers are
threads of a real child process made a guest by a pidfile.
"""

import os
import socket
import struct
import subprocess
import sys
import threading

import fixtures

from agent import privsep
from agent.privsep import irqs
from agent.privsep import trust
from tests import base as test_base
from tests.unit.agent import iopath_files as files
from tests.unit.agent import memchild

NIC = 'ens1f0'
CREDENTIALS = struct.calcsize('3i')


class FakeIrqbalance(fixtures.Fixture):
    """irqbalance's socket: ``setup`` and ``settings ban irqs``, as 1.9.

    Like irqbalance, it takes one message per connection and serves it
    only with the peer's credentials attached, of the uid it expects
    (root in production, this test's user here).
    """

    def __init__(self, root, pid=700, banned=(), answer=None):
        super().__init__()
        self.root, self.pid = root, pid
        self.banned = list(banned)
        self.answer = answer
        self.commands = []

    def _setUp(self):
        files.process(self.root, self.pid, 'irqbalance')
        path = os.path.join(self.root, 'run/irqbalance',
                            f'irqbalance{self.pid}.sock')
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.listener.listen(4)
        # accept() wakes up now and then to see whether to stop.
        self.listener.settimeout(0.05)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        self.addCleanup(self._stop)

    def _stop(self):
        self.stopped.set()
        self.thread.join(5)
        self.listener.close()

    def _serve(self):
        while not self.stopped.is_set():
            try:
                sock, _ = self.listener.accept()
            except socket.timeout:
                continue
            sock.settimeout(5)
            with sock:
                self._handle(sock)

    def _handle(self, sock):
        data, ancillary, _, _ = sock.recvmsg(
            16384, socket.CMSG_SPACE(CREDENTIALS))
        uids = [struct.unpack('3i', payload[:CREDENTIALS])[1]
                for level, kind, payload in ancillary
                if (level, kind) == (socket.SOL_SOCKET,
                                     socket.SCM_CREDENTIALS)]
        if uids != [os.getuid()]:
            return  # "Permission denied for user to connect to socket."
        command = data.decode()
        self.commands.append(command)
        if command.startswith('setup'):
            sock.sendall((self.answer or self._setup()).encode())
        elif command.startswith('settings ban irqs '):
            words = command[len('settings ban irqs '):].split()
            self.banned = ([] if words[:1] == ['NONE']
                           else [int(w) for w in words])

    def _setup(self):
        return 'SLEEP 10 ' + ''.join(
            f'IRQ {irq} LOAD 0 DIFF 0 CLASS 5 ' for irq in self.banned) + \
            'BANNED 00000000'


class HostTree(test_base.TestCase):
    """A fixture host: ens1f0 raising 120 and 121, CPUs 0-7 online."""

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.MonkeyPatch('agent.privsep.irqs.ROOT',
                                             self.root))
        files.write(self.root, 'sys/devices/system/cpu/online', '0-7\n')
        files.pci_nic(self.root, NIC, vectors=(120, 121))
        # A disk's function: vectors, but no network interface.
        files.write(self.root, f'{files.PCI_ROOT}/0000:5e:00.0/msi_irqs/200',
                    'msix\n')
        files.irq(self.root, 120, '0-7', '3')
        files.irq(self.root, 200, '0-7')
        privsep.steering.set_client_mode(False)
        self.addCleanup(privsep.steering.set_client_mode, True)
        privsep.forget_checks()
        self.addCleanup(privsep.forget_checks)


class ArgumentsTest(HostTree):

    def test_only_an_interfaces_own_vectors(self):
        self.assertEqual(120, irqs.nic_irq(NIC, 120))
        self.assertRaises(PermissionError, irqs.nic_irq, NIC, 200)
        self.assertRaises(PermissionError, irqs.nic_irq, 'nvme0', 200)
        for name in ('../../nvme0', 'a/b', '', '.', '..', 'x' * 16, b'ens',
                     None, ['ens1f0']):
            self.assertRaises(ValueError, irqs.nic_irq, name, 120)
        for irq in (0, -1, True, '120', 120.0, 1 << 30):
            self.assertRaises((TypeError, ValueError), irqs.nic_irq, NIC,
                              irq)

    def test_only_online_cpus(self):
        self.assertEqual([1, 4], irqs.cpu_list([4, 1, 4]))
        for cpus in ([], (), None, '0-3', [8], [True], ['1'], [-1], {1}):
            self.assertRaises((TypeError, ValueError), irqs.cpu_list, cpus)

    def test_the_entry_point_refuses_before_writing(self):
        for args in ((NIC, 200, [1], True), (NIC, 120, [9], True),
                     (NIC, 120, [1], 'yes'), ('nvme0', 200, [1], True)):
            self.assertRaises((PermissionError, TypeError, ValueError),
                              irqs.steer, *args)
        self.assertEqual('0-7', files.read_affinity(self.root, 120))
        self.assertEqual('0-7', files.read_affinity(self.root, 200))


class SteerTest(HostTree):

    def test_without_irqbalance_written_and_read_back(self):
        self.assertEqual(([2, 3], [3], None),
                         irqs.steer(NIC, 120, [3, 2], True))
        self.assertEqual('2,3', files.read_affinity(self.root, 120))

    def test_a_vector_gone_is_not_made(self):
        os.makedirs(os.path.join(self.root, 'proc/irq/121'))
        self.assertRaises(FileNotFoundError, irqs.steer, NIC, 121, [1], True)
        self.assertFalse(os.path.exists(os.path.join(
            self.root, 'proc/irq/121/smp_affinity_list')))

    def test_banned_in_irqbalance_before_the_write_and_released_after(self):
        fake = self.useFixture(FakeIrqbalance(self.root, banned=[33]))
        self.assertFalse(irqs.steer(NIC, 120, [4], True)[2])
        self.assertEqual([33, 120], fake.banned)
        self.assertEqual(['setup', 'settings ban irqs 33 120'],
                         fake.commands)
        # Banned already: only asked.
        self.assertTrue(irqs.steer(NIC, 120, [5], True)[2])
        self.assertEqual('setup', fake.commands[-1])
        irqs.steer(NIC, 120, [0, 1, 2, 3, 4, 5, 6, 7], False)
        self.assertEqual([33], fake.banned)
        self.assertEqual('0-7', files.read_affinity(self.root, 120)
                         .replace('0,1,2,3,4,5,6,7', '0-7'))

    def test_banned_before_the_agent_it_may_stay_banned(self):
        fake = self.useFixture(FakeIrqbalance(self.root, banned=[120]))
        self.assertTrue(irqs.steer(NIC, 120, [4], True)[2])
        self.assertEqual(['setup'], fake.commands)
        # Given back with irqbalance's list left alone: not even asked.
        self.assertEqual(([1], [3], None), irqs.steer(NIC, 120, [1], None))
        self.assertEqual([120], fake.banned)
        self.assertEqual(['setup'], fake.commands)

    def test_the_last_release_empties_the_list(self):
        fake = self.useFixture(FakeIrqbalance(self.root, banned=[120]))
        irqs.steer(NIC, 120, [1], False)
        self.assertEqual([], fake.banned)
        self.assertEqual('settings ban irqs NONE', fake.commands[-1])

    def test_an_irqbalance_without_a_socket_stops_everything(self):
        files.process(self.root, 701, 'irqbalance')
        self.assertRaises(irqs.BalancerUnreachable, irqs.steer, NIC, 120,
                          [1], True)
        self.assertEqual('0-7', files.read_affinity(self.root, 120))
        self.assertIn('without a socket', irqs.balancer_state())

    def test_an_irqbalance_that_will_not_answer_stops_everything(self):
        self.useFixture(FakeIrqbalance(self.root, answer='Permission'))
        self.assertRaises(irqs.BalancerUnreachable, irqs.steer, NIC, 120,
                          [1], True)
        self.assertEqual('0-7', files.read_affinity(self.root, 120))
        self.assertIn('does not answer', irqs.balancer_state())

    def test_balancer_state(self):
        self.assertIsNone(irqs.balancer_state())
        self.useFixture(FakeIrqbalance(self.root))
        self.assertIsNone(irqs.balancer_state())


# A guest whose one extra thread names itself as a vhost worker of it
# (vhost_task, Linux 6.4+), prints its thread id and waits.
_CHILD = '''
import ctypes, os, sys, threading
def worker():
    ctypes.CDLL(None).prctl(15, f"vhost-{os.getpid()}".encode(), 0, 0, 0)
    print(threading.get_native_id(), flush=True)
    sys.stdin.read()
thread = threading.Thread(target=worker)
thread.start()
thread.join()
'''


class VhostChild(fixtures.Fixture):

    def __init__(self, guests):
        super().__init__()
        self.guests = guests
        self.domain = f'instance-vhost-{os.getpid()}-{id(self):x}'

    def _setUp(self):
        self.process = subprocess.Popen(
            [sys.executable, '-c', _CHILD, '-name', f'guest={self.domain}'],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(self._stop)
        self.worker = int(self.process.stdout.readline())
        self.pid = self.process.pid
        self.addCleanup(os.unlink, self.guests.write(self.domain, self.pid))

    def _stop(self):
        self.process.stdin.close()
        self.process.wait(10)
        self.process.stdout.close()


class PinThreadsTest(HostTree):

    def setUp(self):
        super().setUp()
        self.guests = self.useFixture(memchild.GuestPidDir())
        self.child = self.useFixture(VhostChild(self.guests))
        cpus = sorted(os.sched_getaffinity(0))
        files.write(self.root, 'sys/devices/system/cpu/online',
                    ','.join(map(str, cpus)) + '\n')
        self.cpu = cpus[-1]

    def test_a_worker_of_the_guest_is_pinned(self):
        self.assertEqual({self.child.worker: [self.cpu]}, irqs.pin_threads(
            self.child.pid, [self.child.worker], [self.cpu]))
        self.assertEqual({self.cpu},
                         os.sched_getaffinity(self.child.worker))

    def test_any_other_thread_is_refused(self):
        before = os.sched_getaffinity(self.child.worker)
        for tid in (self.child.pid, os.getpid()):
            self.assertRaises(irqs.NotAWorker, irqs.pin_threads,
                              self.child.pid, [self.child.worker, tid],
                              [self.cpu])
        # Nothing written, not even to the worker named with them.
        self.assertEqual(before, os.sched_getaffinity(self.child.worker))

    def test_a_process_that_is_no_guest_is_refused(self):
        self.assertRaises((trust.NotAGuest, PermissionError),
                          irqs.pin_threads, os.getpid(), [os.getpid()],
                          [self.cpu])


class FakeGuest:
    """A checked guest with no thread of its own by that tid."""

    pid = 4242

    def read(self, name):
        raise ProcessLookupError(name)


class KernelWorkerTest(HostTree):

    def test_a_kernel_thread_of_the_name_child_of_kthreadd(self):
        files.thread(self.root, 900, 'vhost-4242', '0-7', ppid=2)
        files.thread(self.root, 901, 'vhost-4242', '0-7', ppid=1)
        files.thread(self.root, 902, 'vhost-4243', '0-7', ppid=2)
        files.thread(self.root, 903, 'vhost-4242', '0-7', tgid=900, ppid=2)
        self.assertTrue(irqs.is_worker(FakeGuest(), 900))
        for tid in (901, 902, 903, 904):
            self.assertFalse(irqs.is_worker(FakeGuest(), tid), tid)
