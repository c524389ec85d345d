"""The notification endpoint, on a real SQLite database."""

from unittest import mock

from oslo_db import exception as db_exc
import testtools

from nova_numa_policy.collector import actions
from nova_numa_policy.collector import listener
from tests.unit.collector import base
from tests.unit.collector import fakes

MAX_BYTES = 1024 * 1024


class EndpointTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.storage = self.useFixture(base.SqliteStorage()).storage
        self.sleep = mock.Mock()
        self.endpoint = listener.CollectorEndpoint(
            self.storage, MAX_BYTES, db_retries=2, requeue_delay=1.5,
            retry_interval=0, clock=lambda: fakes.at(100), sleep=self.sleep)

    def _info(self, payload, event_type='numa_policy.report'):
        return self.endpoint.info({}, 'numa-policy-agent.compute-1',
                                  event_type, payload, {})

    def test_a_report_is_stored_and_acknowledged(self):
        self.assertEqual(listener.HANDLED, self._info(fakes.make_payload()))
        self.assertEqual(1, self.storage.get_host('compute-1')['seq'])
        self.assertEqual(1, self.endpoint.counters['reports_stored'])

    def test_a_redelivered_report_is_counted_as_a_duplicate(self):
        self._info(fakes.make_payload())
        self.assertEqual(listener.HANDLED, self._info(fakes.make_payload()))
        self.assertEqual(1, self.endpoint.counters['reports_duplicate'])

    def test_an_action_is_stored(self):
        self.assertEqual(listener.HANDLED, self._info(
            fakes.make_action_payload(), actions.ACTION_EVENT_TYPE))
        self.assertEqual(1, len(self.storage.list_actions(10)))
        self.assertEqual(1, self.endpoint.counters['actions_stored'])

    def test_malformed_payloads_are_dropped_and_counted(self):
        bad_report = fakes.make_payload()
        bad_report['nova_numa_policy_object.data']['seq'] = -1
        for payload, event_type in (
                (bad_report, 'numa_policy.report'),
                ('{"not": "a report"}', 'numa_policy.report'),
                ({'version': '9.0'}, actions.ACTION_EVENT_TYPE)):
            self.assertEqual(listener.HANDLED, self._info(payload,
                                                          event_type))
        self.assertEqual(3, self.endpoint.counters['malformed'])
        self.assertEqual([], self.storage.list_hosts(10))
        self.assertEqual([], self.storage.list_actions(10))

    def test_every_priority_is_read(self):
        for priority in ('audit', 'debug', 'warn', 'error', 'critical',
                         'sample'):
            getattr(self.endpoint, priority)({}, 'agent', 'numa_policy.x',
                                             'garbage', {})
        self.assertEqual(6, self.endpoint.counters['malformed'])

    def test_a_database_outage_is_retried_then_requeued_after_a_pause(self):
        with mock.patch.object(
                self.storage, 'store_report',
                side_effect=db_exc.DBConnectionError('gone')) as store:
            self.assertEqual(listener.REQUEUE,
                             self._info(fakes.make_payload()))
        self.assertEqual(3, store.call_count)
        self.sleep.assert_called_once_with(1.5)
        self.assertEqual(1, self.endpoint.counters['requeued'])

    def test_a_database_back_within_the_retries_stores_the_report(self):
        real = self.storage.store_report
        with mock.patch.object(
                self.storage, 'store_report',
                side_effect=_fail_then(db_exc.DBDeadlock('busy'), real)):
            self.assertEqual(listener.HANDLED,
                             self._info(fakes.make_payload()))
        self.assertEqual(1, self.storage.get_host('compute-1')['seq'])
        self.sleep.assert_not_called()

    def test_an_unexpected_error_drops_the_message_and_keeps_running(self):
        with mock.patch.object(self.storage, 'store_report',
                               side_effect=RuntimeError('bug')):
            self.assertEqual(listener.HANDLED,
                             self._info(fakes.make_payload()))
        self.assertEqual(1, self.endpoint.counters['failed'])
        self.assertEqual(listener.HANDLED, self._info(fakes.make_payload()))
        self.assertEqual(1, self.endpoint.counters['reports_stored'])


def _fail_then(error, call):
    calls = []

    def side_effect(*args):
        calls.append(args)
        if len(calls) == 1:
            raise error
        return call(*args)
    return side_effect
