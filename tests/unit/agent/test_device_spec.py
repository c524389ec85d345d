"""SR-IOV uplinks from nova's [pci] device_spec, matched against sysfs.

The fixture tree is laid out as the kernel lays it out: each PCI
function under ``sys/devices``, linked from ``sys/bus/pci/devices``; a
VF's ``physfn`` and its PF's ``virtfn<N>``; each interface under its
function's ``net`` and linked from ``sys/class/net``.
"""

import json
import logging
import os

import fixtures

from nova_numa_policy.conf import agent as agent_conf

from agent.sensors import discovery
from agent.sensors import sysfs
from agent.service import cmd
from tests import base as test_base
from tests import fixtures as host_fixtures
from tests.unit import conf_fixture

BRIDGE = 'sys/devices/pci0000:00/0000:00:01.0'

INTEL_PF_0 = '0000:81:00.0'
INTEL_PF_1 = '0000:81:00.1'
INTEL_VF_0 = '0000:81:02.0'
INTEL_VF_1 = '0000:81:02.1'
MLX_PF = '0000:0a:00.0'
MLX_VF = '0000:0a:00.2'
ONBOARD = '0000:02:00.0'
CHIPSET = '0000:00:1f.0'


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def write_function(root, address, vendor, product, netdevs=(),
                   numa_node=0, totalvfs=None, physfn=None, vf_index=0):
    """One PCI function, its interfaces and, for a VF, its PF's links."""
    device = os.path.join(root, BRIDGE, address)
    _write(os.path.join(device, 'vendor'), f'0x{vendor}\n')
    _write(os.path.join(device, 'device'), f'0x{product}\n')
    _write(os.path.join(device, 'numa_node'), f'{numa_node}\n')
    if totalvfs is not None:
        _write(os.path.join(device, 'sriov_totalvfs'), f'{totalvfs}\n')
    if physfn:
        os.symlink(f'../{physfn}', os.path.join(device, 'physfn'))
        os.symlink(f'../{address}', os.path.join(
            root, BRIDGE, physfn, f'virtfn{vf_index}'))
    for name in netdevs:
        net = os.path.join(device, 'net', name)
        _write(os.path.join(net, 'speed'), '25000\n')
        os.symlink(f'../../../{address}', os.path.join(net, 'device'))
        os.makedirs(os.path.join(root, host_fixtures.NET), exist_ok=True)
        os.symlink(f'../../{BRIDGE[len("sys/"):]}/{address}/net/{name}',
                   os.path.join(root, host_fixtures.NET, name))
    devices = os.path.join(root, sysfs.PCI_DIR)
    os.makedirs(devices, exist_ok=True)
    os.symlink(f'../../../{BRIDGE[len("sys/"):]}/{address}',
               os.path.join(devices, address))


def sriov_host(root):
    """Two nodes, and the PCI functions of a host with SR-IOV NICs.

    An Intel dual-port PF pair on node 1, the first with two VFs (one
    bound to the host's driver); a Mellanox PF with a VF; an onboard NIC
    without SR-IOV; a chipset function without an interface.
    """
    host_fixtures.numa_host(root, 2, 4)
    write_function(root, INTEL_PF_0, '8086', '1572', ['ens5f0'],
                   numa_node=1, totalvfs=64)
    write_function(root, INTEL_PF_1, '8086', '1572', ['ens5f1'],
                   numa_node=1, totalvfs=64)
    write_function(root, INTEL_VF_0, '8086', '154c', numa_node=1,
                   physfn=INTEL_PF_0, vf_index=0)
    write_function(root, INTEL_VF_1, '8086', '154c', ['ens5f0v1'],
                   numa_node=1, physfn=INTEL_PF_0, vf_index=1)
    write_function(root, MLX_PF, '15b3', '1017', ['enp10s0f0np0'],
                   totalvfs=8)
    write_function(root, MLX_VF, '15b3', '1018', ['enp10s0f0v0'],
                   physfn=MLX_PF)
    write_function(root, ONBOARD, '14e4', '165f', ['eno1'])
    write_function(root, CHIPSET, '8086', 'a1c8')
    return root


class SriovHostTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.root = sriov_host(self.useFixture(fixtures.TempDir()).path)

    def uplinks(self, *entries):
        return discovery.sriov_uplinks(
            [e if isinstance(e, str) else json.dumps(e) for e in entries],
            self.root)


