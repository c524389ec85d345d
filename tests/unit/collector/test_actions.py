import datetime

from nova_numa_policy.collector import actions
from nova_numa_policy.contracts import exception
from tests import base as test_base
from tests.unit.collector import fakes


class LoadActionTest(test_base.TestCase):

    def test_a_documented_action_loads_with_an_aware_time(self):
        action = actions.load_action(fakes.make_action_payload(seq=7))
        self.assertEqual('compute-1', action['host'])
        self.assertEqual(7, action['seq'])
        self.assertEqual(fakes.at(7), action['generated_at'])
        self.assertEqual({'source_node': 0, 'target_node': 1, 'pages': 512},
                         action['details'])

    def test_a_time_without_zone_is_read_as_utc(self):
        action = actions.load_action(fakes.make_action_payload(
            generated_at=fakes.at(1).replace(tzinfo=None)))
        self.assertEqual(datetime.timezone.utc,
                         action['generated_at'].tzinfo)

    def test_a_newer_minor_version_drops_unknown_keys(self):
        action = actions.load_action(fakes.make_action_payload(
            version='1.4', cost_estimate=3))
        self.assertNotIn('cost_estimate', action)

    def test_an_unknown_kind_is_kept_for_newer_agents(self):
        action = actions.load_action(fakes.make_action_payload(
            kind='shrink_cache'))
        self.assertEqual('shrink_cache', action['kind'])

    def test_host_wide_actions_have_no_instance(self):
        action = actions.load_action(fakes.make_action_payload(
            instance_uuid=None))
        self.assertIsNone(action['instance_uuid'])

    def test_malformed_actions_are_refused_with_the_reason(self):
        cases = [
            ('not an object', ['a'], 'must be an object'),
            ('no seq', {'version': '1.0'}, 'lacks required keys'),
            ('major 2', fakes.make_action_payload(version='2.0'),
             'major version 2.0'),
            ('bad version', fakes.make_action_payload(version='one'),
             'MAJOR.MINOR'),
            ('empty host', fakes.make_action_payload(host=''), 'host'),
            ('control character in host',
             fakes.make_action_payload(host='c1\r\n'), 'host'),
            ('bool seq', fakes.make_action_payload(seq=True), 'seq'),
            ('negative seq', fakes.make_action_payload(seq=-1), 'seq'),
            ('bad kind', fakes.make_action_payload(kind='Drop Table'),
             'kind'),
            ('bad outcome', fakes.make_action_payload(outcome='maybe'),
             'outcome'),
            ('long reason', fakes.make_action_payload(reason='x' * 1025),
             'reason'),
            ('bad time', dict(fakes.make_action_payload(),
                              generated_at='noon'), 'ISO 8601'),
            ('time not a string', dict(fakes.make_action_payload(),
                                       generated_at=5), 'ISO 8601'),
            ('bad uuid', fakes.make_action_payload(instance_uuid='vm-1'),
             'not a UUID'),
            ('details not object', fakes.make_action_payload(details=[1]),
             'details'),
            ('nested detail', fakes.make_action_payload(
                details={'nodes': {'a': 1}}), 'detail nodes'),
            ('bad detail key', fakes.make_action_payload(
                details={'Bad Key': 1}), 'detail key'),
            ('too many details', fakes.make_action_payload(
                details={f'k{i}': i for i in range(33)}), 'at most 32'),
        ]
        for name, payload, message in cases:
            with self.subTest(name):
                exc = self.assertRaises(actions.MalformedAction,
                                        actions.load_action, payload)
                self.assertIn(message, str(exc))

    def test_a_malformed_action_is_a_malformed_report_for_consumers(self):
        self.assertRaises(exception.MalformedReport, actions.load_action, 1)
