"""Discovery on fixture sysfs trees and on libvirt's real capabilities."""

import os

import fixtures
import libvirt

from nova_numa_policy.contracts import scope
from nova_numa_policy.contracts import topology

from agent.sensors import discovery
from agent.sensors import sysfs
from tests import base as test_base
from tests import fixtures as host_fixtures


class NicNodeTest(test_base.TestCase):
    """Where a NIC's node is written: its device, a parent, its ports."""

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        host_fixtures.numa_host(self.root, 2, 2)

    def test_a_virtio_nic_takes_the_node_of_its_pci_function(self):
        host_fixtures.write_virtio_nic(self.root, 'eth0', 1)
        self.assertEqual(1, sysfs.nic_numa_node(self.root, 'eth0'))

    def test_bridges_bonds_and_vlans_take_their_ports_node(self):
        host_fixtures.write_virtio_nic(self.root, 'eth0', 1)
        host_fixtures.write_nic(self.root, 'eth1', 1, '2-3')
        host_fixtures.write_upper(self.root, 'bond0', ['eth0', 'eth1'])
        host_fixtures.write_upper(self.root, 'vlan10', ['bond0'])
        host_fixtures.write_upper(self.root, 'br-ex', ['vlan10'])
        self.assertEqual(1, sysfs.nic_numa_node(self.root, 'br-ex'))
        nics = sysfs.read_nics(self.root, {}, {'br-ex': 'br-ex'})
        self.assertEqual([('br-ex', 1)],
                         [(n.name, n.numa_node) for n in nics])

    def test_ports_on_different_nodes_say_nothing(self):
        host_fixtures.write_nic(self.root, 'eth0', 0, '0-1')
        host_fixtures.write_nic(self.root, 'eth1', 1, '2-3')
        host_fixtures.write_upper(self.root, 'bond0', ['eth0', 'eth1'])
        self.assertIsNone(sysfs.nic_numa_node(self.root, 'bond0'))

    def test_a_port_of_unknown_node_does_not_hide_the_known_one(self):
        host_fixtures.write_nic(self.root, 'eth0', -1, '')
        host_fixtures.write_nic(self.root, 'eth1', 1, '2-3')
        host_fixtures.write_upper(self.root, 'bond0', ['eth0', 'eth1'])
        self.assertEqual(1, sysfs.nic_numa_node(self.root, 'bond0'))

    def test_a_link_cycle_ends(self):
        host_fixtures.write_upper(self.root, 'a', ['b'])
        host_fixtures.write_upper(self.root, 'b', ['a'])
        self.assertIsNone(sysfs.nic_numa_node(self.root, 'a'))