class PciFunctionsTest(SriovHostTest):

    def test_the_facts_of_each_function(self):
        functions = {f.address: f for f in sysfs.pci_functions(self.root)}
        self.assertEqual(
            sysfs.PciFunction(INTEL_VF_1, '8086', '154c', ('ens5f0v1',),
                              INTEL_PF_0, 0), functions[INTEL_VF_1])
        self.assertEqual(
            sysfs.PciFunction(INTEL_PF_0, '8086', '1572', ('ens5f0',), None,
                              64), functions[INTEL_PF_0])
        self.assertEqual(
            sysfs.PciFunction(CHIPSET, '8086', 'a1c8', (), None, 0),
            functions[CHIPSET])
        self.assertEqual(8, len(functions))

    def test_no_pci_bus_has_no_functions(self):
        self.assertEqual((), sysfs.pci_functions(
            self.useFixture(fixtures.TempDir()).path))


class VendorProductTest(SriovHostTest):

    def test_the_pfs_own_ids_give_each_pf(self):
        self.assertEqual(
            [('physnet1', INTEL_PF_0), ('physnet1', INTEL_PF_1)],
            self.uplinks({'vendor_id': '8086', 'product_id': '1572',
                          'physical_network': 'physnet1'}))

    def test_the_vfs_ids_give_their_pf_once(self):
        # Two VFs of one PF, one without an interface: the PF, once.
        self.assertEqual(
            [('physnet2', INTEL_PF_0)],
            self.uplinks({'vendor_id': '8086', 'product_id': '154c',
                          'physical_network': 'physnet2'}))

    def test_hex_in_either_case_and_any(self):
        self.assertEqual(
            [('physnet3', MLX_PF)],
            self.uplinks({'vendor_id': '15B3', 'product_id': '1018',
                          'physical_network': 'physnet3'}))
        self.assertEqual(
            [('physnet3', MLX_PF)],
            self.uplinks({'vendor_id': '*', 'product_id': '0x1017',
                          'physical_network': 'physnet3'}))

    def test_a_function_without_interface_or_vfs_is_no_uplink(self):
        self.assertEqual([], self.uplinks(
            {'vendor_id': '8086', 'product_id': 'a1c8',
             'physical_network': 'physnet1'}))

    def test_a_nic_without_sriov_stands_for_itself(self):
        self.assertEqual([('physnet1', ONBOARD)], self.uplinks(
            {'vendor_id': '14e4', 'physical_network': 'physnet1'}))


class AddressTest(SriovHostTest):

    def test_string_globs(self):
        for address, expected in (
                ('*:0a:00.*', [MLX_PF]),
                ('0000:81:00.1', [INTEL_PF_1]),
                ('81:02.', [INTEL_PF_0]),       # domain and function any
                ('0a:00', [MLX_PF]),
                ('*:81:*.1', [INTEL_PF_0, INTEL_PF_1]),
                (':00.0', [ONBOARD, MLX_PF, INTEL_PF_0]),
                ('0000:82:*.*', [])):
            self.assertEqual(
                sorted(('physnet1', a) for a in expected),
                sorted(self.uplinks({'address': address,
                                     'physical_network': 'physnet1'})),
                address)

    def test_an_exact_vf_address_gives_its_pf(self):
        self.assertEqual([('physnet1', INTEL_PF_0)], self.uplinks(
            {'address': INTEL_VF_1, 'physical_network': 'physnet1'}))

    def test_an_exact_pf_address_takes_its_vfs_ids(self):
        # As in nova: the PF's address with its VFs' product names them.
        self.assertEqual([('physnet1', INTEL_PF_0)], self.uplinks(
            {'address': INTEL_PF_0, 'product_id': '154c',
             'physical_network': 'physnet1'}))
        self.assertEqual([], self.uplinks(
            {'address': '*:81:00.0', 'product_id': '154c',
             'physical_network': 'physnet1'}))

    def test_dict_regular_expressions(self):
        self.assertEqual([('physnet1', INTEL_PF_0)], self.uplinks(
            {'address': {'domain': '.*', 'bus': '81', 'slot': '02',
                         'function': '[0-1]'},
             'physical_network': 'physnet1'}))
        self.assertEqual([('physnet1', MLX_PF)], self.uplinks(
            {'address': {'bus': '0[aA]'}, 'physical_network': 'physnet1'}))
        self.assertEqual(
            [('physnet1', INTEL_PF_0), ('physnet1', INTEL_PF_1)],
            self.uplinks({'address': {'bus': '8', 'function': '[01]'},
                          'physical_network': 'physnet1'}))


