"""Reports over a real RabbitMQ reach every scheduler worker, also after a
broker restart.

Needs the broker at 127.0.0.1:5672 (guest/guest) and ``rabbitmqctl`` to
stop and start it; the broker is started again in a cleanup, even when the
test fails.
"""

import shutil
import subprocess
import time
import uuid

from oslo_config import cfg
from oslo_config import fixture as config_fixture
import oslo_messaging as messaging
import testtools

from placement_filters import cache as cache_mod
from placement_filters import listener
from tests import base as test_base
from tests.unit.scheduler import reports

URL = 'rabbit://guest:guest@127.0.0.1:5672/'
HOSTS = ('rabbit-host1', 'rabbit-host2')


def rabbitmqctl(*args):
    subprocess.run(['rabbitmqctl', *args], check=True, capture_output=True,
                   timeout=120)


@testtools.skipUnless(shutil.which('rabbitmqctl'),
                      'rabbitmqctl is not installed: the broker cannot be '
                      'restarted, which is what this test is about')
class RabbitReportsTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        conf = self.useFixture(config_fixture.Config(cfg.ConfigOpts())).conf
        self.transport = messaging.get_notification_transport(conf, url=URL)
        # Reconnect quickly: the test waits for it.
        conf.set_override('rabbit_retry_interval', 1,
                          group='oslo_messaging_rabbit')
        conf.set_override('rabbit_retry_backoff', 1,
                          group='oslo_messaging_rabbit')
        self.addCleanup(self.transport.cleanup)
        topic = f'numa_policy_reports_test_{uuid.uuid4().hex[:8]}'
        # Two scheduler workers: one cache and one pool each.
        self.caches = [self._worker(topic, f'{topic}.worker{i}')
                       for i in range(2)]
        self.notifier = messaging.Notifier(
            self.transport, publisher_id='numa-policy-agent',
            driver='messagingv2', topics=[topic], retry=0)
        self.seq = 0

    def _worker(self, topic, pool):
        cache = cache_mod.ReportCache(max_hosts=100, max_report_bytes=1 << 20,
                                      io_rate=500, ttl=600)
        consumer = listener.ReportListener(cache, self.transport, topic, pool)
        consumer.start()
        self.addCleanup(consumer.stop)
        return cache

    def send_until_received(self, timeout=90):
        """Send a new report per host until both workers have all of them.

        Sending is retried: right after a broker restart the notifier's
        connection may still be down.
        """
        self.seq += 1
        deadline = time.monotonic() + timeout
        while True:
            for host in HOSTS:
                try:
                    self.notifier.info({}, 'numa_policy.host.report',
                                       reports.make_payload(host=host,
                                                            seq=self.seq))
                except messaging.MessageDeliveryFailure:
                    pass
            if all(self._has_seq(cache, host) for cache in self.caches
                   for host in HOSTS):
                return
            self.assertLess(time.monotonic(), deadline,
                            'reports did not reach both workers')
            time.sleep(1)

    def _has_seq(self, cache, host):
        summary = cache.get((host, host))
        return summary is not None and summary.seq == self.seq

    def test_every_worker_sees_every_report_also_after_a_broker_restart(self):
        self.send_until_received()
        self.addCleanup(rabbitmqctl, 'start_app')  # even if we fail below
        rabbitmqctl('stop_app')
        rabbitmqctl('start_app')
        self.send_until_received()
        for cache in self.caches:
            self.assertEqual(0, sum(cache.dropped.values()), cache.dropped)
