"""HostReport: round trips, rolling-upgrade compatibility, bad input."""

import copy
import json

from oslo_versionedobjects import fields
from oslo_versionedobjects import fixture as ovo_fixture
import testtools

from nova_numa_policy import exception
from nova_numa_policy.objects import base
from nova_numa_policy.objects import report as report_obj
from tests import report_factory

DATA = 'nova_numa_policy_object.data'
VERSION = 'nova_numa_policy_object.version'

# The fingerprint of every object: a change to an object's fields without
# a version bump fails here, so no report silently changes on the wire.
OBJECT_FINGERPRINTS = {
    'NumaHostReport': '1.0-731f98aa544ec293f4952f39d03fbf73',
    'NumaNodeReport': '1.0-f78e3f67dd4a4d3fbba359d03bf22c11',
    'NumaNicReport': '1.0-35807ac8be78b380438ee8177f88e6ed',
    'NumaInstanceReport': '1.0-bd15a3e32c41f5cc04eb5d26902f1ced',
}


class FutureHostReport(report_obj.NumaHostReport):
    """What a newer agent would send: version 1.1 with one more field."""

    VERSION = '1.1'
    fields = dict(report_obj.NumaHostReport.fields,
                  power_watts=fields.IntegerField())
    DEFAULTS = dict(report_obj.NumaHostReport.DEFAULTS, power_watts=0)

    @classmethod
    def obj_name(cls):
        return 'NumaHostReport'

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if target_version == '1.0':
            primitive.pop('power_watts', None)


base.NumaPolicyObjectRegistry.register_if(False)(FutureHostReport)


def _future_report(**fields):
    current = report_factory.make_report()
    values = {name: getattr(current, name) for name in current.fields}
    values.update(power_watts=420, **fields)
    return FutureHostReport(**values)


class RoundTripTest(testtools.TestCase):

    def test_json_round_trip_keeps_every_field(self):
        original = report_factory.make_report()
        text = report_obj.report_to_json(original)
        back = report_obj.report_from_json(text, max_bytes=len(text))
        self.assertEqual(report_obj.dump_report(original),
                         report_obj.dump_report(back))
        self.assertEqual({'0': 1024, '1': 1024},
                         back.instances[0].memory_mb_per_node)
        self.assertEqual(original.generated_at, back.generated_at)

    def test_primitive_is_plain_json(self):
        primitive = report_obj.dump_report(report_factory.make_report())
        self.assertEqual(primitive, json.loads(json.dumps(primitive)))

    def test_optional_fields_default_when_absent(self):
        primitive = report_obj.dump_report(report_factory.make_report())
        for key in ('nics', 'instances', 'enforceable_policies'):
            del primitive[DATA][key]
        back = report_obj.load_report(primitive)
        self.assertEqual([], back.nics)
        self.assertEqual([], back.instances)
        self.assertEqual([], back.enforceable_policies)

    def test_freshness(self):
        report = report_factory.make_report()
        later = report.generated_at.replace(minute=1)
        self.assertTrue(report.is_fresh(later, ttl=60))
        self.assertFalse(report.is_fresh(later, ttl=59))


class VersionCompatibilityTest(testtools.TestCase):

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
        primitive = report_obj.dump_report(_future_report())
        self.assertEqual('1.1', primitive[VERSION])
        back = report_obj.load_report(primitive)
        self.assertIsInstance(back, report_obj.NumaHostReport)
        self.assertNotIn('power_watts', back.fields)
        self.assertEqual('compute1', back.host)
        self.assertEqual(2, len(back.numa_nodes))

    def test_newer_agent_pinned_to_the_old_version(self):
        primitive = report_obj.dump_report(_future_report(),
                                           target_version='1.0')
        self.assertEqual('1.0', primitive[VERSION])
        self.assertNotIn('power_watts', primitive[DATA])
        back = report_obj.load_report(primitive)
        self.assertEqual('compute1', back.host)

    def test_newer_consumer_reads_an_older_report(self):
        primitive = report_obj.dump_report(report_factory.make_report())
        back = report_obj.load_report(primitive, cls=FutureHostReport)
        self.assertIsInstance(back, FutureHostReport)
        self.assertEqual(0, back.power_watts)
        self.assertEqual('compute1', back.host)

    def test_unknown_field_in_the_same_version_is_malformed(self):
        primitive = report_obj.dump_report(report_factory.make_report())
        primitive[DATA]['power_watts'] = 1
        self.assertRaises(exception.MalformedReport,
                          report_obj.load_report, primitive)

    def test_another_major_version_is_refused(self):
        primitive = report_obj.dump_report(report_factory.make_report())
        primitive[VERSION] = '2.0'
        exc = self.assertRaises(exception.MalformedReport,
                                report_obj.load_report, primitive)
        self.assertIn('major version', str(exc))

    def test_newer_nested_object_drops_its_new_fields(self):
        primitive = report_obj.dump_report(report_factory.make_report())
        nic = primitive[DATA]['nics'][0]
        nic[VERSION] = '1.4'
        nic[DATA]['sriov_vfs'] = 64
        back = report_obj.load_report(primitive)
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
INST0 = (DATA, 'instances', 0, DATA)


class MalformedReportTest(testtools.TestCase):

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
        ('instance_uuid_not_a_uuid', _mutate(INST0 + ('uuid',), 'vm-1')),
        ('unknown_requested_policy',
         _mutate(INST0 + ('requested_policy',), 'bogus')),
        ('auto_is_never_what_was_applied',
         _mutate(INST0 + ('applied_policy',), 'auto')),
        ('memory_on_unknown_node',
         _mutate(INST0 + ('memory_mb_per_node',), {'5': 10})),
        ('unknown_enforceable_policy',
         _mutate((DATA, 'enforceable_policies'), ['warp'])),
        ('too_many_nics', _mutate(
            (DATA, 'nics'),
            [report_obj.dump_report(report_factory.make_report())
             [DATA]['nics'][0]] * (report_obj.MAX_NICS + 1))),
    ]

    def test_each_malformed_report_raises_the_one_exception(self):
        pristine = report_obj.dump_report(report_factory.make_report())
        for name, spoil in self.CASES:
            primitive = copy.deepcopy(pristine)
            spoil(primitive)
            self.assertRaises(exception.MalformedReport,
                              report_obj.load_report, primitive)

    def test_the_pristine_report_is_accepted(self):
        # Guards the table above: each case fails for its own reason only.
        report_obj.load_report(
            report_obj.dump_report(report_factory.make_report()))

    def test_not_an_object(self):
        for value in (None, [], 'report', 42):
            self.assertRaises(exception.MalformedReport,
                              report_obj.load_report, value)

    def test_oversized_json_is_refused_before_parsing(self):
        text = report_obj.report_to_json(report_factory.make_report())
        exc = self.assertRaises(exception.MalformedReport,
                                report_obj.report_from_json, text,
                                max_bytes=len(text) - 1)
        self.assertIn('exceeds', str(exc))

    def test_invalid_json(self):
        self.assertRaises(exception.MalformedReport,
                          report_obj.report_from_json, '{"a": ', 100)

    def test_too_many_instances(self):
        instances = [report_factory.make_instance(
            uuid='00000000-0000-4000-8000-%012d' % i)
            for i in range(report_obj.MAX_INSTANCES + 1)]
        primitive = report_obj.dump_report(
            report_factory.make_report(instances=instances))
        self.assertRaises(exception.MalformedReport,
                          report_obj.load_report, primitive)
