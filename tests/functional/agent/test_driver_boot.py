"""Boot through nova's own services with the driver extension.

nova-api, conductor, scheduler, placement and nova-compute run in process
on fakelibvirt (nova's functional framework). The domain XML nova-compute
hands to libvirt must carry the ``<numatune>`` and our metadata; that XML
is then started on libvirt's real test driver, where the agent observes it
and reports the policy as applied.
"""

import os
import re
import sys

import fixtures
from nova.conf import neutron as nova_neutron_conf
from nova.tests.fixtures import libvirt as fakelibvirt
from nova.tests.functional.libvirt import base as libvirt_base
from xml.etree import ElementTree

from nova_numa_policy.virt import driver as numa_driver
from nova_numa_policy.virt import metadata
from nova_numa_policy.virt import shim

from agent.backend import connection
from agent.backend import libvirt_backend
from agent.backend import settings
from agent.sensors import discovery
from agent.service import manager
from tests import fixtures as host_fixtures

SHIM_MODULE = f'nova.virt.{shim.MODULE}'


def _test_driver_domain(nova_xml):
    """nova's domain, reduced to what libvirt's test driver can define.

    Devices, CPU model, features and clock are qemu's business; name, uuid,
    metadata, memory, vCPUs and <numatune> are what the agent reads.
    """
    root = ElementTree.fromstring(nova_xml)
    kept = ElementTree.Element('domain', {'type': 'test'})
    for tag in ('name', 'uuid', 'metadata', 'memory', 'vcpu', 'numatune'):
        element = root.find(tag)
        if element is not None:
            kept.append(element)
    ElementTree.SubElement(ElementTree.SubElement(kept, 'os'),
                           'type').text = 'hvm'
    return ElementTree.tostring(kept, encoding='unicode')


def use_driver_extension(test):
    """nova-compute services ``test`` starts next load our driver.

    What the shim file makes true on a compute node, without writing into
    the shared nova installation: nova.virt.numa_policy is our driver
    module (test_shim checks the file itself).
    """
    sys.modules[SHIM_MODULE] = numa_driver
    test.addCleanup(sys.modules.pop, SHIM_MODULE, None)
    test.flags(compute_driver=shim.COMPUTE_DRIVER)
    # The kernel's files the extension reads at boot (its memory tiers):
    # a tree of the test's own, empty unless the test writes into it,
    # rather than this machine's /sys, which nova's fixtures forbid.
    test.sysfs_root = test.useFixture(fixtures.TempDir()).path
    test.useFixture(fixtures.MonkeyPatch(
        'nova_numa_policy.virt.memtiers.SYSFS_ROOT', test.sysfs_root))


def record_defined_xml(test):
    """Every domain XML nova-compute defines from now on, in a list.

    As defined: fakelibvirt's XMLDesc() drops <numatune> and metadata.
    """
    defined = []
    original = fakelibvirt.Connection.defineXML

    def record(conn, xml):
        defined.append(xml)
        return original(conn, xml)

    test.useFixture(fixtures.MonkeyPatch(
        'nova.tests.fixtures.libvirt.Connection.defineXML', record))
    return defined


class DriverBootTestBase(libvirt_base.ServersTestBase):
    """nova's services with our driver; every defined XML is recorded."""

    microversion = 'latest'
    # fakelibvirt's nodes of two CPUs: CPUs 2n and 2n+1 on node n.
    NODES = 2

    def setUp(self):
        super().setUp()
        use_driver_extension(self)
        self.defined = record_defined_xml(self)
        # Where this test's agent would hand over its uplinks: nothing
        # there yet, whatever this machine holds in /var/lib/nova.
        self.uplinks_file = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'uplinks.json')
        self.flags(uplinks_file=self.uplinks_file, group='numa_policy')
        self.start_compute(host_info=fakelibvirt.HostInfo(
            cpu_nodes=self.NODES, cpu_sockets=1, cpu_cores=2,
            cpu_threads=1, kB_mem=8 * 1024 * 1024))


