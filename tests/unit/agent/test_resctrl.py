"""Memory bandwidth from resctrl (agent.sensors.resctrl) and the backend on it.

The resctrl trees here follow the kernel's documented layout
(Documentation/arch/x86/resctrl.rst): no CPU this suite runs on has
bandwidth monitoring, and a virtual machine's CPU emulates none.
"""

import os

import fixtures

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import errors
from nova_numa_policy.contracts import locality

from agent.backend import bandwidth
from agent.backend import libvirt_backend
from agent.backend import settings
from agent.sensors import numafaults
from agent.sensors import resctrl
from agent.sensors import sysfs
from tests import base as test_base
from tests import fixtures as host_fixtures
from tests.unit.agent import base
from tests.unit.agent import test_numafaults
from tests.unit.agent import test_pagemove_backend as guest_files

UUID = '0b8f2a52-3c1d-4e5f-8a9b-0c1d2e3f4a5b'
PID = test_numafaults.PID


def write_counters(root, uuid, per_domain):
    """``per_domain``: {cache domain: (total bytes, local bytes)}."""
    data = os.path.join(root, resctrl.RESCTRL, 'mon_groups',
                        resctrl.group_name(uuid), 'mon_data')
    for domain, (total, local) in per_domain.items():
        guest_files.write(data, f'mon_L3_{domain:02d}/mbm_total_bytes',
                          f'{total}\n')
        guest_files.write(data, f'mon_L3_{domain:02d}/mbm_local_bytes',
                          f'{local}\n')


def write_home_guest(root):
    """HOME_FROM_NOVA's qemu: two vCPU threads, memory 3:1 on nodes 0, 1."""
    guest_files.write_qemu(root, 'instance-00000002', base.HOME_FROM_NOVA,
                           PID)
    test_numafaults.write_threads(root, PID, {
        PID + 1: ('CPU 0/KVM', {}), PID + 2: ('CPU 1/KVM', {})})
    guest_files.write(root, f'proc/{PID}/numa_maps',
                      '7f0000000000 default anon=1024 N0=768 N1=256\n')
    # The kernel does not balance.
    guest_files.write(root, numafaults.SYSCTL, '0\n')


class FakeMonitorGroups:
    """The monitor daemon, on a resctrl tree under ``root``."""

    def __init__(self, root):
        self.root = root
        self.joined = []
        self.left = []
        self.refusal = None

    def _group(self, uuid):
        return os.path.join(self.root, resctrl.RESCTRL, 'mon_groups',
                            resctrl.group_name(uuid))

    def join(self, pid, uuid, tids):
        self.joined.append((pid, uuid, sorted(tids)))
        if self.refusal:
            raise self.refusal
        guest_files.write(self._group(uuid), 'tasks',
                          ''.join(f'{t}\n' for t in sorted(tids)))
        return len(tids)

    def leave(self, uuid):
        self.left.append(uuid)
        path = self._group(uuid)
        for where, dirs, files in os.walk(path, topdown=False):
            for name in files:
                os.unlink(os.path.join(where, name))
            os.rmdir(where)
        return True


class TreeTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        host_fixtures.numa_host(self.root, 2, 4)
        self.topology = _topology(self.root)

    def test_not_mounted_and_not_counted_say_why(self):
        self.assertIn('not mounted', resctrl.missing(self.root))
        host_fixtures.write_resctrl(self.root, features=('llc_occupancy',))
        why = resctrl.missing(self.root)
        self.assertIn('mbm_local_bytes, mbm_total_bytes', why)
        host_fixtures.write_resctrl(self.root)
        self.assertIsNone(resctrl.missing(self.root))

    def test_one_l3_per_node(self):
        host_fixtures.write_l3(self.root, {c: c // 4 for c in range(8)})
        self.assertEqual(({0: 0, 1: 1}, None),
                         resctrl.domain_nodes(self.root, self.topology))

    def test_several_l3_per_node_add_up(self):
        # One L3 per core complex of two CPUs, as on AMD's.
        host_fixtures.write_l3(self.root, {c: c // 2 for c in range(8)})
        nodes, why = resctrl.domain_nodes(self.root, self.topology)
        self.assertEqual({0: 0, 1: 0, 2: 1, 3: 1}, nodes)
        write_counters(self.root, UUID, {0: (100, 60), 1: (50, 10),
                                         2: (7, 7), 3: (1, 0)})
        self.assertEqual({0: (150, 70), 1: (8, 7)},
                         resctrl.read_group(self.root, UUID, nodes))

    def test_an_l3_spanning_nodes_gives_no_bandwidth_per_node(self):
        host_fixtures.write_l3(self.root, {c: 0 for c in range(8)})
        nodes, why = resctrl.domain_nodes(self.root, self.topology)
        self.assertIsNone(nodes)
        self.assertIn('spans nodes [0, 1]', why)

    def test_an_unavailable_counter_makes_the_reading_unknown(self):
        write_counters(self.root, UUID, {0: (100, 60), 1: (50, 10)})
        guest_files.write(
            os.path.join(self.root, resctrl.RESCTRL, 'mon_groups',
                         resctrl.group_name(UUID), 'mon_data'),
            'mon_L3_01/mbm_local_bytes', 'Unavailable\n')
        self.assertIsNone(resctrl.read_group(self.root, UUID, {0: 0, 1: 1}))
        self.assertIsNone(resctrl.read_group(self.root, 'gone', {0: 0}))

    def test_bytes_moved_between_readings(self):
        self.assertEqual({0: (40, 30), 1: (5, 0)}, resctrl.moved(
            {0: (100, 60), 1: (50, 10)}, {0: (140, 90), 1: (55, 10)}))
        # A group made anew counts from zero: no difference to take.
        self.assertIsNone(resctrl.moved({0: (100, 60)}, {0: (10, 5)}))
        self.assertIsNone(resctrl.moved(None, {0: (10, 5)}))

    def test_groups_of_ours_are_found_by_name(self):
        host_fixtures.write_resctrl(self.root)
        groups = os.path.join(self.root, resctrl.RESCTRL, 'mon_groups')
        for name in (resctrl.group_name(UUID), 'numa-policy-junk',
                     'someone-elses'):
            os.makedirs(os.path.join(groups, name))
        self.assertEqual({UUID}, resctrl.our_groups(self.root))
        self.assertEqual(UUID, resctrl.uuid_of(resctrl.group_name(
            UUID.upper())))
        self.assertIsNone(resctrl.uuid_of(resctrl.group_name(UUID) + '\n'))


def _topology(root):
    return backend.HostTopology(nodes=sysfs.sysfs_topology(root), nics=())


class BackendBandwidthTest(base.TestDriverHostTest):
    """HOME_FROM_NOVA's qemu, both vCPUs on node 1, on a host with MBM."""

    def setUp(self):
        super().setUp()
        write_home_guest(self.root)
        host_fixtures.write_resctrl(self.root)
        host_fixtures.write_l3(self.root, {c: c // 4 for c in range(8)})
        self.groups = FakeMonitorGroups(self.root)
        self.clock = base.FakeClock()
        self.backend = libvirt_backend.LibvirtBackend(
            self.connection, paths=settings.HostPaths(root=self.root),
            timing=settings.Timing(sleep=lambda seconds: None,
                                   clock=self.clock),
            helpers=settings.Helpers(monitor_groups=self.groups))

    def instance(self, uuid=base.HOME_FROM_NOVA, after=5.0):
        """The guest as observed ``after`` seconds after the last look."""
        self.clock.now += after
        return [i for i in self.backend.observe().instances
                if i.uuid == uuid][0]

    def test_the_signal_is_bandwidth_where_the_kernel_does_not_balance(self):
        self.assertEqual(locality.SIGNAL_BANDWIDTH,
                         self.backend.locality_signal())
        self.assertIn(backend.CAP_ACCESS_COUNTERS,
                      self.backend.capabilities())
        self.assertIn(locality.SIGNAL_BANDWIDTH, self.backend.measurements())

    def test_bytes_per_node_become_accesses_and_penalties(self):
        first = self.instance()
        # The group is made and its first reading is the baseline.
        self.assertEqual([(PID, base.HOME_FROM_NOVA, [PID + 1, PID + 2])],
                         self.groups.joined)
        self.assertIsNone(first.accesses_per_node)
        write_counters(self.root, base.HOME_FROM_NOVA,
                       {0: (0, 0), 1: (0, 0)})
        self.assertIsNone(self.instance().accesses_per_node)
        # Node 1's vCPUs then move 64 kB, a quarter of it local.
        write_counters(self.root, base.HOME_FROM_NOVA,
                       {0: (0, 0), 1: (65536, 16384)})
        guest = self.instance()
        self.assertEqual(locality.SIGNAL_BANDWIDTH, guest.access_signal)
        self.assertEqual({0: 768, 1: 256}, guest.accesses_per_node)
        topology = self.backend.topology()
        expected = locality.remote_penalty(topology, 1, {0: 768, 1: 256})
        self.assertEqual((expected, expected), guest.vcpu_penalty)
        # Joined once: the threads are known to be in the group.
        self.assertEqual(1, len(self.groups.joined))

    def test_a_look_right_after_the_last_reads_no_bytes_anew(self):
        self.instance()
        write_counters(self.root, base.HOME_FROM_NOVA,
                       {0: (0, 0), 1: (0, 0)})
        self.instance()
        write_counters(self.root, base.HOME_FROM_NOVA,
                       {0: (0, 0), 1: (65536, 16384)})
        measured = self.instance().accesses_per_node
        # Bytes moved in the 50 ms since: not read as a period's.
        write_counters(self.root, base.HOME_FROM_NOVA,
                       {0: (0, 0), 1: (65600, 16400)})
        self.assertEqual(measured, self.instance(after=0.05)
                         .accesses_per_node)
        self.assertEqual({0: 768, 1: 256}, measured)

    def test_where_the_kernel_balances_its_faults_are_the_signal(self):
        self.instance()
        self.assertTrue(resctrl.our_groups(self.root))
        guest_files.write(self.root, numafaults.SYSCTL, '1\n')
        self.assertEqual(locality.SIGNAL_HINTING_FAULTS,
                         self.backend.locality_signal())
        self.instance()
        # Its monitoring id goes back to the CPU while unused.
        self.assertEqual([base.HOME_FROM_NOVA], self.groups.left)
        self.assertFalse(resctrl.our_groups(self.root))

    def test_off_unless_asked_for_and_the_reason_says_so(self):
        self.backend = libvirt_backend.LibvirtBackend(
            self.connection, paths=settings.HostPaths(root=self.root),
            timing=settings.Timing(sleep=lambda seconds: None))
        self.assertIsNone(self.backend.locality_signal())
        self.assertIn('bandwidth_monitoring', self.backend.bandwidth_missing())

    def test_a_refusal_is_not_asked_again_until_the_threads_change(self):
        self.groups.refusal = errors.NotEnforceable('ENOSPC')
        for _ in range(3):
            self.assertIsNone(self.instance().accesses_per_node)
        self.assertEqual(1, len(self.groups.joined))
        test_numafaults.write_threads(self.root, PID, {
            PID + 3: ('CPU 2/KVM', {})})
        self.backend.guests.threads.forget()
        self.instance()
        self.assertEqual(2, len(self.groups.joined))

    def test_without_its_daemon_the_host_has_no_bandwidth_signal(self):
        self.groups.refusal = bandwidth.MonitorUnavailable(
            'the monitoring daemon is unavailable: sudo: a password is '
            'required')
        self.assertIsNone(self.instance().accesses_per_node)
        self.assertIsNone(self.backend.locality_signal())
        self.assertIn('sudo: a password is required',
                      self.backend.bandwidth_missing())

    def test_groups_of_guests_gone_are_removed(self):
        stale = '99999999-9999-4999-8999-999999999999'
        os.makedirs(os.path.join(self.root, resctrl.RESCTRL, 'mon_groups',
                                 resctrl.group_name(stale)))
        self.instance()
        self.assertEqual([stale], self.groups.left)
        self.assertEqual({base.HOME_FROM_NOVA},
                         resctrl.our_groups(self.root))
