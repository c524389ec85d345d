"""Live migration through nova's own services, with the driver extension.

nova-api, conductor, scheduler, placement and two nova-computes run in
process on fakelibvirt, with nova's own live-migration fixture standing in
for libvirt's migrateToURI3: the XML the source sends is the XML the
destination starts. The hosts differ (four nodes and two; a different
``cpu_shared_set``), so a placement carried over from the source would
name nodes or CPUs the destination does not have or does not allow.
"""

from xml.etree import ElementTree

import fixtures
from nova.tests.fixtures import libvirt as fakelibvirt
from nova.tests.functional import integrated_helpers
from nova.tests.functional.libvirt import base as libvirt_base

from nova_numa_policy.virt import metadata

from agent.sensors import sysfs
from tests.functional.agent import test_driver_boot


def _host(nodes):
    # fakelibvirt's nodes of two CPUs: CPUs 2n and 2n+1 on node n.
    return fakelibvirt.HostInfo(cpu_nodes=nodes, cpu_sockets=1, cpu_cores=2,
                                cpu_threads=1, kB_mem=8 * 1024 * 1024)


def _placement(xml):
    """(memory mode, memory nodes, every CPU set written) of a domain."""
    root = ElementTree.fromstring(xml)
    memory = root.find('./numatune/memory')
    cpusets = [root.find('./vcpu').get('cpuset')]
    cpusets += [pin.get('cpuset') for pin in root.findall('./cputune/*')
                if pin.tag in ('vcpupin', 'emulatorpin')]
    return ((memory.get('mode'), sysfs.parse_cpulist(memory.get('nodeset')))
            if memory is not None else (None, frozenset()),
            [sysfs.parse_cpulist(c) for c in cpusets if c])


def _migratable_xml_as_defined(test):
    """fakelibvirt's migratable XML, made whole as libvirt's is.

    nova builds the destination's XML from the source domain's migratable
    XML; libvirt's holds every element the domain was defined with, while
    fakelibvirt renders a reduced XML without ``<numatune>`` modes or
    metadata. Other XMLDesc() calls keep fakelibvirt's rendering.
    """
    parse = fakelibvirt.Domain._parse_definition
    describe = fakelibvirt.Domain.XMLDesc

    def keep(domain, xml):
        domain.defined_xml = xml
        return parse(domain, xml)

    def xml_desc(domain, flags):
        if flags & fakelibvirt.VIR_DOMAIN_XML_MIGRATABLE:
            return domain.defined_xml
        return describe(domain, flags)

    test.useFixture(fixtures.MonkeyPatch(
        'nova.tests.fixtures.libvirt.Domain._parse_definition', keep))
    test.useFixture(fixtures.MonkeyPatch(
        'nova.tests.fixtures.libvirt.Domain.XMLDesc', xml_desc))


class LiveMigrationTest(libvirt_base.LibvirtMigrationMixin,
                        libvirt_base.ServersTestBase,
                        integrated_helpers.InstanceHelperMixin):

    # 2.74: a server booted on a named host.
    microversion = '2.74'
    ADMIN_API = True

    def setUp(self):
        super().setUp()
        test_driver_boot.use_driver_extension(self)
        self.defined = test_driver_boot.record_defined_xml(self)
        _migratable_xml_as_defined(self)
        self.src = self.computes[self.start_compute(
            hostname='src', host_info=_host(4))]
        self.dest = self.computes[self.start_compute(
            hostname='dest', host_info=_host(2))]

    def _migrate_stub(self, domain, destination, params, flags):
        # fakelibvirt's XMLDesc() drops <numatune> and metadata: keep the
        # XML the source sends as sent.
        self.sent.append(params['destination_xml'])
        super()._migrate_stub(domain, destination, params, flags)

    def boot_on_source(self, extra_spec):
        """The domain XML nova-compute defined on the source."""
        flavor = self._create_flavor(vcpu=2, memory_mb=1024,
                                     extra_spec=extra_spec)
        self.server = self._create_server(flavor_id=flavor, host='src',
                                          networks='none')
        return self.defined[-1]

    def migrate(self):
        """The domain XML the source sent to the destination."""
        self.sent = []
        self._live_migrate(self.server, 'completed')
        self.assertEqual(
            'dest',
            self.api.get_server(self.server['id'])['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(1, len(self.sent))
        return self.sent[0]

    def assert_valid_on_destination(self, xml, allowed=frozenset(range(4))):
        (_, nodes), cpusets = _placement(xml)
        self.assertLessEqual(nodes, {0, 1})
        for cpus in cpusets:
            self.assertTrue(cpus and cpus <= allowed, (cpus, xml))

    def test_interleave_spans_the_destinations_nodes(self):
        before = self.boot_on_source({'hw:numa_policy': 'interleave'})
        self.assertEqual(('interleave', {0, 1, 2, 3}),
                         _placement(before)[0])
        after = self.migrate()
        self.assertEqual(('interleave', {0, 1}), _placement(after)[0])
        self.assert_valid_on_destination(after)
        record = metadata.find_record(ElementTree.fromstring(after))
        self.assertEqual(('interleave', frozenset({0, 1}), frozenset()),
                         (record.mode, record.nodes, record.allowed_cpus))
        # The source decided blind to the destination's load, and says so.
        self.assertFalse(metadata.find_record(
            ElementTree.fromstring(before)).chosen_by_source)
        self.assertTrue(record.chosen_by_source)

    def test_home_goes_where_the_destination_lets_its_vcpus_run(self):
        self.boot_on_source({'hw:numa_policy': 'home'})
        # The destination gives guests node 1's CPUs only.
        self.flags(cpu_shared_set='2,3', group='compute')
        self.restart_compute_service('dest')
        after = self.migrate()
        # restrictive: the destination's agent can still move it.
        self.assertEqual(('restrictive', {1}), _placement(after)[0])
        self.assert_valid_on_destination(after, allowed={2, 3})
        record = metadata.find_record(ElementTree.fromstring(after))
        self.assertEqual(frozenset({2, 3}), record.allowed_cpus)
        element = ElementTree.fromstring(after).find(
            f'./metadata/{{{metadata.NAMESPACE}}}{metadata.ELEMENT}')
        self.assertEqual('migration-source', element.get('chosen-by'))

    def test_a_guest_without_a_policy_travels_as_nova_made_it(self):
        before = self.boot_on_source({})
        after = self.migrate()
        self.assertIsNone(ElementTree.fromstring(after).find('./numatune'))
        self.assertIsNone(metadata.find_record(ElementTree.fromstring(after)))
        self.assertEqual(ElementTree.fromstring(before).find('./vcpu').attrib,
                         ElementTree.fromstring(after).find('./vcpu').attrib)

    def test_novas_own_numa_guest_is_left_to_nova(self):
        self.boot_on_source({'hw:numa_policy': 'first-touch',
                             'hw:numa_nodes': '1'})
        after = self.migrate()
        root = ElementTree.fromstring(after)
        # nova's NUMA live migration rewrote its own <numatune>.
        self.assertIsNotNone(root.find('./numatune/memnode'))
        self.assertTrue(metadata.find_record(root).policy.within_nova_topology)
        self.assert_valid_on_destination(after)