class DevnameTest(SriovHostTest):

    def test_a_pfs_interface(self):
        self.assertEqual([('physnet1', INTEL_PF_1)], self.uplinks(
            {'devname': 'ens5f1', 'physical_network': 'physnet1'}))

    def test_a_vfs_interface_gives_its_pf(self):
        self.assertEqual([('physnet1', MLX_PF)], self.uplinks(
            {'devname': 'enp10s0f0v0', 'physical_network': 'physnet1'}))

    def test_an_absent_interface_gives_nothing(self):
        self.assertEqual([], self.uplinks(
            {'devname': 'ens9f0', 'physical_network': 'physnet1'}))


class CombinationTest(SriovHostTest):

    def test_every_key_given_must_match(self):
        self.assertEqual([('physnet1', INTEL_PF_1)], self.uplinks(
            {'vendor_id': '8086', 'product_id': '1572',
             'address': '*:81:00.1', 'physical_network': 'physnet1'}))
        self.assertEqual([], self.uplinks(
            {'vendor_id': '15b3', 'address': '*:81:*.*',
             'physical_network': 'physnet1'}))
        self.assertEqual([], self.uplinks(
            {'vendor_id': '15b3', 'devname': 'ens5f0',
             'physical_network': 'physnet1'}))
        self.assertEqual([('physnet1', INTEL_PF_0)], self.uplinks(
            {'product_id': '154c', 'devname': 'ens5f0',
             'physical_network': 'physnet1'}))

    def test_a_list_in_one_value(self):
        self.assertEqual(
            [('physnet1', INTEL_PF_1), ('physnet2', MLX_PF)],
            self.uplinks([{'devname': 'ens5f1',
                           'physical_network': 'physnet1'},
                          {'address': '*:0a:*.*',
                           'physical_network': 'physnet2'},
                          {'vendor_id': '8086'}]))

    def test_each_uplink_once_in_the_order_of_the_specs(self):
        self.assertEqual(
            [('physnet2', MLX_PF), ('physnet1', INTEL_PF_0),
             ('physnet1', MLX_PF)],
            self.uplinks({'devname': 'enp10s0f0v0',
                          'physical_network': 'physnet2'},
                         [{'vendor_id': '8086', 'product_id': '154c',
                           'physical_network': 'physnet1'},
                          {'address': INTEL_VF_0,
                           'physical_network': 'physnet1'},
                          {'vendor_id': '15b3',
                           'physical_network': 'physnet1'}]))

    def test_no_address_nor_devname_takes_every_function(self):
        # As nova reads it: every function is on that physnet.
        self.assertEqual(
            {('physnet1', a) for a in (INTEL_PF_0, INTEL_PF_1, MLX_PF,
                                       ONBOARD)},
            set(self.uplinks({'physical_network': 'physnet1'})))


class SkippedTest(SriovHostTest):

    def test_entries_without_a_physnet_are_no_uplinks(self):
        log = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))
        self.assertEqual([], self.uplinks(
            {'vendor_id': '8086', 'product_id': '154c'},
            {'devname': 'ens5f0'}))
        self.assertEqual(2, log.output.count('no physical_network'))

    def test_bad_json_and_odd_types_are_skipped_and_said_once(self):
        log = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        texts = [
            'not json', '42', '"ens5f0"', '[1]', None,
            '{"vendor_id": 8086, "physical_network": "physnet1"}',
            '{"product_id": "12345", "physical_network": "physnet1"}',
            '{"address": ["0000:81:00.0"], "physical_network": "physnet1"}',
            '{"address": "0000:81:00.9", "physical_network": "physnet1"}',
            '{"address": "0:0:81:00.0", "physical_network": "physnet1"}',
            '{"address": "0000:81:0*.0", "physical_network": "physnet1"}',
            '{"address": {"bus": "("}, "physical_network": "physnet1"}',
            '{"address": {"bus": 129}, "physical_network": "physnet1"}',
            '{"devname": "ens5f0", "address": "0000:81:00.0",'
            ' "physical_network": "physnet1"}',
            '{"devname": ["ens5f0"], "physical_network": "physnet1"}',
            '{"devname": "ens5f0", "physical_network": 1}',
        ]
        specs = discovery.parse_device_specs(
            texts + ['{"devname": "ens5f1", "physical_network": "p"}'])
        self.assertEqual(len(texts), len(log.output.splitlines()))
        # Matched at each topology read, said no more.
        for _ in range(2):
            self.assertEqual([('p', INTEL_PF_1)],
                             discovery.pf_uplinks(specs, self.root))
        self.assertEqual(len(texts), len(log.output.splitlines()))


