"""Hardware sampling: the host and the daemon (agent.privsep.hwsampling),
the backend's side (agent.backend.samples).

No CPU this suite runs on has AMD IBS: the PMU and the memory blocks are
sysfs trees of the kernel's layout, and the daemon's samples are given.
What the daemon accepts runs in this process (privsep's unit-test
convention) on real child processes made guests by pidfiles. The lab
host (tests/host/test_sampling.py) reads real samples off a real kernel
and runs the deployed daemon.
"""

import errno
import logging
import os

import fixtures

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality

from agent.backend import libvirt_backend
from agent.backend import samples
from agent.backend import settings
from agent import privsep
from agent.privsep import hwsampling
from agent.sensors import numafaults
from agent.sensors import sysfs
from tests import base as test_base
from tests import fixtures as host_fixtures
from tests.unit.agent import base
from tests.unit.agent import memchild
from tests.unit.agent import test_numafaults
from tests.unit.agent import test_pagemove_backend as guest_files
from tests.unit.agent import test_resctrl

UUID = '0b8f2a52-3c1d-4e5f-8a9b-0c1d2e3f4a5b'
OTHER = '1c9f3b63-4d2e-4f60-9bac-1d2e3f4a5b6c'
PID = test_numafaults.PID
PERIOD = 100000


class HostTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path

    def test_what_a_host_lacks_is_said(self):
        self.assertEqual(hwsampling.NO_PMU, hwsampling.missing(self.root))
        self.assertIn('Intel PEBS', hwsampling.NO_PMU)
        host_fixtures.write_ibs_op(self.root)
        self.assertEqual(hwsampling.NO_BLOCKS, hwsampling.missing(self.root))
        host_fixtures.write_memory_blocks(self.root, {0: [0], 1: [1]})
        self.assertIsNone(hwsampling.missing(self.root))

    def test_ops_are_counted_and_only_misses_sampled_where_it_can(self):
        host_fixtures.write_ibs_op(self.root, 11)
        older = hwsampling.sampling_attr(self.root, PERIOD)
        host_fixtures.write_ibs_op(self.root, 11, (
            ('cnt_ctl', 'config:19'), ('l3missonly', 'config:16')))
        zen4 = hwsampling.sampling_attr(self.root, PERIOD)
        type_, size, config, period, sample_type = (
            int.from_bytes(older[o:o + n], 'little')
            for o, n in ((0, 4), (4, 4), (8, 8), (16, 8), (24, 8)))
        self.assertEqual((11, 112, 1 << 19, PERIOD, hwsampling.SAMPLE_TYPE),
                         (type_, size, config, period, sample_type))
        self.assertEqual((1 << 19) | (1 << 16),
                         int.from_bytes(zen4[8:16], 'little'))


class FakeDaemon:
    """The sampling daemon's entry points, with samples given per tid."""

    def __init__(self):
        self.started = []
        self.stopped = 0
        self.drained = []
        self.samples = {}
        self.refused = {}
        self.failure = None
        self.totals = (0, 0)

    def start(self, period):
        if self.failure:
            raise self.failure
        self.started.append(period)
        return 8

    def drain(self, guests):
        self.drained.append(guests)
        counts, refused = [], []
        for pid, uuid, tids in guests:
            if uuid in self.refused:
                refused.append((uuid, self.refused[uuid]))
                continue
            counts.append((uuid, [(tid, node, n) for tid in tids
                                  for node, n in self.samples.get(
                                      tid, {}).items()]))
        self.samples = {}
        return counts, refused, self.totals

    def stop(self):
        self.stopped += 1


class GuestSamplesTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        host_fixtures.two_sockets_nic_on_node1(self.root)
        host_fixtures.write_ibs_op(self.root)
        host_fixtures.write_memory_blocks(self.root, {0: [0], 1: [1]})
        self.daemon = FakeDaemon()
        self.samples = samples.GuestSamples(self.root, PERIOD,
                                            self.daemon)
        self.topology = backend.HostTopology(
            nodes=sysfs.sysfs_topology(self.root))
        self.log = self.useFixture(fixtures.FakeLogger(level=logging.INFO))

    def test_samples_per_vcpu_become_accesses_and_penalties(self):
        self.daemon.samples = {11: {0: 3, 1: 1}, 12: {1: 4}, 99: {0: 50}}
        self.assertTrue(self.samples.collect({UUID: (5, {12: 1, 11: 0})}))
        self.assertEqual([PERIOD], self.daemon.started)
        self.assertEqual([[(5, UUID, [11, 12])]], self.daemon.drained)
        accesses, penalties = self.samples.measure(
            UUID, {11: 0, 12: 1}, self.topology, (0, 4))
        self.assertEqual({0: 3 * PERIOD, 1: 5 * PERIOD}, accesses)
        self.assertEqual(
            (locality.remote_penalty(self.topology, 0, {0: 3, 1: 1}),
             locality.remote_penalty(self.topology, 1, {1: 4})), penalties)
        # Started once; the next period drains again.
        self.samples.collect({UUID: (5, {11: 0})})
        self.assertEqual([PERIOD], self.daemon.started)
        self.assertEqual((None, None), self.samples.measure(
            UUID, {11: 0}, self.topology, (0,)))

    def test_a_refused_guest_is_said_once(self):
        self.daemon.refused = {UUID: 'process 5 is not guest ' + UUID}
        for _ in range(3):
            self.samples.collect({UUID: (5, {11: 0})})
        self.assertEqual(1, self.log.output.count('No hardware samples for'))
        self.assertEqual((None, None), self.samples.measure(
            UUID, {11: 0}, self.topology, (0,)))

    def test_what_the_host_lacks_is_read_once(self):
        self.assertIsNone(self.samples.missing())
        # Gone from sysfs now: the agent read the host when it started.
        os.remove(os.path.join(self.root, 'sys/bus/event_source/devices/'
                               'ibs_op/type'))
        self.assertIsNone(self.samples.missing())
        self.assertEqual(hwsampling.NO_PMU, hwsampling.missing(self.root))

    def test_a_daemon_that_cannot_sample_breaks_it_until_restart(self):
        self.daemon.failure = OSError(errno.EACCES, 'Permission denied')
        self.assertFalse(self.samples.collect({UUID: (5, {11: 0})}))
        why = self.samples.missing()
        self.assertIn('Permission denied', why)
        self.assertIn('restart the agent', why)

    def test_buffers_that_overflow_are_said_once(self):
        self.daemon.totals = (950, 50)
        self.samples.collect({})
        self.assertNotIn('dropped', self.log.output)
        self.daemon.totals = (500, 500)
        for _ in range(3):
            self.samples.collect({})
        self.assertEqual(1, self.log.output.count(
            'The kernel dropped 500 of 1000 samples'))
        self.assertIn('hardware_sample_period', self.log.output)

    def test_stopped_while_not_the_signal(self):
        self.samples.idle()
        self.assertEqual(0, self.daemon.stopped)
        self.samples.collect({})
        self.samples.idle()
        self.samples.idle()
        self.assertEqual(1, self.daemon.stopped)
        self.samples.collect({})
        self.assertEqual([PERIOD, PERIOD], self.daemon.started)


class FakeHost:
    """The daemon's open events: given counts per thread and node."""

    def __init__(self, counts):
        self._counts = counts
        self.rings = [object()]

    def counts(self):
        counts, self._counts = self._counts, {}
        return counts, (40, 3)


class InProcessSampler(fixtures.Fixture):
    """The sampler's entry points in this process, its guests real."""

    def _setUp(self):
        privsep.sampler.set_client_mode(False)
        self.addCleanup(privsep.sampler.set_client_mode, True)
        self.guests = self.useFixture(memchild.GuestPidDir())
        # This suite runs as root; the daemon's own account is the lab's.
        self.useFixture(fixtures.MonkeyPatch(
            'agent.privsep.check_not_root', lambda section=None: None))
        self.useFixture(fixtures.MonkeyPatch(
            'agent.privsep.hwsampling._host', None))

    def child(self, uuid=UUID):
        return self.useFixture(memchild.MemoryChild(
            4096, guests=self.guests, uuid=uuid))

    def sampling(self, counts):
        hwsampling._host = (PERIOD, FakeHost(counts))


class DaemonTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.sampler = self.useFixture(InProcessSampler())

    def test_a_guest_gets_its_own_threads_samples_only(self):
        child = self.sampler.child()
        self.sampler.sampling({child.pid: {1: 3}, os.getpid(): {0: 9}})
        counts, refused, lost = hwsampling.drain(
            [(child.pid, UUID, [child.pid, os.getpid()])])
        self.assertEqual([(UUID, [(child.pid, 1, 3)])], counts)
        self.assertEqual(([], [40, 3]), (refused, list(lost)))

    def test_a_process_that_is_not_the_guest_is_refused(self):
        child = self.sampler.child(uuid=OTHER)
        other = self.useFixture(memchild.MemoryChild(4096))
        self.sampler.sampling({child.pid: {1: 3}, other.pid: {0: 2}})
        counts, refused, _ = hwsampling.drain(
            [(child.pid, UUID, [child.pid]), (other.pid, UUID, [other.pid])])
        self.assertEqual([], counts)
        self.assertEqual([UUID, UUID], [uuid for uuid, _ in refused])
        self.assertIn('is not guest', refused[0][1])
        self.assertIn('not the QEMU process', refused[1][1])

    def test_malformed_requests_are_refused_before_anything_is_read(self):
        child = self.sampler.child()
        self.sampler.sampling({})
        for guests in ([(child.pid, '../../etc', [child.pid])],
                       [(True, UUID, [child.pid])],
                       [(child.pid, UUID, [])],
                       [(child.pid, UUID)],
                       'a guest',
                       [(child.pid, UUID, [child.pid])]
                       * (hwsampling.MAX_GUESTS + 1)):
            self.assertRaises((TypeError, ValueError), hwsampling.drain,
                              guests)

    def test_nothing_to_drain_before_sampling_starts(self):
        child = self.sampler.child()
        exc = self.assertRaises(OSError, hwsampling.drain,
                                [(child.pid, UUID, [child.pid])])
        self.assertEqual(errno.ENODATA, exc.errno)

    def test_a_host_without_ibs_starts_nothing(self):
        root = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.MonkeyPatch(
            'agent.privsep.hwsampling.ROOT', root))
        exc = self.assertRaises(OSError, hwsampling.start, PERIOD)
        self.assertEqual(errno.ENODEV, exc.errno)
        self.assertIn('AMD IBS op', str(exc))
        self.assertRaises(ValueError, hwsampling.start, 16)
        self.assertRaises(TypeError, hwsampling.start, '100000')
        self.assertIsNone(hwsampling._host)


