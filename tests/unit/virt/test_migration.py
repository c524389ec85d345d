"""A live-migrated guest's XML, rewritten for its destination."""

from xml.etree import ElementTree

from nova import objects

from nova_numa_policy.contracts import policy
from nova_numa_policy.decisions import enforcement
from nova_numa_policy.virt import driver
from nova_numa_policy.virt import metadata
from nova_numa_policy.virt import migration
from tests import base as test_base

NOVA_NS = 'http://openstack.org/xmlns/libvirt/nova/1.1'


def source_xml(record, numatune='', cputune='', cpuset='0-3'):
    """A source domain as nova's dump_migratable XML gives it."""
    return f'''<domain type="kvm">
  <name>instance-1</name>
  <uuid>11111111-2222-3333-4444-555555555555</uuid>
  <metadata>
    <nova:instance xmlns:nova="{NOVA_NS}"><nova:name>vm</nova:name>
    </nova:instance>
    {metadata.render(record)}
  </metadata>
  <memory unit="KiB">1048576</memory>
  <vcpu placement="static" cpuset="{cpuset}">2</vcpu>
  <cputune><shares>2048</shares>{cputune}</cputune>
  {numatune}
  <os><type>hvm</type></os>
</domain>'''


def record(value, mode=None, nodes=(), allowed=None):
    return metadata.PolicyRecord(policy.resolve({policy.POLICY_KEY: value}),
                                 mode, frozenset(nodes),
                                 None if allowed is None else
                                 frozenset(allowed))


INTERLEAVED_ON_FOUR = source_xml(
    record('interleave', 'interleave', {0, 1, 2, 3}, {0, 1, 2, 3, 4, 5}),
    numatune='<numatune><memory mode="interleave" nodeset="0-3"/>'
             '</numatune>',
    cputune='<vcpupin vcpu="0" cpuset="6-7"/><vcpupin vcpu="1" cpuset="6"/>'
            '<emulatorpin cpuset="6-7"/>'
            '<iothreadpin iothread="1" cpuset="6-7"/>')


class RetargetTest(test_base.TestCase):

    def retarget(self, xml, tune, allowed):
        root = ElementTree.fromstring(migration.retarget(
            xml, metadata.find_record(ElementTree.fromstring(xml)), tune,
            allowed))
        return root, metadata.find_record(root)

    def test_the_destinations_placement_replaces_the_sources(self):
        tune = enforcement.MemoryTune(
            'interleave', frozenset({0, 1}), frozenset(),
            (frozenset({2}), frozenset({3})))
        root, written = self.retarget(INTERLEAVED_ON_FOUR, tune, {2, 3})
        memory = root.findall('./numatune/memory')
        self.assertEqual([('interleave', '0,1')],
                         [(m.get('mode'), m.get('nodeset')) for m in memory])
        # The source's pins are gone; the destination's are there.
        self.assertEqual([('0', '2'), ('1', '3')],
                         [(p.get('vcpu'), p.get('cpuset'))
                          for p in root.findall('./cputune/vcpupin')])
        self.assertIsNone(root.find('./cputune/emulatorpin'))
        # The agent pins QEMU's I/O threads with the emulator.
        self.assertIsNone(root.find('./cputune/iothreadpin'))
        # nova's own tuning beside them is kept.
        self.assertEqual('2048', root.findtext('./cputune/shares'))
        self.assertEqual('2,3', root.find('./vcpu').get('cpuset'))
        self.assertEqual(('interleave', frozenset({0, 1}),
                          frozenset({2, 3}), 'interleave'),
                         (written.mode, written.nodes, written.allowed_cpus,
                          written.policy.value))

    def test_home_narrows_the_cpuset_and_records_the_wider_bound(self):
        xml = source_xml(record('home', 'strict', {3}, ()), cpuset='6-7',
                         numatune='<numatune><memory mode="strict" '
                                  'nodeset="3"/></numatune>')
        tune = enforcement.MemoryTune('strict', frozenset({1}),
                                      frozenset({2, 3}))
        root, written = self.retarget(xml, tune, ())
        self.assertEqual(('strict', '1'),
                         (root.find('./numatune/memory').get('mode'),
                          root.find('./numatune/memory').get('nodeset')))
        self.assertEqual('2,3', root.find('./vcpu').get('cpuset'))
        self.assertEqual(frozenset(), written.allowed_cpus)
        self.assertIsNone(root.find('./cputune/vcpupin'))

    def test_the_record_says_the_source_chose_the_placement(self):
        # The source's own record came from its driver at boot: unmarked.
        self.assertFalse(metadata.find_record(ElementTree.fromstring(
            INTERLEAVED_ON_FOUR)).chosen_by_source)
        tune = enforcement.MemoryTune('strict', frozenset({1}),
                                      frozenset({2, 3}))
        root, written = self.retarget(INTERLEAVED_ON_FOUR, tune, ())
        self.assertTrue(written.chosen_by_source)
        element = root.find(f'./metadata/{migration.RECORD_TAG}')
        self.assertEqual('migration-source', element.get('chosen-by'))

    def test_a_record_without_the_mark_reads_as_the_drivers_own(self):
        text = metadata.render(record('home', 'strict', {0}, {0, 1}))
        self.assertNotIn('chosen-by', text)
        self.assertFalse(metadata.parse_element(
            ElementTree.fromstring(text)).chosen_by_source)

    def test_no_decision_leaves_the_guest_to_the_kernel_there(self):
        root, written = self.retarget(INTERLEAVED_ON_FOUR, None, ())
        self.assertIsNone(root.find('./numatune'))
        self.assertIsNone(root.find('./cputune/vcpupin'))
        self.assertIsNone(root.find('./vcpu').get('cpuset'))
        self.assertEqual((None, frozenset()), (written.mode, written.nodes))
        self.assertEqual('interleave', written.policy.value)

    def test_an_emptied_cputune_is_removed(self):
        xml = source_xml(record('home', 'strict', {0}),
                         cputune='<vcpupin vcpu="0" cpuset="1"/>'
                         ).replace('<shares>2048</shares>', '')
        root, _ = self.retarget(xml, None, {0, 1})
        self.assertIsNone(root.find('./cputune'))
        self.assertEqual('0,1', root.find('./vcpu').get('cpuset'))

    def test_novas_metadata_keeps_its_namespace(self):
        text = migration.retarget(
            INTERLEAVED_ON_FOUR,
            metadata.find_record(ElementTree.fromstring(INTERLEAVED_ON_FOUR)),
            None, ())
        self.assertIn(f'<nova:instance xmlns:nova="{NOVA_NS}">', text)
        self.assertTrue(metadata.is_nova_instance(
            ElementTree.fromstring(text)))


