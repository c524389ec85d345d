"""One source of NIC locality: the agent's discovery, handed to the driver.

The agent finds the uplinks (the operator's interfaces, nova's SR-IOV
device specs, nova's physnet NUMA nodes) and writes them where the
driver extension reads them at boot; the scheduler sees the same list in
the agent's report.
"""

import json
import logging
import os

import fixtures
from oslo_config import cfg

from nova_numa_policy.conf import policy as policy_conf
from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import topology
from nova_numa_policy.decisions import enforcement
from nova_numa_policy.virt import driver

from agent.sensors import discovery
from agent.sensors import ovs
from agent.service import handoff
from tests import base as test_base
from tests import fixtures as host_fixtures
from tests import report_factory
from tests import topology_factory

NIC = backend.NicInfo('ens2f0', 1, 25000, 'physnet1', None)


class UplinksTextTest(test_base.TestCase):

    def test_what_is_written_is_read(self):
        nics = (NIC, backend.NicInfo('physnet2', 0, physnet='physnet2'),
                backend.NicInfo('br-ex', None, bridge='br-ex'))
        self.assertEqual(nics, topology.parse_uplinks(
            topology.render_uplinks(nics)))

    def test_a_damaged_file_is_refused_whole(self):
        good = json.loads(topology.render_uplinks([NIC]))[0]
        for damaged in ('', '{}', '[1]', json.dumps([{**good, 'x': 1}]),
                        json.dumps([{**good, 'numa_node': '1'}]),
                        json.dumps([{**good, 'numa_node': True}]),
                        json.dumps([{**good, 'name': None}])):
            self.assertRaises(ValueError, topology.parse_uplinks, damaged)


class SriovDeviceSpecTest(test_base.TestCase):

    def test_physical_functions_with_a_physnet(self):
        specs = [
            '{"devname": "ens5f0", "physical_network": "physnet2"}',
            '[{"address": "0000:81:00.1", "physical_network": "physnet3"},'
            ' {"vendor_id": "8086", "product_id": "154d"}]',
            # A pattern names no one function; bad JSON names nothing.
            '{"address": "0000:82:*.*", "physical_network": "physnet4"}',
            'not json',
            '{"devname": "ens6f0"}',
        ]
        self.assertEqual([('physnet2', 'ens5f0'),
                          ('physnet3', '0000:81:00.1')],
                         discovery.sriov_uplinks(specs))

    def test_discovered_by_name_or_address_the_operator_winning(self):
        root = self.useFixture(fixtures.TempDir()).path
        host_fixtures.two_sockets_nic_on_node1(root)
        host_fixtures.write_nic(root, 'ens5f0', 0, '0-3')
        host_fixtures.write_nic(root, 'ens5f1', 1, '4-7')
        os.makedirs(os.path.join(root, 'sys/bus/pci/devices/0000:81:00.1/'
                                       'net/ens5f1'))
        nics = discovery.discover(
            '<capabilities/>', root, {'physnet1': 'ens2f0'}, {},
            found=[('physnet2', 'ens5f0'), ('physnet3', '0000:81:00.1'),
                   ('physnet1', 'ens5f0')]).nics
        self.assertEqual({('ens2f0', 'physnet1', 1), ('ens5f0', 'physnet2', 0),
                          ('ens5f1', 'physnet3', 1)},
                         {(n.name, n.physnet, n.numa_node) for n in nics})