class SysfsTreeTest(test_base.TestCase):

    def root(self, layout):
        return layout(self.useFixture(fixtures.TempDir()).path)

    def test_two_sockets_with_the_nic_on_node_1(self):
        root = self.root(host_fixtures.two_sockets_nic_on_node1)
        topo = discovery.discover(
            '<capabilities/>', root, {'physnet1': 'ens2f0'},
            {'br-ex': 'eno1', 'br-gone': 'ens9'})
        self.assertEqual([0, 1], [n.id for n in topo.nodes])
        self.assertEqual((4, 5, 6, 7), topo.nodes[1].cpus)
        self.assertEqual((21, 10), topo.nodes[1].distances)
        self.assertEqual(8192, topo.nodes[0].memory_total_mb)
        nics = {n.name: n for n in topo.nics}
        self.assertEqual(['eno1', 'ens2f0'], sorted(nics))  # ens9 absent
        self.assertEqual((1, 25000, 'physnet1', None),
                         (nics['ens2f0'].numa_node, nics['ens2f0'].speed_mbps,
                          nics['ens2f0'].physnet, nics['ens2f0'].bridge))
        # numa_node is -1; its local CPUs all sit on node 0.
        self.assertEqual((0, 'br-ex'), (nics['eno1'].numa_node,
                                        nics['eno1'].bridge))
        self.assertEqual({0: 6144, 1: 2048}, sysfs.node_free_memory_mb(root))

    def test_four_nodes(self):
        root = self.root(host_fixtures.four_nodes)
        topo = discovery.discover('<capabilities/>', root,
                                  {'physnet2': 'ens3f0'}, {})
        self.assertEqual(4, len(topo.nodes))
        self.assertEqual((22, 16, 10, 16), topo.nodes[2].distances)
        self.assertEqual(2, topo.nics[0].numa_node)
        self.assertEqual(100000, topo.nics[0].speed_mbps)

    def test_a_host_without_numa(self):
        root = self.root(host_fixtures.no_numa)
        topo = discovery.discover('<capabilities/>', root,
                                  {'physnet1': 'eth0'}, {})
        self.assertEqual((), topo.nodes)
        self.assertIsNone(topo.nics[0].numa_node)
        self.assertEqual({0: 8192}, sysfs.node_free_memory_mb(root))

    def test_nova_physnet_numa_nodes_fill_unnamed_uplinks(self):
        root = self.root(host_fixtures.two_sockets_nic_on_node1)
        topo = discovery.discover(
            '<capabilities/>', root, {'physnet1': 'ens2f0'}, {},
            {'physnet1': [0], 'physnet2': [1], 'physnet3': [0, 1]})
        by_physnet = {n.physnet: n for n in topo.nics}
        # The configured interface wins over nova's option for physnet1;
        # physnet3 spans both nodes and says nothing about locality.
        self.assertEqual(1, by_physnet['physnet1'].numa_node)
        self.assertEqual(1, by_physnet['physnet2'].numa_node)
        self.assertNotIn('physnet3', by_physnet)

    def test_cpulist(self):
        self.assertEqual(frozenset({0, 1, 2, 5, 8, 9}),
                         sysfs.parse_cpulist('0-2,5,8-9\n'))
        self.assertEqual(frozenset(), sysfs.parse_cpulist(''))


class CapabilitiesTest(test_base.TestCase):

    def test_nodes_from_the_test_driver_capabilities(self):
        conn = libvirt.open('test:///default')
        self.addCleanup(conn.close)
        nodes = topology.nodes_from_capabilities(conn.getCapabilities())
        self.assertEqual([0, 1], [n.id for n in nodes])
        self.assertEqual(tuple(range(8, 16)), nodes[1].cpus)
        self.assertEqual((2048, 4096), tuple(n.memory_total_mb
                                             for n in nodes))
        # No <distances> in the test driver: SLIT defaults.
        self.assertEqual((10, 20), nodes[0].distances)

    def test_distances_from_capabilities(self):
        caps = """<capabilities><host><topology><cells num='2'>
          <cell id='0'><memory unit='KiB'>1048576</memory>
            <distances><sibling id='0' value='10'/>
                       <sibling id='1' value='32'/></distances>
            <cpus num='1'><cpu id='0'/></cpus></cell>
          <cell id='1'><memory unit='KiB'>1048576</memory>
            <distances><sibling id='0' value='32'/>
                       <sibling id='1' value='10'/></distances>
            <cpus num='1'><cpu id='1'/></cpus></cell>
        </cells></topology></host></capabilities>"""
        nodes = topology.nodes_from_capabilities(caps)
        self.assertEqual([(10, 32), (32, 10)], [n.distances for n in nodes])


def write_cpu_lines(root, busy_idle):
    """/proc/stat as the kernel writes it: a line per online CPU.

    ``busy_idle``: {cpu: (user jiffies, idle jiffies)}; the other
    fields are zero, iowait among them.
    """
    total_busy = sum(busy for busy, _ in busy_idle.values())
    total_idle = sum(idle for _, idle in busy_idle.values())
    lines = [f'cpu  {total_busy} 0 0 {total_idle} 0 0 0 0 0 0']
    lines += [f'cpu{cpu} {busy} 0 0 {idle} 0 0 0 0 0 0'
              for cpu, (busy, idle) in sorted(busy_idle.items())]
    host_fixtures.write_file(root, 'proc/stat', '\n'.join(lines) + '\n')


