"""A period's HostReport reaches a real listener over real RabbitMQ."""

import os
import socket
import threading
import uuid

import fixtures
from oslo_config import cfg
import oslo_messaging
import testtools

from nova_numa_policy.conf import agent as agent_conf
from nova_numa_policy.conf import reports as reports_conf
from nova_numa_policy.objects import wire as report_wire

from agent.backend import connection
from agent.backend import libvirt_backend
from agent.backend import settings
from agent.service import manager
from agent.service import notifier
from tests import base as test_base
from tests import fixtures as host_fixtures

RABBIT_URL = os.environ.get('NUMA_POLICY_RABBIT_URL',
                            'rabbit://guest:guest@127.0.0.1:5672/')


def _broker_up():
    host, port = '127.0.0.1', 5672
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


class Endpoint:
    def __init__(self):
        self.received = []
        self.arrived = threading.Event()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.received.append((publisher_id, event_type, payload))
        self.arrived.set()


@testtools.skipUnless(_broker_up(), 'RabbitMQ is not listening on '
                      '127.0.0.1:5672; start it to run this test')
class RabbitReportTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.conf = cfg.ConfigOpts()
        agent_conf.register_opts(self.conf)
        reports_conf.register_opts(self.conf)
        self.conf([], project='nova-numa-policy-test')
        topic = f'numa_policy_reports_test_{uuid.uuid4().hex[:8]}'
        self.conf.set_override('topic', topic, group='numa_policy_reports')
        transport = oslo_messaging.get_notification_transport(
            self.conf, url=RABBIT_URL)
        self.addCleanup(transport.cleanup)
        # Registered by the call above; the agent's notifier reads it.
        self.conf.set_override('transport_url', RABBIT_URL,
                               group='oslo_messaging_notifications')
        self.endpoint = Endpoint()
        listener = oslo_messaging.get_notification_listener(
            transport, [oslo_messaging.Target(topic=topic)],
            [self.endpoint], executor='threading')
        listener.start()
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)

    def test_the_report_reaches_a_listener(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        root = host_fixtures.two_sockets_nic_on_node1(tmp)
        conn = connection.Connection('test:///default')
        self.addCleanup(conn.close)
        host_backend = libvirt_backend.LibvirtBackend(
            conn, paths=settings.HostPaths(root=root))
        sender = notifier.ReportSender(
            notifier.make_notifier(self.conf, 'cn-rabbit'))
        sender.start()
        self.addCleanup(sender.stop)
        agent = manager.Agent(host_backend, host='cn-rabbit', period=5.0,
                              sender=sender, report_version='1.0')
        agent.run_once()
        self.assertTrue(self.endpoint.arrived.wait(20),
                        'no report within 20 s')
        publisher, event_type, payload = self.endpoint.received[0]
        self.assertEqual(('numa-policy-agent.cn-rabbit', notifier.EVENT_TYPE),
                         (publisher, event_type))
        report = report_wire.load_report(payload)
        self.assertEqual(('cn-rabbit', 1), (report.host, report.seq))
        self.assertEqual([0, 1], report.node_ids())