class PureMatchTest(test_base.TestCase):
    """The matching itself: a spec and a function's facts, no sysfs."""

    PF = sysfs.PciFunction('0000:3b:00.0', '8086', '1592', ('ens1f0',),
                           None, 128)
    VF = sysfs.PciFunction('0000:3b:01.0', '8086', '1889', (),
                           '0000:3b:00.0', 0)

    def spec(self, **entry):
        return discovery.parse_device_spec({'physical_network': 'physnet1',
                                            **entry})

    def test_glob_fields_are_hex_values(self):
        pattern = discovery.parse_address('3b:1.')
        self.assertEqual(('*', '3b', '01', '*'), pattern.fields)
        self.assertFalse(pattern.exact)
        self.assertTrue(discovery.address_matches(pattern, '0000:3b:01.7'))
        self.assertFalse(discovery.address_matches(pattern, '0000:3b:11.0'))
        self.assertTrue(discovery.parse_address('0000:3B:00.0').exact)

    def test_regex_fields_match_at_their_start(self):
        pattern = discovery.parse_address({'slot': '0', 'function': '[2-3]'})
        self.assertTrue(discovery.address_matches(pattern, '0000:3b:01.2'))
        self.assertFalse(discovery.address_matches(pattern, '0000:3b:11.2'))
        self.assertFalse(discovery.address_matches(pattern, '0000:3b:01.4'))
        self.assertTrue(discovery.parse_address(
            {'domain': '0000', 'bus': '3b', 'slot': '00',
             'function': '0'}).exact)

    def test_a_vf_matches_by_its_own_ids_or_its_pfs_name(self):
        match = discovery.spec_matches
        self.assertTrue(match(self.spec(product_id='1889'), self.VF, self.PF))
        self.assertFalse(match(self.spec(product_id='1592'), self.VF,
                               self.PF))
        self.assertTrue(match(self.spec(devname='ens1f0'), self.VF, self.PF))
        self.assertFalse(match(self.spec(devname='ens1f0'), self.VF))
        self.assertTrue(match(self.spec(address='0000:3b:00.0'), self.VF,
                              self.PF))
        self.assertFalse(match(self.spec(address='*:3b:00.*'), self.VF,
                               self.PF))

    def test_matched_functions_stand_for_their_pf(self):
        self.assertEqual(
            [('physnet1', '0000:3b:00.0')],
            discovery.match_uplinks([self.spec(vendor_id='8086')],
                                    [self.PF, self.VF]))

    def test_no_physnet_is_none(self):
        self.assertIsNone(discovery.parse_device_spec({'vendor_id': '8086'}))


class WithoutSysfsTest(test_base.TestCase):

    def test_only_entries_naming_one_device_as_named(self):
        self.assertEqual(
            [('physnet2', 'ens5f0'), ('physnet3', '0000:81:00.1')],
            discovery.sriov_uplinks([
                '{"devname": "ens5f0", "physical_network": "physnet2"}',
                '{"address": "0000:81:00.1", "physical_network": "physnet3"}',
                '{"address": "0000:82:*.*", "physical_network": "physnet4"}',
                '{"vendor_id": "8086", "physical_network": "physnet5"}']))


class AgentTest(SriovHostTest):

    def test_the_pfs_interfaces_are_the_physnets_uplinks(self):
        topo = discovery.discover(
            '<capabilities/>', self.root, {}, {},
            found=self.uplinks({'vendor_id': '8086', 'product_id': '154c',
                                'physical_network': 'physnet2'}))
        self.assertEqual([('ens5f0', 'physnet2', 1)],
                         [(n.name, n.physnet, n.numa_node)
                          for n in topo.nics])

    def test_the_agent_matches_novas_specs_under_its_sysfs_root(self):
        conf = self.useFixture(
            conf_fixture.ProjectConf(modules=(agent_conf,))).conf
        conf.set_override('sysfs_root', self.root, group='numa_policy_agent')
        conf.set_override('ovs_db', '', group='numa_policy_agent')
        cmd.device_specs(conf)  # registers nova's option
        conf.set_override('device_spec', [json.dumps(
            {'address': '*:0a:*.*', 'physical_network': 'physnet1'})],
            group='pci')
        find = cmd.uplink_finder(conf)
        self.assertEqual([('physnet1', MLX_PF)], find())
        # A function that appears later is found at the next read.
        write_function(self.root, '0000:0a:00.1', '15b3', '1017',
                       totalvfs=8)
        self.assertEqual([('physnet1', MLX_PF), ('physnet1', '0000:0a:00.1')],
                         find())
