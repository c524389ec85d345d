"""HostReport: round trips, rolling-upgrade compatibility, bad input."""

import copy
import datetime
import json

from oslo_versionedobjects import fields
from oslo_versionedobjects import fixture as ovo_fixture

from nova_numa_policy.contracts import exception
from nova_numa_policy.objects import base
from nova_numa_policy.objects import report as report_obj
from nova_numa_policy.objects import validation as report_validation
from nova_numa_policy.objects import wire as report_wire
from tests import base as test_base
from tests import report_factory

DATA = 'nova_numa_policy_object.data'
VERSION = 'nova_numa_policy_object.version'

# The fingerprint of every object: a change to an object's fields without
# a version bump fails here, so no report silently changes on the wire.
OBJECT_FINGERPRINTS = {
    'NumaHostReport': '1.9-c8cfe002c71ceb970b403c2cf106fa4b',
    'NumaNodeReport': '1.3-7a9b1b09f85abba5d97b93a77aa72df3',
    'NumaNicReport': '1.1-fb9b711042464b6b4ba8880dead9278d',
    'NumaInstanceReport': '1.2-66b3be3b5de3561cd7d79820bee79994',
}


class FutureHostReport(report_obj.NumaHostReport):
    """What a newer agent would send: version 1.10 with one more field."""

    VERSION = '1.10'
    fields = dict(report_obj.NumaHostReport.fields,
                  power_watts=fields.IntegerField())
    DEFAULTS = dict(report_obj.NumaHostReport.DEFAULTS, power_watts=0)

    @classmethod
    def obj_name(cls):
        return 'NumaHostReport'

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if target_version in ('1.0', '1.1', '1.2', '1.3', '1.4', '1.5',
                              '1.6', '1.7', '1.8', '1.9'):
            primitive.pop('power_watts', None)


base.NumaPolicyObjectRegistry.register_if(False)(FutureHostReport)


class OldNodeReport(base.NumaPolicyObject):
    """What a consumer of report 1.5 knows of a node: version 1.0.

    Not a subclass of today's node: registering would give it back the
    fields it inherits.
    """

    VERSION = '1.0'
    fields = {name: field
              for name, field in report_obj.NumaNodeReport.fields.items()
              if name not in report_obj.NumaNodeReport.ADDED_IN}

    @classmethod
    def obj_name(cls):
        return 'NumaNodeReport'


class OldHostReport(report_obj.NumaHostReport):
    """What a consumer of report 1.5 reads."""

    VERSION = '1.5'
    CHILDREN = dict(report_obj.NumaHostReport.CHILDREN,
                    numa_nodes=OldNodeReport)

    @classmethod
    def obj_name(cls):
        return 'NumaHostReport'


class OldNicReport(base.NumaPolicyObject):
    """What a consumer of report 1.6 knows of a NIC: version 1.0."""

    VERSION = '1.0'
    fields = {name: field
              for name, field in report_obj.NumaNicReport.fields.items()
              if name not in report_obj.NumaNicReport.ADDED_IN}

    @classmethod
    def obj_name(cls):
        return 'NumaNicReport'


class OldNicsHostReport(report_obj.NumaHostReport):
    """What a consumer of report 1.6 reads."""

    VERSION = '1.6'
    CHILDREN = dict(report_obj.NumaHostReport.CHILDREN, nics=OldNicReport)

    @classmethod
    def obj_name(cls):
        return 'NumaHostReport'


class UntieredNodeReport(base.NumaPolicyObject):
    """What a consumer of report 1.7 knows of a node: version 1.1."""

    VERSION = '1.1'
    fields = {name: field
              for name, field in report_obj.NumaNodeReport.fields.items()
              if name not in ('memory_tier', 'demotable_mb')}
    DEFAULTS = {'floating_cpus': None, 'floating_load': None}

    @classmethod
    def obj_name(cls):
        return 'NumaNodeReport'


class UntieredHostReport(base.NumaPolicyObject):
    """What a consumer of report 1.7 reads: no tier, no demotion.

    Not a subclass of today's report either, for the same reason.
    """

    VERSION = '1.7'
    fields = {name: field
              for name, field in report_obj.NumaHostReport.fields.items()
              if name != 'memory_demotion'}
    DEFAULTS = {name: value
                for name, value in report_obj.NumaHostReport.DEFAULTS.items()
                if name != 'memory_demotion'}
    CHILDREN = dict(report_obj.NumaHostReport.CHILDREN,
                    numa_nodes=UntieredNodeReport)

    @classmethod
    def obj_name(cls):
        return 'NumaHostReport'