class DriverExtensionBootTest(DriverBootTestBase):

    def boot(self, extra_spec, vcpus=2):
        flavor = self._create_flavor(vcpu=vcpus, memory_mb=1024,
                                     extra_spec=extra_spec)
        server = self._create_server(flavor_id=flavor,
                                     networks='none')
        self.assertEqual(1, len(self.defined))
        return server, self.defined[0]

    def test_interleave_reaches_the_domain_xml_and_the_report(self):
        server, xml = self.boot({'hw:numa_policy': 'interleave'})
        root = ElementTree.fromstring(xml)
        memory = root.find('./numatune/memory')
        self.assertEqual(('interleave', '0-1'),
                         (memory.get('mode'), memory.get('nodeset')))
        record = metadata.find_record(root)
        self.assertEqual(('interleave', 'interleave', frozenset({0, 1})),
                         (record.policy.value, record.mode, record.nodes))

        # The same XML, started on libvirt's real test driver, seen by the
        # agent on a two-node host.
        tmp = self.useFixture(fixtures.TempDir()).path
        sysfs_root = host_fixtures.two_sockets_nic_on_node1(
            os.path.join(tmp, 'root'))
        uri = 'test://' + host_fixtures.write_host_xml(
            os.path.join(tmp, 'host.xml'), [_test_driver_domain(xml)])
        conn = connection.Connection(uri)
        self.addCleanup(conn.close)
        agent = manager.Agent(
            libvirt_backend.LibvirtBackend(
                conn, paths=settings.HostPaths(root=sysfs_root)),
            host='compute1', period=5.0)
        agent.run_once()
        reported = {i.uuid: i for i in agent.last_report.instances}
        self.assertEqual(('interleave', 'interleave'),
                         (reported[server['id']].requested_policy,
                          reported[server['id']].applied_policy))

    def test_home_binds_memory_and_vcpus_to_one_node(self):
        _, xml = self.boot({'hw:numa_policy': 'home'})
        root = ElementTree.fromstring(xml)
        memory = root.find('./numatune/memory')
        self.assertEqual('strict', memory.get('mode'))
        node = int(memory.get('nodeset'))
        # fakelibvirt's 2 nodes x 2 cores: node n holds CPUs 2n and 2n+1.
        self.assertEqual(f'{2 * node}-{2 * node + 1}',
                         root.find('./vcpu').get('cpuset'))

    def test_without_a_policy_the_xml_is_novas_own(self):
        _, xml = self.boot({})
        root = ElementTree.fromstring(xml)
        self.assertIsNone(root.find('./numatune'))
        self.assertIsNone(metadata.find_record(root))

    def test_nova_owned_topology_keeps_novas_numatune(self):
        _, xml = self.boot({'hw:numa_policy': 'first-touch',
                            'hw:numa_nodes': '1'})
        root = ElementTree.fromstring(xml)
        self.assertIsNotNone(root.find('./numatune/memnode'))
        self.assertEqual('strict',
                         root.find('./numatune/memory').get('mode'))
        record = metadata.find_record(root)
        self.assertTrue(record.policy.within_nova_topology)
        self.assertIsNone(record.mode)
        self.assertIsNotNone(re.search(r'<cell ', xml))

    def test_a_busy_nic_node_sends_the_next_guest_numa_prior(self):
        # The uplink as nova knows it: physnet1 on node 0.
        self.flags(physnets=['physnet1'], group='neutron')
        nova_neutron_conf.register_dynamic_opts(numa_driver.CONF)
        self.flags(numa_nodes=[0], group='neutron_physnet_physnet1')
        nic_near = {'hw:numa_policy': 'first-touch',
                    'hw:numa_nic_locality': 'preferred'}
        first = self._create_flavor(vcpu=1, memory_mb=512,
                                    extra_spec=nic_near)
        self._create_server(flavor_id=first, networks='none')
        memory = ElementTree.fromstring(self.defined[-1]).find(
            './numatune/memory')
        self.assertEqual(('preferred', '0'),
                         (memory.get('mode'), memory.get('nodeset')))
        # That guest's vCPU runs on node 0 (fakelibvirt runs vCPU n on CPU
        # n): one more would take node 0's two CPUs past 80 % load.
        self._create_server(flavor_id=first, networks='none')
        memory = ElementTree.fromstring(self.defined[-1]).find(
            './numatune/memory')
        self.assertEqual(('preferred', '1'),
                         (memory.get('mode'), memory.get('nodeset')))

    def test_the_nic_the_agent_found_is_the_one_the_guest_boots_near(self):
        # nova's physnet option says node 0; the agent found physnet1's
        # interface on node 1 and reported that to the scheduler.
        self.flags(physnets=['physnet1'], group='neutron')
        nova_neutron_conf.register_dynamic_opts(numa_driver.CONF)
        self.flags(numa_nodes=[0], group='neutron_physnet_physnet1')
        root = host_fixtures.two_sockets_nic_on_node1(
            self.useFixture(fixtures.TempDir()).path)
        found = discovery.discover('<capabilities/>', root,
                                   {'physnet1': 'ens2f0'}, {}).nics
        self.assertTrue(discovery.write_uplinks(self.uplinks_file, found))
        _, xml = self.boot({'hw:numa_policy': 'first-touch',
                            'hw:numa_nic_locality': 'required'}, vcpus=1)
        memory = ElementTree.fromstring(xml).find('./numatune/memory')
        self.assertEqual(('preferred', '1'),
                         (memory.get('mode'), memory.get('nodeset')))

    def test_running_guests_are_seen_with_their_vcpus(self):
        server, _ = self.boot({'hw:numa_policy': 'home'})
        host = self.computes['compute1'].driver._host
        guests = {g.uuid: g for g in numa_driver.running_guests(host)}
        # fakelibvirt runs vCPU n on CPU n; the next boot counts them as
        # load on node 0 (CPUs 0 and 1).
        self.assertEqual((0, 1), guests[server['id']].vcpu_cpus)

    def test_a_guest_over_both_nodes_has_its_vcpus_dealt(self):
        # 4 vCPUs need both of fakelibvirt's two-CPU nodes: a <vcpupin>
        # per vCPU deals them over the nodes; first-touch writes no
        # <numatune>, the kernel's default allocation follows the vCPUs.
        _, xml = self.boot({'hw:numa_policy': 'first-touch'}, vcpus=4)
        root = ElementTree.fromstring(xml)
        self.assertIsNone(root.find('./numatune'))
        self.assertEqual({0: '0-1', 1: '2-3', 2: '0-1', 3: '2-3'},
                         vcpu_pins(root))
        record = metadata.find_record(root)
        self.assertEqual(('first-touch', None),
                         (record.policy.value, record.mode))


