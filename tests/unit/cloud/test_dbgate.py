"""The fault scenarios' database gate, on this machine's loopback, and a
service started again with a configuration file of its own."""

import socket

from tests import base as test_base
from tests.cloud import control
from tests.cloud.faults import dbgate
from tests.cloud import services


class DatabaseGateTest(test_base.TestCase):
    """The gate's process between a client and a listening socket here.

    No threads in this process: the unit tier's may be monkey-patched.
    """

    def setUp(self):
        super().setUp()
        self.target = socket.create_server(('127.0.0.1', 0))
        self.target.settimeout(10)
        self.addCleanup(self.target.close)
        self.gate = dbgate.DatabaseGate(self.target.getsockname()[1])
        self.addCleanup(self.gate.close)

    def connect(self):
        """A client through the gate, and the target's end of it."""
        client = socket.create_connection(('127.0.0.1', self.gate.port),
                                          timeout=10)
        self.addCleanup(client.close)
        served, _ = self.target.accept()
        self.addCleanup(served.close)
        return client, served

    def test_open_forwards_both_ways(self):
        self.gate.open()
        client, served = self.connect()
        client.sendall(b'ping')
        self.assertEqual(b'ping', served.recv(1024))
        served.sendall(b'pong')
        self.assertEqual(b'pong', client.recv(1024))

    def test_close_cuts_open_connections_and_refuses_new_ones(self):
        self.gate.open()
        client, served = self.connect()
        self.gate.close()
        self.assertEqual(b'', client.recv(1024))
        self.assertEqual(b'', served.recv(1024))
        self.assertRaises(ConnectionRefusedError, socket.create_connection,
                          ('127.0.0.1', self.gate.port), 10)

    def test_opened_again_on_the_same_port(self):
        port = self.gate.open()
        self.gate.close()
        self.assertEqual(port, self.gate.open())
        client, served = self.connect()
        client.sendall(b'again')
        self.assertEqual(b'again', served.recv(1024))


class ConfigFileTest(test_base.TestCase):

    def test_a_daemon_reads_it_last_on_its_command_line(self):
        spec = services.daemon('numa-policy-collector',
                               ['collector', '--config-file', 'a.conf'],
                               'ready')
        self.assertEqual(
            ('collector', '--config-file', 'a.conf', '--config-file',
             'b.conf'),
            control.with_config_file(spec, 'b.conf').argv)

    def test_a_wsgi_app_reads_it_last_in_its_variable(self):
        spec = services.wsgi('numa-policy-api', 1, 'app',
                             [('NUMA_POLICY_API_WSGI', '1'),
                              ('NUMA_POLICY_API_CONFIG', 'a.conf')],
                             config_files_env='NUMA_POLICY_API_CONFIG')
        changed = control.with_config_file(spec, 'b.conf')
        self.assertEqual(spec.argv, changed.argv)
        self.assertEqual((('NUMA_POLICY_API_WSGI', '1'),
                          ('NUMA_POLICY_API_CONFIG', 'a.conf,b.conf')),
                         changed.env)