base.NumaPolicyObjectRegistry.register_if(False)(OldNodeReport)
base.NumaPolicyObjectRegistry.register_if(False)(OldHostReport)
base.NumaPolicyObjectRegistry.register_if(False)(OldNicReport)
base.NumaPolicyObjectRegistry.register_if(False)(OldNicsHostReport)
base.NumaPolicyObjectRegistry.register_if(False)(UntieredNodeReport)
base.NumaPolicyObjectRegistry.register_if(False)(UntieredHostReport)


def _future_report(**fields):
    current = report_factory.make_report()
    values = {name: getattr(current, name) for name in current.fields}
    values.update(power_watts=420, **fields)
    return FutureHostReport(**values)


class RoundTripTest(test_base.TestCase):

    def test_json_round_trip_keeps_every_field(self):
        original = report_factory.make_report()
        text = report_wire.report_to_json(original)
        back = report_wire.report_from_json(text, max_bytes=len(text))
        self.assertEqual(report_wire.dump_report(original),
                         report_wire.dump_report(back))
        self.assertEqual({'0': 1024, '1': 1024},
                         back.instances[0].memory_mb_per_node)
        self.assertEqual(original.generated_at, back.generated_at)

    def test_primitive_is_plain_json(self):
        primitive = report_wire.dump_report(report_factory.make_report())
        self.assertEqual(primitive, json.loads(json.dumps(primitive)))

    def test_optional_fields_default_when_absent(self):
        primitive = report_wire.dump_report(report_factory.make_report())
        for key in ('nics', 'instances', 'enforceable_policies'):
            del primitive[DATA][key]
        back = report_wire.load_report(primitive)
        self.assertEqual([], back.nics)
        self.assertEqual([], back.instances)
        self.assertEqual([], back.enforceable_policies)

    def test_freshness(self):
        report = report_factory.make_report()
        later = report.generated_at.replace(minute=1)
        self.assertTrue(report.is_fresh(later, ttl=60))
        self.assertFalse(report.is_fresh(later, ttl=59))


