"""Agents' notifications through real RabbitMQ into MariaDB, out of the API.

Each test has its own database, topic and listener pool, dropped, deleted
and stopped at cleanup even when the test fails.
"""

import time

import fixtures
from oslo_db.sqlalchemy import test_migrations
import sqlalchemy as sa

from nova_numa_policy.collector import actions
from nova_numa_policy.collector import cmd
from nova_numa_policy.collector import db
from nova_numa_policy.collector import migration
from nova_numa_policy.collector import models
from nova_numa_policy.rest import app
from tests import base as test_base
from tests.functional.collector import fixtures as svc
from tests.unit.collector import fakes
from tests.unit.rest import base as rest_base

REPORT = 'numa_policy.report'
DATA = 'nova_numa_policy_object.data'


def _skip_unless_reachable(*urls):
    for url in urls:
        ok, why = svc.reachable(url)
        if not ok:
            raise test_base.TestCase.skipException(
                f'this test needs the real service: {why}')


class CollectorTestBase(test_base.TestCase):

    def setUp(self):
        super().setUp()
        _skip_unless_reachable(svc.MYSQL_URL, svc.TRANSPORT_URL)
        self.database = self.useFixture(svc.MariaDBDatabase())
        self.queues = self.useFixture(svc.RabbitQueues())
        migration.upgrade_url(self.database.url)
        self.conf = self.useFixture(rest_base.NoauthConf()).conf
        self.conf.set_override('topic', self.queues.topic,
                               'numa_policy_reports')
        self.conf.set_override('pool', self.queues.pool,
                               'numa_policy_collector')
        self.conf.set_override('requeue_delay', 0.2, 'numa_policy_collector')
        self.conf.set_override('db_retries', 0, 'numa_policy_collector')
        self.conf.set_override('connection', self.database.url,
                               'numa_policy_collector')
        # A reader of its own, as the API runs in another process.
        self.reader = db.Storage(self.database.url)
        self.addCleanup(self.reader.dispose)

    def start_collector(self, transport_url=svc.TRANSPORT_URL):
        import oslo_messaging
        transport = oslo_messaging.get_notification_transport(
            self.conf, url=transport_url)
        self.addCleanup(transport.cleanup)
        collector = cmd.Collector(self.conf, transport=transport)
        collector.start()
        self.addCleanup(collector.stop)
        return collector

    def notifier(self):
        return self.useFixture(svc.Notifier(self.conf, self.queues.topic))

    def first_report_stored(self, collector):
        """(counters, notifier) once a first report of compute-1 is in."""
        counters = collector.endpoint.counters
        notifier = self.notifier()
        notifier.info(REPORT, fakes.make_payload(seq=1))
        svc.wait_for(lambda: counters['reports_stored'] == 1,
                     what='the first report')
        return counters, notifier


class EndToEndTest(CollectorTestBase):

    def test_reports_and_actions_reach_the_api(self):
        # The listener runs deliveries in parallel threads: the redelivery
        # may race the original and lose on the unique key; one in-process
        # retry then finds it stored.
        self.conf.set_override('db_retries', 1, 'numa_policy_collector')
        collector = self.start_collector()
        counters = collector.endpoint.counters
        notifier = self.notifier()
        notifier.info(REPORT, fakes.make_payload(host='compute-1', seq=1))
        # compute-2's node 1 is a lower memory tier; compute-1's agent
        # does not say.
        notifier.info(REPORT, fakes.make_payload(
            host='compute-2', seq=1, instances=[
                fakes.make_instance(fakes.UUID_B, requested='auto',
                                    applied='first-touch',
                                    memory={'1': 2048})],
            tiers={0: 0, 1: 1}, demotion=False))
        # A redelivery and a malformed report: stored once, dropped.
        notifier.info(REPORT, fakes.make_payload(host='compute-1', seq=1))
        notifier.info(REPORT, {'nova_numa_policy_object.name': 'Nope'})
        notifier.info(actions.ACTION_EVENT_TYPE,
                      fakes.make_action_payload(host='compute-1', seq=1))
        expected = {'reports_stored': 2, 'reports_duplicate': 1,
                    'malformed': 1, 'actions_stored': 1}
        svc.wait_for(lambda: all(counters[k] >= v
                                 for k, v in expected.items()),
                     what='five notifications handled')
        self.assertEqual(expected, {k: counters[k] for k in expected})
        self.assertEqual(0, counters['failed'])

        api = app.build_app(self.conf, self.reader)

        def get(path, headers=rest_base.ADMIN):
            import webob
            return webob.Request.blank(path, headers=headers).get_response(
                api)

        hosts = get('/v1/hosts').json['hosts']
        self.assertEqual(['compute-1', 'compute-2'],
                         [h['host'] for h in hosts])
        host = get('/v1/hosts/compute-2').json['host']
        self.assertEqual([0, 2048], [n['instance_memory_mb']
                                     for n in host['numa_nodes']])
        self.assertEqual(([0, 1], False), (
            [n['memory_tier'] for n in host['numa_nodes']],
            host['memory_demotion']))
        host = get('/v1/hosts/compute-1').json['host']
        self.assertEqual(([None, None], None), (
            [n['memory_tier'] for n in host['numa_nodes']],
            host['memory_demotion']))
        instance = get(f'/v1/instances/{fakes.UUID_B}').json['instance']
        self.assertEqual(('auto', 'first-touch', True, {'1': 2048}),
                         (instance['requested_policy'],
                          instance['applied_policy'],
                          instance['policy_applied'],
                          instance['memory_mb_per_node']))
        self.assertEqual(
            ['move_pages'],
            [a['kind'] for a in get('/v1/actions').json['actions']])
        self.assertEqual(1, len(get('/v1/hosts/compute-1/reports').json[
            'reports']))
        # The same stack refuses a non-admin and explains bad input.
        self.assertEqual(403, get('/v1/hosts', rest_base.MEMBER).status_int)
        bad = get('/v1/instances?limit=x')
        self.assertEqual(400, bad.status_int)
        self.assertIn("limit must be an integer", bad.json['error'][
            'message'])