class OvsMappingsTest(test_base.TestCase):

    def test_no_socket_starts_no_vsctl_and_says_so(self):
        started = []
        log = self.useFixture(fixtures.FakeLogger())
        reader = ovs.OvsdbUplinks('unix:/nonexistent/db.sock',
                                  run=lambda *a, **k: started.append(a),
                                  exists=lambda path: False)
        self.assertEqual([], reader.uplinks())
        self.assertEqual([], started)
        self.assertIn('no OVSDB socket at /nonexistent/db.sock', log.output)

    def test_a_tcp_remote_is_asked(self):
        started = []

        def run(args, **kwargs):
            started.append(args)
            raise OSError('connection refused')

        reader = ovs.OvsdbUplinks('tcp:127.0.0.1:6640', run=run,
                                  exists=lambda path: False)
        self.assertEqual([], reader.uplinks())
        self.assertEqual(1, len(started))

    def test_as_ovsdb_and_neutron_write_them(self):
        self.assertEqual({'physnet1': 'br-ex', 'physnet2': 'br-vlan'},
                         ovs.parse_mappings(
                             '"physnet1:br-ex, physnet2:br-vlan"\n'))
        self.assertEqual({}, ovs.parse_mappings(''))
        self.assertEqual({}, ovs.parse_mappings('physnet1'))


class HandOverTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.dir, 'uplinks.json')
        self.conf = cfg.ConfigOpts()
        policy_conf.register_opts(self.conf)
        self.conf.register_opt(cfg.ListOpt('physnets', default=[]),
                               group='neutron')
        self.conf([])
        self.conf.set_override('uplinks_file', self.path,
                               group='numa_policy')
        self.addCleanup(self.conf.clear_override, 'uplinks_file',
                        group='numa_policy')
        self.log = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))

    def test_each_discovery_asks_for_uplinks_and_hands_them_over(self):
        root = self.useFixture(fixtures.TempDir()).path
        host_fixtures.two_sockets_nic_on_node1(root)
        asked = []

        def find():
            asked.append(True)
            return (('physnet2', 'eno1'),)

        uplinks = discovery.Uplinks(
            physnet_interfaces={'physnet1': 'ens2f0'}, find=find,
            file=self.path)
        found = uplinks.discover('<capabilities/>', root)
        uplinks.discover('<capabilities/>', root)
        self.assertEqual(2, len(asked))
        self.assertEqual({('ens2f0', 'physnet1'), ('eno1', 'physnet2')},
                         {(n.name, n.physnet) for n in found.nics
                          if n.physnet})
        self.assertEqual({n for n in found.nics if n.physnet},
                         set(driver.uplinks(self.conf)))

    def test_without_a_file_nothing_is_written(self):
        root = self.useFixture(fixtures.TempDir()).path
        host_fixtures.two_sockets_nic_on_node1(root)
        discovery.Uplinks().discover('<capabilities/>', root)
        self.assertEqual([], os.listdir(self.dir))

    def test_the_driver_reads_what_the_agent_wrote(self):
        self.assertTrue(discovery.write_uplinks(self.path, [NIC]))
        self.assertEqual((NIC,), driver.uplinks(self.conf))
        self.assertEqual(['uplinks.json'], os.listdir(self.dir))

    def test_without_the_file_novas_physnets_stand_in(self):
        self.conf.set_override('physnets', ['physnet9'], group='neutron')
        self.addCleanup(self.conf.clear_override, 'physnets',
                        group='neutron')
        self.conf.register_opt(cfg.ListOpt('numa_nodes', default=[],
                                           item_type=cfg.types.Integer()),
                               group='neutron_physnet_physnet9')
        self.conf.set_override('numa_nodes', [0],
                               group='neutron_physnet_physnet9')
        self.assertEqual((('physnet9', 0),), tuple(
            (n.physnet, n.numa_node) for n in driver.uplinks(self.conf)))
        with open(self.path, 'w') as f:
            f.write('[{"name": 1}]')
        self.assertEqual(('physnet9',), tuple(
            n.physnet for n in driver.uplinks(self.conf)))
        self.assertIn('unusable', self.log.output)

    def test_an_unwritable_directory_is_a_warning_not_a_crash(self):
        path = os.path.join(self.dir, 'missing', 'uplinks.json')
        self.assertFalse(discovery.write_uplinks(path, [NIC]))
        self.assertIn('Cannot write the uplinks', self.log.output)