class VersionCompatibilityTest(test_base.TestCase):

    def test_object_fingerprints_need_a_version_bump_to_change(self):
        checker = ovo_fixture.ObjectVersionChecker(
            {name: [cls for cls in classes
                    if cls.__module__ == report_obj.__name__]
             for name, classes in
             base.NumaPolicyObjectRegistry.obj_classes().items()
             if name in OBJECT_FINGERPRINTS})
        expected, actual = checker.test_hashes(OBJECT_FINGERPRINTS)
        self.assertEqual(expected, actual,
                         'an object changed: bump its VERSION and update '
                         'OBJECT_FINGERPRINTS')

    def test_current_consumer_reads_a_newer_minor_report(self):
        primitive = report_wire.dump_report(_future_report())
        self.assertEqual('1.10', primitive[VERSION])
        back = report_wire.load_report(primitive)
        self.assertIsInstance(back, report_obj.NumaHostReport)
        self.assertNotIn('power_watts', back.fields)
        self.assertEqual('compute1', back.host)
        self.assertEqual(2, len(back.numa_nodes))

    def test_newer_agent_pinned_to_the_old_version(self):
        primitive = report_wire.dump_report(_future_report(),
                                            target_version='1.0')
        self.assertEqual('1.0', primitive[VERSION])
        self.assertNotIn('power_watts', primitive[DATA])
        back = report_wire.load_report(primitive)
        self.assertEqual('compute1', back.host)

    def test_newer_consumer_reads_an_older_report(self):
        primitive = report_wire.dump_report(report_factory.make_report())
        back = report_wire.load_report(primitive, cls=FutureHostReport)
        self.assertIsInstance(back, FutureHostReport)
        self.assertEqual(0, back.power_watts)
        self.assertEqual('compute1', back.host)

    def test_unknown_field_in_the_same_version_is_malformed(self):
        primitive = report_wire.dump_report(report_factory.make_report())
        primitive[DATA]['power_watts'] = 1
        self.assertRaises(exception.MalformedReport,
                          report_wire.load_report, primitive)

    def test_another_major_version_is_refused(self):
        primitive = report_wire.dump_report(report_factory.make_report())
        primitive[VERSION] = '2.0'
        exc = self.assertRaises(exception.MalformedReport,
                                report_wire.load_report, primitive)
        self.assertIn('major version', str(exc))

    def test_pinned_to_1_0_the_report_loses_boot_id_and_endings(self):
        primitive = report_wire.dump_report(report_factory.make_report(),
                                            target_version='1.0')
        self.assertNotIn('boot_id', primitive[DATA])
        instance = primitive[DATA]['instances'][0]
        self.assertEqual('1.0', instance[VERSION])
        self.assertNotIn('enforcement', instance[DATA])
        back = report_wire.load_report(primitive)
        self.assertIsNone(back.boot_id)
        self.assertIsNone(back.instances[0].enforcement)

    def test_pinned_to_1_1_the_report_loses_its_locality_signal(self):
        report = report_factory.make_report(locality_signal='hinting-faults')
        primitive = report_wire.dump_report(report, target_version='1.1')
        self.assertNotIn('locality_signal', primitive[DATA])
        self.assertIsNone(report_wire.load_report(primitive).locality_signal)
        self.assertEqual('hinting-faults', report_wire.load_report(
            report_wire.dump_report(report)).locality_signal)

    def test_a_signal_pinned_below_its_version_reads_as_counters(self):
        # A consumer older than a signal would drop the report; counters
        # are what it means to that consumer: memory bandwidth counts
        # accesses, and samples are scaled by their period to accesses.
        for signal, older in (('memory-bandwidth', '1.3'),
                              ('hardware-samples', '1.4')):
            report = report_factory.make_report(
                locality_signal=signal,
                measurements=['cpu-wait', signal])
            primitive = report_wire.dump_report(report,
                                                target_version=older)
            self.assertEqual('access-counters',
                             primitive[DATA]['locality_signal'])
            self.assertEqual(['access-counters', 'cpu-wait'],
                             primitive[DATA]['measurements'])
            self.assertEqual('access-counters', report_wire.load_report(
                primitive).locality_signal)
            current = report_wire.dump_report(report)
            self.assertEqual('1.9', current[VERSION])
            self.assertEqual(signal, report_wire.load_report(
                current).locality_signal)

    def test_an_unknown_locality_signal_is_malformed(self):
        primitive = report_wire.dump_report(report_factory.make_report())
        primitive[DATA]['locality_signal'] = 'crystal-ball'
        exc = self.assertRaises(exception.MalformedReport,
                                report_wire.load_report, primitive)
        self.assertIn('locality signal', str(exc))

    def test_pinned_to_1_2_the_report_loses_measurements_and_waits(self):
        report = report_factory.make_report(
            measurements=['cpu-wait', 'hinting-faults'])
        primitive = report_wire.dump_report(report, target_version='1.2')
        self.assertNotIn('measurements', primitive[DATA])
        instance = primitive[DATA]['instances'][0]
        self.assertEqual('1.1', instance[VERSION])
        self.assertNotIn('cpu_wait', instance[DATA])
        back = report_wire.load_report(primitive)
        self.assertEqual([], back.measurements)
        self.assertIsNone(back.instances[0].cpu_wait)
        back = report_wire.load_report(report_wire.dump_report(report))
        self.assertEqual(['cpu-wait', 'hinting-faults'], back.measurements)
        self.assertEqual(0.05, back.instances[0].cpu_wait)

    def test_an_unknown_measurement_is_malformed(self):
        primitive = report_wire.dump_report(report_factory.make_report())
        primitive[DATA]['measurements'] = ['cpu-wait', 'tea-leaves']
        exc = self.assertRaises(exception.MalformedReport,
                                report_wire.load_report, primitive)
        self.assertIn('tea-leaves', str(exc))

    def test_a_wait_share_outside_0_to_1_is_malformed(self):
        for wait in (-0.1, 1.5):
            primitive = report_wire.dump_report(report_factory.make_report())
            primitive[DATA]['instances'][0][DATA]['cpu_wait'] = wait
            exc = self.assertRaises(exception.MalformedReport,
                                    report_wire.load_report, primitive)
            self.assertIn('cpu_wait', str(exc))

    def test_a_node_says_what_guests_without_dedicated_cpus_may_use(self):
        back = report_wire.load_report(report_wire.dump_report(
            report_factory.make_report()))
        node = back.numa_nodes[1]
        self.assertEqual(([2, 3], [2], 0.5),
                         (node.cpus, node.floating_cpus, node.floating_load))

    def test_an_agent_of_1_5_says_nothing_and_every_cpu_floats(self):
        # What a 1.5 agent sends: its nodes are 1.0, without the fields.
        primitive = report_wire.dump_report(report_factory.make_report(),
                                            target_version='1.5')
        self.assertEqual('1.5', primitive[VERSION])
        node = primitive[DATA]['numa_nodes'][1]
        self.assertEqual('1.0', node[VERSION])
        self.assertNotIn('floating_cpus', node[DATA])
        self.assertNotIn('floating_load', node[DATA])
        data = report_wire.load_report_data(primitive)
        self.assertIsNone(data['numa_nodes'][1]['floating_cpus'])
        self.assertEqual(([2, 3], 0.25), report_obj.floating_capacity(
            data['numa_nodes'][1]))
        back = report_wire.load_report(primitive)
        self.assertIsNone(back.numa_nodes[1].floating_cpus)
        self.assertIsNone(back.numa_nodes[1].floating_load)

    def test_a_1_6_report_read_by_a_1_5_consumer_keeps_its_nodes(self):
        # A 1.5 consumer's node class is 1.0: a 1.1 node's new fields go.
        primitive = report_wire.dump_report(report_factory.make_report())
        self.assertEqual('1.3', primitive[DATA]['numa_nodes'][0][VERSION])
        back = report_wire.load_report(primitive, cls=OldHostReport)
        node = back.numa_nodes[0]
        self.assertEqual(([0, 1], 0.25), (node.cpus, node.cpu_load))
        self.assertFalse(node.obj_attr_is_set('floating_cpus'))
        self.assertFalse(node.obj_attr_is_set('floating_load'))
        self.assertFalse(node.obj_attr_is_set('memory_tier'))

    def test_a_wholly_dedicated_node_has_no_floating_load(self):
        report = report_factory.make_report()
        report.numa_nodes[1].floating_cpus = []
        report.numa_nodes[1].floating_load = None
        data = report_wire.load_report_data(report_wire.dump_report(report))
        self.assertEqual(([], None), report_obj.floating_capacity(
            data['numa_nodes'][1]))

    def test_a_nic_says_its_vectors_where_they_go_and_why(self):
        back = report_wire.load_report(report_wire.dump_report(
            report_factory.make_report()))
        nic = back.nics[0]
        self.assertEqual(([120, 121], [2, 3]), (nic.irqs, nic.irq_cpus))
        self.assertIn('steered to node 1', nic.irq_steering)

    def test_an_agent_of_1_6_says_nothing_of_vectors(self):
        primitive = report_wire.dump_report(report_factory.make_report(),
                                            target_version='1.6')
        self.assertEqual('1.6', primitive[VERSION])
        nic = primitive[DATA]['nics'][0]
        self.assertEqual('1.0', nic[VERSION])
        for name in ('irqs', 'irq_cpus', 'irq_steering'):
            self.assertNotIn(name, nic[DATA])
        # Its nodes keep what 1.6 added.
        self.assertEqual('1.1', primitive[DATA]['numa_nodes'][0][VERSION])
        data = report_wire.load_report_data(primitive)
        self.assertEqual(([], [], None), tuple(
            data['nics'][0][name]
            for name in ('irqs', 'irq_cpus', 'irq_steering')))
        back = report_wire.load_report(primitive)
        self.assertEqual(([], [], None), (back.nics[0].irqs,
                                          back.nics[0].irq_cpus,
                                          back.nics[0].irq_steering))

    def test_a_1_7_report_read_by_a_1_6_consumer_keeps_its_nics(self):
        primitive = report_wire.dump_report(report_factory.make_report())
        self.assertEqual('1.1', primitive[DATA]['nics'][0][VERSION])
        back = report_wire.load_report(primitive, cls=OldNicsHostReport)
        nic = back.nics[0]
        self.assertEqual(('ens1f0', 1), (nic.name, nic.numa_node))
        self.assertFalse(nic.obj_attr_is_set('irqs'))
        self.assertFalse(nic.obj_attr_is_set('irq_steering'))

    def _tiered_report(self):
        # The lab host's kernel: DRAM node 0 on top, node 1 a tier below.
        report = report_factory.make_report(memory_demotion=True)
        report.numa_nodes[1].memory_tier = 1
        return report

    def test_nodes_say_their_memory_tier_and_the_host_its_demotion(self):
        primitive = report_wire.dump_report(self._tiered_report())
        self.assertEqual('1.9', primitive[VERSION])
        self.assertEqual(['1.3', '1.3'], [
            node[VERSION] for node in primitive[DATA]['numa_nodes']])
        back = report_wire.load_report(primitive)
        self.assertEqual([0, 1], [n.memory_tier for n in back.numa_nodes])
        self.assertIs(True, back.memory_demotion)
        data = report_wire.load_report_data(primitive)
        self.assertEqual([0, 1], [report_obj.memory_tier(node)
                                  for node in data['numa_nodes']])
        self.assertIs(True, data['memory_demotion'])

    def test_a_host_that_does_not_say_reads_as_the_top_tier(self):
        report = report_factory.make_report(memory_demotion=None)
        for node in report.numa_nodes:
            node.memory_tier = None
        data = report_wire.load_report_data(report_wire.dump_report(report))
        self.assertEqual([None, None], [node['memory_tier']
                                        for node in data['numa_nodes']])
        self.assertEqual([0, 0], [report_obj.memory_tier(node)
                                  for node in data['numa_nodes']])
        self.assertIsNone(data['memory_demotion'])

    def test_pinned_to_1_7_or_1_6_the_report_says_nothing_of_tiers(self):
        for version, nics in (('1.7', '1.1'), ('1.6', '1.0')):
            with self.subTest(version):
                primitive = report_wire.dump_report(self._tiered_report(),
                                                    target_version=version)
                self.assertEqual(version, primitive[VERSION])
                self.assertNotIn('memory_demotion', primitive[DATA])
                node = primitive[DATA]['numa_nodes'][1]
                self.assertEqual('1.1', node[VERSION])
                self.assertNotIn('memory_tier', node[DATA])
                # What 1.6 added to nodes stays.
                self.assertEqual([2], node[DATA]['floating_cpus'])
                self.assertEqual(nics, primitive[DATA]['nics'][0][VERSION])
                # The current consumer reads it: nothing said, top tier.
                back = report_wire.load_report(primitive)
                self.assertIsNone(back.numa_nodes[1].memory_tier)
                self.assertIsNone(back.memory_demotion)
                data = report_wire.load_report_data(primitive)
                self.assertIsNone(data['numa_nodes'][1]['memory_tier'])
                self.assertEqual(0, report_obj.memory_tier(
                    data['numa_nodes'][1]))
                self.assertIsNone(data['memory_demotion'])

    def test_a_top_tier_node_says_what_a_lower_tier_may_take(self):
        report = self._tiered_report()
        report.numa_nodes[0].demotable_mb = 8192
        primitive = report_wire.dump_report(report)
        back = report_wire.load_report(primitive)
        self.assertEqual([8192, None],
                         [n.demotable_mb for n in back.numa_nodes])
        data = report_wire.load_report_data(primitive)
        self.assertEqual([8192, 0], [report_obj.demotable_mb(node)
                                     for node in data['numa_nodes']])

    def test_pinned_to_1_8_the_nodes_say_nothing_of_demotable_memory(self):
        report = self._tiered_report()
        report.numa_nodes[0].demotable_mb = 4096
        primitive = report_wire.dump_report(report, target_version='1.8')
        self.assertEqual('1.8', primitive[VERSION])
        node = primitive[DATA]['numa_nodes'][0]
        self.assertEqual('1.2', node[VERSION])
        self.assertNotIn('demotable_mb', node[DATA])
        # What 1.8 added stays; the current consumer reads nothing said.
        self.assertEqual(1, primitive[DATA]['numa_nodes'][1][DATA][
            'memory_tier'])
        data = report_wire.load_report_data(primitive)
        self.assertIsNone(data['numa_nodes'][0]['demotable_mb'])
        self.assertEqual(0, report_obj.demotable_mb(data['numa_nodes'][0]))

    def test_a_1_8_report_read_by_a_1_7_consumer_keeps_its_nodes(self):
        primitive = report_wire.dump_report(self._tiered_report())
        back = report_wire.load_report(primitive, cls=UntieredHostReport)
        node = back.numa_nodes[1]
        self.assertEqual(([2, 3], [2], 0.5),
                         (node.cpus, node.floating_cpus, node.floating_load))
        # Its node class is 1.1: the tier the node said is gone.
        self.assertFalse(node.obj_attr_is_set('memory_tier'))
        self.assertNotIn('memory_demotion', back.fields)
        self.assertEqual('compute1', back.host)

    def test_newer_nested_object_drops_its_new_fields(self):
        primitive = report_wire.dump_report(report_factory.make_report())
        nic = primitive[DATA]['nics'][0]
        nic[VERSION] = '1.4'
        nic[DATA]['sriov_vfs'] = 64
        back = report_wire.load_report(primitive)
        self.assertEqual('ens1f0', back.nics[0].name)