class OutageTest(CollectorTestBase):

    def test_a_database_outage_requeues_until_it_is_back(self):
        url = sa.engine.make_url(self.database.url)
        proxy = self.useFixture(svc.TcpProxy(url.host, url.port))
        self.conf.set_override(
            'connection', self.database.url_via('127.0.0.1', proxy.port),
            'numa_policy_collector')
        counters, notifier = self.first_report_stored(
            self.start_collector())

        proxy.cut()
        notifier.info(REPORT, fakes.make_payload(seq=2))
        svc.wait_for(lambda: counters['requeued'] >= 2,
                     what='requeues while the database is away')
        self.assertEqual(1, self.reader.get_host('compute-1')['seq'])

        proxy.restore()
        svc.wait_for(lambda: counters['reports_stored'] == 2,
                     what='the requeued report once the database is back')
        self.assertEqual(2, self.reader.get_host('compute-1')['seq'])
        self.assertEqual(0, counters['failed'])

    def test_the_listener_reconnects_after_losing_the_broker(self):
        broker = sa.engine.make_url(
            svc.TRANSPORT_URL.replace('rabbit://', 'amqp://'))
        proxy = self.useFixture(svc.TcpProxy(broker.host, broker.port))
        counters, notifier = self.first_report_stored(self.start_collector(
            svc.TRANSPORT_URL.replace(f':{broker.port}/',
                                      f':{proxy.port}/')))

        proxy.cut()
        # Sent while the collector is cut off: the broker keeps it in the
        # pool's queue until the listener is back.
        notifier.info(REPORT, fakes.make_payload(seq=2))
        proxy.restore()
        svc.wait_for(lambda: counters['reports_stored'] == 2, timeout=60,
                     what='the report sent while the broker was away')
        self.assertEqual(2, self.reader.get_host('compute-1')['seq'])


class HostileMessagesTest(CollectorTestBase):
    """Messages that once poisoned the collector, over the real services."""

    def test_a_poison_message_is_seen_once_counted_and_the_next_stored(self):
        collector = self.start_collector()
        counters = collector.endpoint.counters
        notifier = self.notifier()
        digit = fakes.make_payload(seq=1)
        instance = digit[DATA]['instances'][0][DATA]
        instance['memory_mb_per_node'] = {'\u00b2': 512}
        odd_time = fakes.make_payload(seq=2)
        odd_time[DATA]['generated_at'] = '2025-01-31T12:00:02+01:00:30'
        for poison in (digit, odd_time):
            notifier.info(REPORT, poison)
        notifier.info(REPORT, fakes.make_payload(seq=3))
        svc.wait_for(lambda: counters['reports_stored'] == 1,
                     what='the good report after the poison')
        # Redelivered, they would be counted again meanwhile.
        time.sleep(2)
        self.assertEqual({'malformed': 2, 'reports_stored': 1},
                         {k: v for k, v in counters.items() if v})
        self.assertEqual(3, self.reader.get_host('compute-1')['seq'])

    def test_refused_credentials_are_an_alarm_and_nothing_is_lost(self):
        user = self.useFixture(svc.MariaDBUser(self.database, 'right'))
        self.conf.set_override('connection', user.url('wrong'),
                               'numa_policy_collector')
        log = self.useFixture(fixtures.FakeLogger())
        collector = self.start_collector()
        counters = collector.endpoint.counters
        self.notifier().info(REPORT, fakes.make_payload(seq=1))
        svc.wait_for(lambda: counters['database refused access'] >= 2,
                     what='refusals counted while the password is wrong')
        self.assertIn("The database refused the collector's credentials",
                      log.output)
        self.assertEqual(0, counters['failed'])
        # The operator corrects the password: the report was kept.
        user.set_password('wrong')
        svc.wait_for(lambda: counters['reports_stored'] == 1,
                     what='the report once the credentials work')
        self.assertEqual(1, self.reader.get_host('compute-1')['seq'])


class MariaDBModelsMatchMigrationsTest(
        test_migrations.ModelsMigrationsSync, test_base.TestCase):
    """On MariaDB too, the models describe what the migrations create."""

    def setUp(self):
        super().setUp()
        _skip_unless_reachable(svc.MYSQL_URL)
        database = self.useFixture(svc.MariaDBDatabase())
        self.engine = sa.create_engine(database.url)
        self.addCleanup(self.engine.dispose)

    def get_engine(self):
        return self.engine

    def get_metadata(self):
        return models.Base.metadata

    def db_sync(self, engine):
        migration.upgrade(engine)
