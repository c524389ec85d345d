"""The notification endpoint, on a real SQLite database."""

from unittest import mock

import fixtures
from oslo_db import exception as db_exc

from nova_numa_policy.collector import actions
from nova_numa_policy.collector import listener
from nova_numa_policy.objects import signing
from tests import base as test_base
from tests.unit.collector import base
from tests.unit.collector import fakes

MAX_BYTES = 1024 * 1024
DATA = 'nova_numa_policy_object.data'


class EndpointTest(test_base.TestCase):

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


class HostileInputTest(test_base.TestCase):
    """What issue 14's probes sent the collector, and what it does now."""

    def setUp(self):
        super().setUp()
        self.storage = self.useFixture(base.SqliteStorage()).storage
        self.sleep = mock.Mock()
        self.monotonic = mock.Mock(return_value=0.0)

    def endpoint(self, **kwargs):
        return listener.CollectorEndpoint(
            self.storage, MAX_BYTES, db_retries=0, requeue_delay=1.0,
            retry_interval=0, clock=lambda: fakes.at(100), sleep=self.sleep,
            monotonic=self.monotonic, **kwargs)

    def info(self, endpoint, payload):
        return endpoint.info({}, 'numa-policy-agent.compute-1',
                             'numa_policy.report', payload, {})

    def test_a_poison_payload_is_counted_once_and_the_next_stored(self):
        endpoint = self.endpoint()
        poison = fakes.make_payload()
        instance = poison[DATA]['instances'][0][DATA]
        instance['memory_mb_per_node'] = {'\u00b2': 1}
        self.assertEqual(listener.HANDLED, self.info(endpoint, poison))
        odd_time = fakes.make_payload(seq=2)
        odd_time[DATA]['generated_at'] = '2026-01-01T00:00:00+01:00:30'
        self.assertEqual(listener.HANDLED, self.info(endpoint, odd_time))
        self.assertEqual(2, endpoint.counters['malformed'])
        self.assertEqual(listener.HANDLED,
                         self.info(endpoint, fakes.make_payload(seq=3)))
        self.assertEqual(3, self.storage.get_host('compute-1')['seq'])

    def test_a_report_from_the_future_is_dropped(self):
        endpoint = self.endpoint(max_skew=60)
        ahead = fakes.make_payload(generated_at=fakes.at(100 + 61))
        self.assertEqual(listener.HANDLED, self.info(endpoint, ahead))
        self.assertEqual(1, endpoint.counters['from the future'])
        self.assertEqual([], self.storage.list_hosts(10))

    def test_with_a_secret_only_reports_signed_with_it_are_stored(self):
        endpoint = self.endpoint(secrets=('new', 'old'))
        payload = fakes.make_payload()
        for sent in (payload, signing.sign(payload, 'stolen')):
            self.assertEqual(listener.HANDLED, self.info(endpoint, sent))
        self.assertEqual({'unsigned': 1, 'bad signature': 1},
                         {k: v for k, v in endpoint.counters.items()
                          if k in ('unsigned', 'bad signature')})
        self.assertEqual([], self.storage.list_hosts(10))
        self.info(endpoint, signing.sign(payload, 'old'))  # rotation
        self.assertEqual(1, endpoint.counters['reports_stored'])

    def test_an_unreadable_payload_of_any_kind_is_counted(self):
        endpoint = self.endpoint()
        deep = []
        for _ in range(100000):
            deep = [deep]
        for payload in ('[' * 100000, {'a': deep}, b'bytes', 12):
            self.assertEqual(listener.HANDLED, self.info(endpoint, payload))
        self.assertEqual(4, sum(endpoint.counters.values()))

    def test_transient_refusals_are_requeued_for_a_bounded_time(self):
        endpoint = self.endpoint(requeue_timeout=600)
        with mock.patch.object(self.storage, 'store_report',
                               side_effect=db_exc.DBConnectionError('gone')):
            for now in (0.0, 300.0, 600.0):
                self.monotonic.return_value = now
                self.assertEqual(listener.REQUEUE,
                                 self.info(endpoint, fakes.make_payload()))
            self.monotonic.return_value = 601.0
            self.assertEqual(listener.HANDLED,
                             self.info(endpoint, fakes.make_payload()))
        self.assertEqual(3, endpoint.counters['requeued'])
        self.assertEqual(1, endpoint.counters['requeue limit'])

    def test_refused_credentials_are_an_alarm_not_a_loss(self):
        denied = db_exc.DBError(_Pymysql(1045, "Access denied for user "
                                         "'numa'@'localhost'"))
        endpoint = self.endpoint()
        log = self.useFixture(fixtures.FakeLogger())
        with mock.patch.object(self.storage, 'store_report',
                               side_effect=denied):
            self.assertEqual(listener.REQUEUE,
                             self.info(endpoint, fakes.make_payload()))
        self.assertEqual(1, endpoint.counters['database refused access'])
        self.assertIn("refused the collector's credentials", log.output)
        self.assertEqual(listener.HANDLED,
                         self.info(endpoint, fakes.make_payload()))
        self.assertEqual(1, endpoint.counters['reports_stored'])


class _Pymysql(Exception):
    """As PyMySQL raises: (code, message)."""


def _fail_then(error, call):
    calls = []

    def side_effect(*args):
        calls.append(args)
        if len(calls) == 1:
            raise error
        return call(*args)
    return side_effect