def _mutate(path, value):
    """Return a function that sets one place of a primitive."""
    def apply(primitive):
        target = primitive
        for key in path[:-1]:
            target = target[key]
        if value is _DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value
    return apply


_DELETE = object()
NODE0 = (DATA, 'numa_nodes', 0, DATA)
NIC0 = (DATA, 'nics', 0, DATA)
INST0 = (DATA, 'instances', 0, DATA)


class MalformedReportTest(test_base.TestCase):

    # (what is wrong, how the primitive is spoiled)
    CASES = [
        ('wrong_object_name', _mutate(('nova_numa_policy_object.name',),
                                      'ComputeNode')),
        ('wrong_namespace', _mutate(('nova_numa_policy_object.namespace',),
                                    'nova')),
        ('missing_data', _mutate((DATA,), _DELETE)),
        ('unreadable_version', _mutate((VERSION,), 'one')),
        ('missing_required_host', _mutate((DATA, 'host'), _DELETE)),
        ('missing_required_node_field', _mutate(NODE0 + ('cpus',), _DELETE)),
        ('seq_not_an_integer', _mutate((DATA, 'seq'), 'seven')),
        ('bad_timestamp', _mutate((DATA, 'generated_at'), 'yesterday')),
        ('zero_period', _mutate((DATA, 'period'), 0.0)),
        ('no_numa_nodes', _mutate((DATA, 'numa_nodes'), [])),
        ('nodes_not_a_list', _mutate((DATA, 'numa_nodes'), {'0': 1})),
        ('free_memory_above_total',
         _mutate(NODE0 + ('memory_free_mb',), 10 ** 9)),
        ('load_above_one', _mutate(NODE0 + ('cpu_load',), 1.5)),
        ('distance_row_too_short', _mutate(NODE0 + ('distances',), [10])),
        ('zero_distance', _mutate(NODE0 + ('distances',), [0, 21])),
        ('repeated_node_ids',
         _mutate((DATA, 'numa_nodes', 1, DATA, 'id'), 0)),
        ('nic_on_unknown_node',
         _mutate((DATA, 'nics', 0, DATA, 'numa_node'), 9)),
        ('empty_host_name', _mutate((DATA, 'host'), '')),
        ('overlong_host_name', _mutate((DATA, 'host'), 'h' * 256)),
        # The REST API could not be asked about it (rest/validation.py).
        ('control_character_in_host_name',
         _mutate((DATA, 'host'), 'compute-1\x1b[2J')),
        ('control_character_in_physnet',
         _mutate((DATA, 'nics', 0, DATA, 'physnet'), 'phys\nnet')),
        ('instance_uuid_not_a_uuid', _mutate(INST0 + ('uuid',), 'vm-1')),
        ('unknown_requested_policy',
         _mutate(INST0 + ('requested_policy',), 'bogus')),
        ('auto_is_never_what_was_applied',
         _mutate(INST0 + ('applied_policy',), 'auto')),
        ('memory_on_unknown_node',
         _mutate(INST0 + ('memory_mb_per_node',), {'5': 10})),
        ('unknown_enforceable_policy',
         _mutate((DATA, 'enforceable_policies'), ['warp'])),
        # What the probes of issue 14 sent, each once accepted or raising
        # something else than MalformedReport.
        ('memory_key_of_another_scripts_digit',
         _mutate(INST0 + ('memory_mb_per_node',), {'\u00b2': 10})),
        ('memory_key_arabic_indic_zero',
         _mutate(INST0 + ('memory_mb_per_node',), {'\u0660': 10})),
        ('time_offset_with_seconds',
         _mutate((DATA, 'generated_at'), '2026-11-22T08:00:00+01:00:30')),
        ('time_beyond_utc_range',
         _mutate((DATA, 'generated_at'), '9999-12-31T23:59:59-01:00')),
        ('infinite_io_rate', _mutate(INST0 + ('io_rate',), float('inf'))),
        ('nan_load', _mutate(NODE0 + ('cpu_load',), float('nan'))),
        ('infinite_period', _mutate((DATA, 'period'), float('inf'))),
        ('memory_of_2_70_mb', _mutate(NODE0 + ('memory_total_mb',), 2 ** 70)),
        ('instance_memory_of_2_70_mb',
         _mutate(INST0 + ('memory_mb_per_node',), {'0': 2 ** 70})),
        ('seq_of_2_63', _mutate((DATA, 'seq'), 2 ** 63)),
        ('negative_cpu', _mutate(NODE0 + ('cpus',), [-1, 1])),
        ('repeated_cpu_in_a_node', _mutate(NODE0 + ('cpus',), [0, 0])),
        ('cpu_on_two_nodes', _mutate(NODE0 + ('cpus',), [2, 3])),
        ('vcpu_on_a_cpu_the_host_lacks',
         _mutate(INST0 + ('vcpu_cpus',), [0, 4000])),
        ('repeated_instance', lambda p: p[DATA]['instances'].append(
            copy.deepcopy(p[DATA]['instances'][0]))),
        ('unknown_enforcement_ending',
         _mutate(INST0 + ('enforcement',), 'half way')),
        ('boot_id_not_a_uuid', _mutate((DATA, 'boot_id'), 'boot')),
        ('node_id_beyond_any_kernel', _mutate(NODE0 + ('id',), 5000)),
        ('negative_nic_speed',
         _mutate((DATA, 'nics', 0, DATA, 'speed_mbps'), -1)),
        ('floating_cpu_not_on_its_node',
         _mutate(NODE0 + ('floating_cpus',), [0, 2])),
        ('repeated_floating_cpu', _mutate(NODE0 + ('floating_cpus',), [0, 0])),
        ('floating_cpus_not_a_list', _mutate(NODE0 + ('floating_cpus',), 0)),
        ('floating_load_above_one', _mutate(NODE0 + ('floating_load',), 1.5)),
        ('negative_floating_load',
         _mutate(NODE0 + ('floating_load',), -0.1)),
        ('nan_floating_load',
         _mutate(NODE0 + ('floating_load',), float('nan'))),
        ('floating_cpus_without_their_load',
         _mutate(NODE0 + ('floating_load',), None)),
        ('a_load_of_no_floating_cpu', _mutate(NODE0 + ('floating_cpus',), [])),
        ('floating_load_without_floating_cpus',
         _mutate(NODE0 + ('floating_cpus',), None)),
        ('repeated_irq', _mutate(NIC0 + ('irqs',), [120, 120])),
        ('negative_irq', _mutate(NIC0 + ('irqs',), [-1])),
        ('irq_beyond_any_kernel',
         _mutate(NIC0 + ('irqs',), [report_obj.MAX_IRQ + 1])),
        ('irqs_not_a_list', _mutate(NIC0 + ('irqs',), 120)),
        ('too_many_irqs', _mutate(
            NIC0 + ('irqs',), list(range(report_obj.MAX_NIC_IRQS + 1)))),
        ('irq_cpu_the_host_lacks', _mutate(NIC0 + ('irq_cpus',), [2, 99])),
        ('repeated_irq_cpu', _mutate(NIC0 + ('irq_cpus',), [2, 2])),
        ('empty_irq_steering', _mutate(NIC0 + ('irq_steering',), '')),
        ('irq_steering_of_two_lines',
         _mutate(NIC0 + ('irq_steering',), 'steered\nrm -rf')),
        ('irq_steering_too_long', _mutate(
            NIC0 + ('irq_steering',), 'x' * (report_obj.MAX_VERDICT_LENGTH
                                             + 1))),
        ('negative_memory_tier', _mutate(NODE0 + ('memory_tier',), -1)),
        ('memory_tier_beyond_any_host', _mutate(
            NODE0 + ('memory_tier',), report_obj.MAX_MEMORY_TIER + 1)),
        ('memory_tier_not_an_integer',
         _mutate(NODE0 + ('memory_tier',), 'fast')),
        ('memory_tier_a_boolean', _mutate(NODE0 + ('memory_tier',), True)),
        # The factory's node 0 has 8192 of 16384 MB in use.
        ('negative_demotable_memory',
         _mutate(NODE0 + ('demotable_mb',), -1)),
        ('demotable_memory_beyond_what_is_in_use',
         _mutate(NODE0 + ('demotable_mb',), 8193)),
        ('demotable_memory_not_an_integer',
         _mutate(NODE0 + ('demotable_mb',), 'cold')),
        ('memory_demotion_not_a_boolean',
         _mutate((DATA, 'memory_demotion'), 'true')),
        ('memory_demotion_a_number', _mutate((DATA, 'memory_demotion'), 1)),
        ('too_many_nics', _mutate(
            (DATA, 'nics'),
            [report_wire.dump_report(report_factory.make_report())
             [DATA]['nics'][0]] * (report_obj.MAX_NICS + 1))),
    ]

    def test_each_malformed_report_raises_the_one_exception(self):
        pristine = report_wire.dump_report(report_factory.make_report())
        for name, spoil in self.CASES:
            primitive = copy.deepcopy(pristine)
            spoil(primitive)
            for read in (report_wire.load_report,
                         report_wire.load_report_data):
                try:
                    read(primitive)
                except exception.MalformedReport:
                    continue
                except Exception as exc:
                    self.fail(f'{name}: {read.__name__} raised {exc!r}')
                self.fail(f'{name}: {read.__name__} accepted it')

    def test_the_pristine_report_is_accepted(self):
        # Guards the table above: each case fails for its own reason only.
        report_wire.load_report(
            report_wire.dump_report(report_factory.make_report()))

    def test_not_an_object(self):
        for value in (None, [], 'report', 42):
            self.assertRaises(exception.MalformedReport,
                              report_wire.load_report, value)

    def test_oversized_json_is_refused_before_parsing(self):
        text = report_wire.report_to_json(report_factory.make_report())
        exc = self.assertRaises(exception.MalformedReport,
                                report_wire.report_from_json, text,
                                max_bytes=len(text) - 1)
        self.assertIn('exceeds', str(exc))

    def test_invalid_json(self):
        self.assertRaises(exception.MalformedReport,
                          report_wire.report_from_json, '{"a": ', 100)

    def test_too_many_instances(self):
        instances = [report_factory.make_instance(
            uuid='00000000-0000-4000-8000-%012d' % i)
            for i in range(report_obj.MAX_INSTANCES + 1)]
        primitive = report_wire.dump_report(
            report_factory.make_report(instances=instances))
        self.assertRaises(exception.MalformedReport,
                          report_wire.load_report, primitive)


class TimeAndOrderTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.now = report_factory.make_report().generated_at

    def test_a_report_ahead_by_more_than_the_skew_is_refused(self):
        ahead = self.now + datetime.timedelta(seconds=301)
        self.assertRaises(exception.ReportFromTheFuture,
                          report_validation.check_time, ahead, self.now, 300)
        report_validation.check_time(
            self.now + datetime.timedelta(seconds=299), self.now, 300)

    def test_within_one_boot_the_sequence_decides_whatever_the_clock(self):
        earlier = self.now - datetime.timedelta(hours=1)
        self.assertTrue(report_obj.supersedes(('b', 8, earlier),
                                              ('b', 7, self.now)))
        self.assertFalse(report_obj.supersedes(('b', 7, self.now),
                                               ('b', 7, self.now)))

    def test_across_boots_the_time_decides(self):
        later = self.now + datetime.timedelta(seconds=1)
        # A restarted agent starts its sequence again.
        self.assertTrue(report_obj.supersedes(('new', 1, later),
                                              ('old', 900, self.now)))
        self.assertFalse(report_obj.supersedes(('new', 1, self.now),
                                               ('old', 900, later)))
        self.assertTrue(report_obj.supersedes((None, 2, self.now),
                                              (None, 1, self.now)))

    def test_times_are_read_in_utc(self):
        data = report_wire.load_report_data(report_wire.dump_report(
            report_factory.make_report()))
        self.assertEqual(datetime.timezone.utc, data['generated_at'].tzinfo)