class LoadTest(test_base.TestCase):

    def sampled_host(self):
        """(root, topology, first CPU times) of a host of two 2-CPU nodes."""
        root = self.useFixture(fixtures.TempDir()).path
        host_fixtures.numa_host(root, 2, 2)
        topo = discovery.discover('<capabilities/>', root, {}, {})
        return root, topo, discovery.read_cpu_times(root)

    def test_node_loads_from_two_proc_stat_samples(self):
        root, topo, before = self.sampled_host()
        host_fixtures.write_proc(root, 4, busy={0: 500, 1: 500, 2: 100},
                                 elapsed=2000)
        after = discovery.read_cpu_times(root)
        loads = discovery.node_loads(before, after, topo.nodes)
        self.assertEqual({0: 0.5, 1: 0.05}, loads)

    def test_floating_loads_are_measured_on_the_floating_cpus_only(self):
        root, topo, before = self.sampled_host()
        # CPU 0 shared and busy, CPU 1 dedicated and idle; node 1's
        # pinned guests keep its CPUs busy.
        host_fixtures.write_proc(root, 4, busy={0: 800, 2: 1000, 3: 1000},
                                 elapsed=2000)
        after = discovery.read_cpu_times(root)
        floating = scope.CpuPartition(
            shared=frozenset({0}),
            dedicated=frozenset({1, 2, 3})).floating_by_node(topo.nodes)
        self.assertEqual({0: frozenset({0}), 1: frozenset()}, floating)
        self.assertEqual({0: 0.8, 1: None},
                         discovery.floating_loads(before, after, floating))
        self.assertEqual({0: 0.4, 1: 1.0},
                         discovery.node_loads(before, after, topo.nodes))
        usage = discovery.usage(
            topo.nodes, discovery.node_loads(before, after, topo.nodes), {},
            floating, discovery.floating_loads(before, after, floating))
        self.assertEqual(
            [(0.4, frozenset({0}), 0.8), (1.0, frozenset(), None)],
            [(u.cpu_load, u.floating_cpus, u.floating_load) for u in usage])

    def test_without_a_partition_usage_does_not_tell_floating_cpus(self):
        root = self.useFixture(fixtures.TempDir()).path
        host_fixtures.numa_host(root, 2, 2)
        topo = discovery.discover('<capabilities/>', root, {}, {})
        usage = discovery.usage(topo.nodes, {0: 0.5}, {})
        self.assertEqual([(0.5, None, None), (0.0, None, None)],
                         [(u.cpu_load, u.floating_cpus, u.floating_load)
                          for u in usage])

    def test_an_offline_cpu_leaves_the_others_their_ids(self):
        # /proc/stat has no line for an offline CPU; psutil's list is the
        # lines in order, so the ids come from sysfs's online list.
        root = self.useFixture(fixtures.TempDir()).path
        write_cpu_lines(root, {0: (300, 700), 2: (900, 100), 3: (0, 1000)})
        host_fixtures.write_file(root, 'sys/devices/system/cpu/online',
                                 '0,2-3\n')
        times = discovery.read_cpu_times(root)
        self.assertEqual([0, 2, 3], sorted(times))
        ticks = os.sysconf('SC_CLK_TCK')
        self.assertEqual((900 / ticks, 1000 / ticks), times[2])
        self.assertEqual((0.0, 1000 / ticks), times[3])

    def test_a_cpu_going_offline_between_the_reads_gives_no_sample(self):
        root = self.useFixture(fixtures.TempDir()).path
        write_cpu_lines(root, {0: (300, 700), 1: (900, 100)})
        host_fixtures.write_file(root, 'sys/devices/system/cpu/online',
                                 '0-2\n')
        self.assertEqual({}, discovery.read_cpu_times(root))

    def test_no_proc_stat_gives_no_sample(self):
        root = self.useFixture(fixtures.TempDir()).path
        host_fixtures.write_file(root, 'sys/devices/system/cpu/online',
                                 '0\n')
        self.assertEqual({}, discovery.read_cpu_times(root))

    def test_real_proc_stat_is_readable(self):
        times = discovery.read_cpu_times('/')
        self.assertIn(0, times)
        busy, total = times[0]
        self.assertLessEqual(busy, total)