class BackendSamplingTest(base.TestDriverHostTest):
    """HOME_FROM_NOVA's qemu on a host with IBS, balancing off."""

    def setUp(self):
        super().setUp()
        test_resctrl.write_home_guest(self.root)
        host_fixtures.write_ibs_op(self.root)
        host_fixtures.write_memory_blocks(self.root, {0: [0], 1: [1]})
        self.daemon = FakeDaemon()
        self.log = self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        self.backend = self.sampling_backend()

    def sampling_backend(self, **helpers):
        self.clock = base.FakeClock()
        return libvirt_backend.LibvirtBackend(
            self.connection, paths=settings.HostPaths(root=self.root),
            timing=settings.Timing(sleep=lambda seconds: None,
                                   clock=self.clock),
            helpers=settings.Helpers(
                guest_samples=samples.GuestSamples(self.root, PERIOD,
                                                   self.daemon),
                **helpers))

    def instance(self, uuid=base.HOME_FROM_NOVA, after=5.0):
        """The guest as observed ``after`` seconds after the last look."""
        self.clock.now += after
        return [i for i in self.backend.observe().instances
                if i.uuid == uuid][0]

    def test_the_signal_where_the_kernel_does_not_balance(self):
        self.assertEqual(locality.SIGNAL_SAMPLES,
                         self.backend.locality_signal())
        self.assertIn(backend.CAP_ACCESS_COUNTERS,
                      self.backend.capabilities())
        self.assertIn(locality.SIGNAL_SAMPLES, self.backend.measurements())

    def test_a_guests_samples_from_its_second_period_on(self):
        # Its threads are listed while it is first observed.
        self.assertIsNone(self.instance().accesses_per_node)
        self.assertEqual([[]], self.daemon.drained)
        self.daemon.samples = {PID + 1: {0: 2, 1: 6}, PID + 2: {1: 8}}
        guest = self.instance()
        self.assertEqual([(PID, base.HOME_FROM_NOVA, [PID + 1, PID + 2])],
                         self.daemon.drained[-1])
        self.assertEqual(locality.SIGNAL_SAMPLES, guest.access_signal)
        self.assertEqual({0: 2 * PERIOD, 1: 14 * PERIOD},
                         guest.accesses_per_node)
        self.assertEqual(2, len(guest.vcpu_penalty))

    def test_a_look_right_after_the_last_keeps_its_samples(self):
        self.instance()
        self.daemon.samples = {PID + 1: {1: 6}}
        measured = self.instance().accesses_per_node
        # The observation after an action, for the report: no drain.
        self.assertEqual(measured, self.instance(after=0.05)
                         .accesses_per_node)
        self.assertEqual(2, len(self.daemon.drained))
        self.assertEqual({1: 6 * PERIOD}, measured)

    def test_before_bandwidth_and_after_the_kernels_faults(self):
        host_fixtures.write_resctrl(self.root)
        host_fixtures.write_l3(self.root, {c: c // 4 for c in range(8)})
        self.backend = self.sampling_backend(monitor_groups=object())
        self.assertEqual(locality.SIGNAL_SAMPLES,
                         self.backend.locality_signal())
        self.instance()
        guest_files.write(self.root, numafaults.SYSCTL, '1\n')
        self.assertEqual(locality.SIGNAL_HINTING_FAULTS,
                         self.backend.locality_signal())
        self.instance()
        # Its events stop while the kernel's faults are the signal.
        self.assertEqual(1, self.daemon.stopped)

    def test_neither_sampling_nor_bandwidth_says_both_reasons(self):
        self.backend = libvirt_backend.LibvirtBackend(
            self.connection, paths=settings.HostPaths(root=self.root),
            timing=settings.Timing(sleep=lambda seconds: None))
        self.assertIsNone(self.backend.locality_signal())
        self.assertIn('hardware sampling: hardware sampling is off '
                      '([numa_policy_agent] hardware_sampling); memory '
                      'bandwidth: bandwidth monitoring is off',
                      self.log.output)

    def test_a_daemon_that_fails_leaves_the_host_without_the_signal(self):
        self.daemon.failure = OSError(errno.EACCES, 'Permission denied')
        self.assertIsNone(self.instance().accesses_per_node)
        self.assertIsNone(self.backend.locality_signal())
        self.assertIn('Permission denied', self.backend.samples_missing())
        self.assertIn('No locality signal', self.log.output)