class TopTierBootTest(DriverBootTestBase):
    """The driver reads the kernel's memory tiers at boot.

    fakelibvirt cannot make a node without CPUs, so the fixture's kernel
    puts its node 1, CPUs and all, one tier below node 0: what the
    extension reads and does with it is the same.
    """

    def setUp(self):
        super().setUp()
        # Read at each boot: written after the compute service started.
        host_fixtures.write_memory_tiers(self.sysfs_root, {4: '0', 22: '1'},
                                         'true')

    def boot(self, extra_spec):
        flavor = self._create_flavor(vcpu=1, memory_mb=512,
                                     extra_spec=extra_spec)
        self._create_server(flavor_id=flavor, networks='none')
        return ElementTree.fromstring(self.defined[-1])

    def test_top_keeps_interleave_to_the_top_tier(self):
        root = self.boot({'hw:numa_policy': 'interleave',
                          'hw:numa_memory_tiers': 'top'})
        memory = root.find('./numatune/memory')
        self.assertEqual(('interleave', '0'),
                         (memory.get('mode'), memory.get('nodeset')))
        record = metadata.find_record(root)
        self.assertEqual('top', record.policy.memory_tiers.mode.value)

    def test_any_interleaves_over_every_node_as_before(self):
        memory = self.boot({'hw:numa_policy': 'interleave'}).find(
            './numatune/memory')
        self.assertEqual(('interleave', '0-1'),
                         (memory.get('mode'), memory.get('nodeset')))


def vcpu_pins(root):
    return {int(pin.get('vcpu')): pin.get('cpuset')
            for pin in root.findall('./cputune/vcpupin')}


class LargeGuestBootTest(DriverBootTestBase):
    """Large guests on a four-node host each get an idle half of it."""

    NODES = 4

    def boot(self, value, vcpus=4):
        flavor = self._create_flavor(vcpu=vcpus, memory_mb=1024,
                                     extra_spec={'hw:numa_policy': value})
        self._create_server(flavor_id=flavor, networks='none')
        return ElementTree.fromstring(self.defined[-1])

    def test_two_large_guests_get_one_half_each(self):
        first = self.boot('interleave+carrefour')
        memory = first.find('./numatune/memory')
        self.assertEqual(('interleave', '0-1'),
                         (memory.get('mode'), memory.get('nodeset')))
        self.assertEqual('0-3', first.find('./vcpu').get('cpuset'))
        self.assertEqual({0: '0-1', 1: '2-3', 2: '0-1', 3: '2-3'},
                         vcpu_pins(first))
        # fakelibvirt runs vCPU n on CPU n: the first guest is seen on
        # nodes 0 and 1, so the second takes the other half.
        second = self.boot('first-touch')
        memory = second.find('./numatune/memory')
        self.assertEqual(('restrictive', '2-3'),
                         (memory.get('mode'), memory.get('nodeset')))
        self.assertEqual('4-7', second.find('./vcpu').get('cpuset'))
        self.assertEqual({0: '4-5', 1: '6-7', 2: '4-5', 3: '6-7'},
                         vcpu_pins(second))

    def test_the_operator_can_turn_halves_off(self):
        self.flags(large_guest_share=1.0, group='numa_policy')
        root = self.boot('interleave')
        memory = root.find('./numatune/memory')
        self.assertEqual(('interleave', '0-3'),
                         (memory.get('mode'), memory.get('nodeset')))
        self.assertIsNone(root.find('./vcpu').get('cpuset'))
        self.assertEqual({0: '0-1', 1: '2-3', 2: '4-5', 3: '6-7'},
                         vcpu_pins(root))
