"""A lone surrogate in any string of a report or action is malformed.

JSON's ``\\ud800`` escape reads as a Python string holding a surrogate,
which no UTF-8 text can carry: the scheduler's cache kept such a report
and the collector's database refused it, counted as ``failed``. Both
consumers now refuse it while checking, as ``malformed``, and nothing is
raised or logged as a traceback.
"""

from nova_numa_policy.collector import actions
from nova_numa_policy.objects import validation
from tests import report_factory
from tests.unit.collector import fakes
from tests.unit import test_report_edges as edges

LONE = '\ud800'
LOW = '\udfff'


class IsTextTest(edges.EdgeTestCase):

    def test_a_surrogate_anywhere_is_no_text(self):
        for value in (LONE, 'host' + LONE, LOW + 'host', 'h\u00f6st' + LOW,
                      '\ud83d\ude00'):
            self.assertFalse(validation.is_text(value), ascii(value))
            self.assertFalse(validation.is_name(value), ascii(value))

    def test_other_text_is_text(self):
        for value in ('host', 'h\u00f6st', '\U0001f600', '\ufffd', ''):
            self.assertTrue(validation.is_text(value), ascii(value))
        self.assertFalse(validation.is_text(b'host'))


class ReportsTest(edges.EdgeTestCase):

    def test_both_consumers_refuse_a_surrogate_in_the_host(self):
        self.assertRefusedByBoth(edges.signed(edges.primitive(
            host='compute' + LONE)))
        self.assertNoTraceback()
        self.assertEqual([], self.storage.list_hosts(10))

    def test_both_consumers_refuse_a_surrogate_in_the_agent_version(self):
        self.assertRefusedByBoth(edges.signed(edges.primitive(
            agent_version='1.0' + LONE)))
        self.assertNoTraceback()

    def test_every_string_field_refuses_a_surrogate(self):
        for path, name in (((), 'hypervisor_hostname'),
                           ((), 'agent_version'), (('nics', 0), 'name'),
                           (('nics', 0), 'physnet'),
                           (('nics', 0), 'irq_steering')):
            payload = edges.primitive()
            edges.data_of(payload, *path)[name] = 'x' + LOW
            self.assertRefusedByBoth(edges.signed(payload))
        self.assertNoTraceback()

    def test_a_surrogate_in_a_list_of_strings_is_refused(self):
        payload = edges.primitive()
        data = edges.data_of(payload)
        data['measurements'] = list(data.get('measurements') or []) + [LONE]
        self.assertRefusedByBoth(edges.signed(payload))

    def test_a_surrogate_in_an_instance_is_refused(self):
        payload = edges.primitive(instances=[report_factory.make_instance(
            memory_mb_per_node={'0' + LONE: 256})])
        self.assertRefusedByBoth(edges.signed(payload))

    def test_other_non_ascii_text_is_still_kept(self):
        self.assertKeptByBoth(edges.signed(edges.primitive(
            host='h\u00f6st-\U0001f600')))


class ActionsTest(edges.EdgeTestCase):

    def test_an_action_with_a_surrogate_is_malformed(self):
        for overrides in ({'host': 'compute-1' + LONE},
                          {'reason': 'moved' + LONE},
                          {'details': {'note': LOW}}):
            self.assertRaises(actions.MalformedAction, actions.load_action,
                              fakes.make_action_payload(**overrides))

    def test_the_collector_counts_it_malformed_not_failed(self):
        collector = self.consumers().collector
        payload = fakes.make_action_payload(host='compute-1' + LONE)
        collector.info({}, 'numa-policy-agent.probe',
                       actions.ACTION_EVENT_TYPE, payload, {})
        self.assertEqual({edges.MALFORMED: 1}, dict(collector.counters))
        self.assertNoTraceback()