class RecordedTopologyTest(test_base.TestCase):

    def cell(self, cell_id, cpuset, pcpuset=(), physnets=()):
        return objects.NUMACell(
            id=cell_id, cpuset=set(cpuset), pcpuset=set(pcpuset),
            memory=4096, network_metadata=objects.NetworkMetadata(
                physnets=set(physnets), tunneled=False))

    def test_cells_become_nodes_and_single_cell_physnets_nics(self):
        cells = objects.NUMATopology(cells=[
            self.cell(1, {4, 5}, {6, 7}, physnets={'foo', 'bar'}),
            self.cell(0, {0, 1}, {2, 3}, physnets={'bar'}),
        ])
        topology = driver.recorded_topology(cells)
        self.assertEqual([(0, (0, 1, 2, 3), 4096, (10, 20)),
                          (1, (4, 5, 6, 7), 4096, (20, 10))],
                         [(n.id, n.cpus, n.memory_total_mb, n.distances)
                          for n in topology.nodes])
        # 'bar' spans both cells: no locality to honour.
        self.assertEqual([('foo', 1)], [(nic.physnet, nic.numa_node)
                                        for nic in topology.nics])

    def test_an_older_record_without_network_or_dedicated_cpus(self):
        cell = objects.NUMACell(id=0, cpuset={0, 1}, memory=2048)
        topology = driver.recorded_topology(objects.NUMATopology(
            cells=[cell]))
        self.assertEqual((0, 1), topology.nodes[0].cpus)
        self.assertEqual((), topology.nics)

    def test_no_record_no_nodes(self):
        self.assertEqual((), driver.recorded_topology(None).nodes)


class DestinationAllowedTest(test_base.TestCase):

    def test_the_destinations_shared_set_wins_even_when_empty(self):
        data = objects.LibvirtLiveMigrateData(dst_cpu_shared_set_info=set())
        self.assertEqual(frozenset(), driver.destination_allowed(
            data, record('home', allowed={0, 1})))
        data.dst_cpu_shared_set_info = {4, 5}
        self.assertEqual(frozenset({4, 5}), driver.destination_allowed(
            data, record('home', allowed={0, 1})))

    def test_without_it_the_source_bound_travels(self):
        data = objects.LibvirtLiveMigrateData()
        self.assertEqual(frozenset({0, 1}), driver.destination_allowed(
            data, record('home', allowed={0, 1})))
        self.assertEqual(frozenset(), driver.destination_allowed(
            data, record('home')))