class NodeLoadsTest(test_base.TestCase):
    """The node loads the agent reported, handed to the driver at boot."""

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.conf = cfg.ConfigOpts()
        policy_conf.register_opts(self.conf)
        self.conf([])
        self.conf.set_override('uplinks_file',
                               os.path.join(self.dir, 'uplinks.json'),
                               group='numa_policy')
        self.log = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))
        self.now = 1000.0

    def hand_over(self, **node_fields):
        report = report_factory.make_report(
            period=10.0,
            numa_nodes=[report_factory.make_node(0, **node_fields),
                        report_factory.make_node(1, floating_load=0.1),
                        report_factory.make_node(2, node_count=3, cpus=[])])
        handoff.node_loads_writer(self.conf.numa_policy.uplinks_file,
                                  clock=lambda: self.now)(report)

    def test_what_is_written_is_read(self):
        text = topology.render_node_loads({1: 0.25, 0: 1.0}, 12.5, 10.0)
        self.assertEqual(({0: 1.0, 1: 0.25}, 12.5, 10.0),
                         topology.parse_node_loads(text))

    def test_a_damaged_file_is_refused_whole(self):
        good = json.loads(topology.render_node_loads({0: 0.5}, 1.0, 10.0))
        for damaged in ('', '[]', json.dumps({**good, 'x': 1}),
                        json.dumps({**good, 'period': 0}),
                        json.dumps({**good, 'written_at': 'now'}),
                        json.dumps({**good, 'loads': {'a': 0.5}}),
                        json.dumps({**good, 'loads': {'0': 1.5}}),
                        json.dumps({**good, 'loads': {'0': True}})):
            self.assertRaises(ValueError, topology.parse_node_loads, damaged)

    def test_the_driver_reads_the_loads_the_report_gave(self):
        self.hand_over(floating_load=0.75)
        self.assertEqual(['node-loads'], [
            name[len('numa-policy-'):-len('.json')]
            for name in os.listdir(self.dir)])
        # The floating CPUs' load of each node with CPUs.
        self.assertEqual({0: 0.75, 1: 0.1}, driver.measured_loads(
            self.conf, now=lambda: self.now + 29))

    def test_without_floating_cpus_the_whole_node_load(self):
        self.hand_over(floating_load=None, cpu_load=0.4)
        self.assertEqual(0.4, driver.measured_loads(
            self.conf, now=lambda: self.now)[0])

    def test_loads_older_than_three_periods_are_not_used(self):
        self.hand_over(floating_load=0.75)
        self.assertEqual({}, driver.measured_loads(
            self.conf, now=lambda: self.now + 31))
        self.assertIn('are 31 s old', self.log.output)

    def test_no_file_or_a_damaged_one_means_free_memory_decides(self):
        self.assertEqual({}, driver.measured_loads(self.conf))
        self.assertIn('No node loads from the agent', self.log.output)
        with open(topology.node_loads_path(
                self.conf.numa_policy.uplinks_file), 'w') as f:
            f.write('{"loads": {}}')
        self.assertEqual({}, driver.measured_loads(self.conf))
        self.assertIn('unusable', self.log.output)
        self.conf.set_override('uplinks_file', '', group='numa_policy')
        self.assertEqual({}, driver.measured_loads(self.conf))

    def test_a_home_guest_boots_on_the_node_measured_least_loaded(self):
        host = topology_factory.host_topology(nodes=2, cpus=4)

        class Conn:
            # Node 0 has more free memory: alone, it would be chosen.
            def getCellsFreeMemory(self, first, count):
                return [6144 << 20, 4096 << 20][first:first + count]

        def home_nodes(loads):
            plan = enforcement.boot_plan(
                policy.NumaPolicy("home"), host,
                usage=driver.free_memory(Conn(), host, loads),
                memory_mb=1024, vcpus=2)
            return plan.tune.nodes

        self.assertEqual({0}, home_nodes({}))
        self.assertEqual({1}, home_nodes({0: 0.75, 1: 0.1}))
