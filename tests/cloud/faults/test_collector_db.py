"""The collector's database away for a minute, then back.

The collector and our REST API are started again reaching MariaDB
through a gate of the test's (:mod:`.dbgate`); the rest of the cloud
keeps its own connections. With the gate closed for OUTAGE seconds:

* the API answers 503 saying the database is unavailable, never a 500;
* the agents report and the scheduler schedules on what its own cache
  heard from them: a policy server boots and its host's agent applies
  the policy, as the kernel shows;
* the collector hands what it cannot store back to the broker (its log
  says so) instead of losing it.

Opened again, the collector catches up: the API answers, every host's
report is fresh, the server booted during the outage is there with its
policy applied, and each host's report history has no gap longer than
the report TTL across the outage: what was handed back was stored.
"""

import datetime
import time

from sqlalchemy.engine import url as sa_url

from tests.cloud.faults import base
from tests.cloud.faults import dbgate
from tests.cloud import resources

HOME = {'hw:numa_policy': 'home'}
OUTAGE = 60
MYSQL_PORT = 3306
SERVICES = ('numa-policy-collector', 'numa-policy-api')
SECTION = 'numa_policy_collector'
REQUEUED = 'Database unavailable, requeueing'
UNAVAILABLE = 'the collector database is unavailable'


class CollectorDatabaseLostTest(base.FaultTestBase):

    def setUp(self):
        super().setUp()
        control = self.CLOUD.control
        url = sa_url.make_url(control.numa_policy_option(SECTION,
                                                         'connection'))
        self.gate = dbgate.DatabaseGate(url.port or MYSQL_PORT)
        self.gate.open()
        # Cleanups run last first: the services back on MariaDB itself,
        # then the gate shut.
        self.addCleanup(self.gate.close)
        self.addCleanup(self._direct_again)
        through_gate = url.set(port=self.gate.port).render_as_string(
            hide_password=False)
        for name in SERVICES:
            control.restart_service(
                name, {SECTION: {'connection': through_gate}})

    def _direct_again(self):
        for name in SERVICES:
            self.CLOUD.control.restart_service(name)

    def api_status(self, path='/v1/hosts'):
        return self.CLOUD.numa_api(path)

    def test_the_cloud_works_on_and_the_collector_catches_up(self):
        hosts = sorted(self.CLOUD.computes)
        for host in hosts:
            self.wait_freshness(host, True, base.BACK_TIMEOUT)

        closed_at = datetime.datetime.now(datetime.timezone.utc)
        self.gate.close()
        closed = time.monotonic()
        status, body = resources.wait_for(
            self.api_status, lambda answer: answer[0] != 200,
            'our API noticing the database gone', 60, interval=1)
        self.assertEqual(503, status, body)
        self.assertIn(UNAVAILABLE, str(body))

        server = self.boot('numa-faults-db-away', HOME)
        self.note('seconds from the database gone to a policy server '
                  'ACTIVE', round(time.monotonic() - closed))
        before = self.guest_state(server)
        self.assertEqual(1, len(before['ram_nodes']), before)
        time.sleep(max(0, OUTAGE - (time.monotonic() - closed)))
        self.assertEqual(503, self.api_status()[0])

        self.gate.open()
        opened = time.monotonic()
        self.note('seconds the database was away', round(opened - closed))
        resources.wait_for(self.api_status, lambda a: a[0] == 200,
                           'our API answering again', base.BACK_TIMEOUT,
                           interval=1)
        self.note('seconds from the database back to our API answering',
                  round(time.monotonic() - opened))
        for host in hosts:
            self.wait_freshness(host, True, base.BACK_TIMEOUT)
        applied = self.applied(server['id'])
        self.note('seconds from the database back to the outage\'s '
                  'server applied in our API',
                  round(time.monotonic() - opened))
        self.assertEqual('home', applied['applied_policy'])
        self.assertEqual(before, self.guest_state(server))

        requeued = self.CLOUD.control.service_log(
            'numa-policy-collector').count(REQUEUED)
        self.note('messages the collector handed back to the broker',
                  requeued)
        self.assertGreater(requeued, 0)
        for host in hosts:
            silence = self.longest_silence(host, closed_at)
            self.note(f'longest silence of {host} in seconds', round(silence))
            self.assertLessEqual(silence, base.REPORT_TTL, host)
