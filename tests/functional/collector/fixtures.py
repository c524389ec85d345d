"""Real services for the collector's functional tests.

MariaDB and RabbitMQ are the ones on this machine (override with
NUMA_POLICY_TEST_MYSQL_URL and NUMA_POLICY_TEST_TRANSPORT_URL); each test
gets its own database, topic and pool, all removed when it ends.
"""

import os
import socket
import threading
import time
import uuid

import fixtures
import kombu
import oslo_messaging
import pymysql
import sqlalchemy as sa

from tests import forwarding

MYSQL_URL = os.environ.get('NUMA_POLICY_TEST_MYSQL_URL',
                           'mysql+pymysql://root@127.0.0.1:3306/')
TRANSPORT_URL = os.environ.get('NUMA_POLICY_TEST_TRANSPORT_URL',
                               'rabbit://guest:guest@127.0.0.1:5672/')


def unique(prefix):
    return f'{prefix}_{uuid.uuid4().hex[:12]}'


def reachable(url):
    """(True, '') or (False, why) for the host and port of a URL."""
    parsed = sa.engine.make_url(url.replace('rabbit://', 'amqp://'))
    try:
        socket.create_connection((parsed.host, parsed.port), 2).close()
        return True, ''
    except OSError as exc:
        return False, f'{parsed.host}:{parsed.port} is not reachable: {exc}'


def wait_for(predicate, timeout=30.0, what='condition'):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f'timed out after {timeout}s waiting for {what}')


class MariaDBDatabase(fixtures.Fixture):
    """A new, empty database; dropped at cleanup."""

    def __init__(self, base_url=MYSQL_URL):
        super().__init__()
        self._base = sa.engine.make_url(base_url)

    def _admin(self):
        return pymysql.connect(host=self._base.host, port=self._base.port,
                               user=self._base.username,
                               password=self._base.password or '')

    def _setUp(self):
        self.name = unique('nnp_test')
        with self._admin() as connection:
            connection.cursor().execute(
                f'CREATE DATABASE {self.name} CHARACTER SET utf8mb4')
        self.addCleanup(self._drop)
        self.url = self._base.set(database=self.name,
                                  query={'charset': 'utf8mb4'})
        self.url = self.url.render_as_string(hide_password=False)

    def _drop(self):
        with self._admin() as connection:
            connection.cursor().execute(
                f'DROP DATABASE IF EXISTS {self.name}')

    def url_via(self, host, port):
        return sa.engine.make_url(self.url).set(
            host=host, port=port).render_as_string(hide_password=False)


class MariaDBUser(fixtures.Fixture):
    """A user of ``database`` only, with ``password``; dropped at cleanup."""

    def __init__(self, database, password):
        super().__init__()
        self.database = database
        self.password = password

    def _setUp(self):
        self.name = unique('nnp_user')[:32]
        self._each_host("CREATE USER '{name}'@'{host}' IDENTIFIED BY "
                        "{password}", self.password)
        self._each_host("GRANT ALL ON {db}.* TO '{name}'@'{host}'")
        self.addCleanup(self._each_host,
                        "DROP USER IF EXISTS '{name}'@'{host}'")

    def _each_host(self, statement, password=''):
        with self.database._admin() as connection:
            for host in ('%', 'localhost'):
                connection.cursor().execute(statement.format(
                    name=self.name, host=host, db=self.database.name,
                    password=connection.escape(password)))

    def set_password(self, password):
        self._each_host("ALTER USER '{name}'@'{host}' IDENTIFIED BY "
                        "{password}", password)

    def url(self, password):
        return sa.engine.make_url(self.database.url).set(
            username=self.name, password=password).render_as_string(
                hide_password=False)


class RabbitQueues(fixtures.Fixture):
    """A unique topic and pool; their queues are deleted at cleanup."""

    def _setUp(self):
        self.topic = unique('numa_policy_reports_test')
        self.pool = unique('numa_policy_collector_test')
        self.addCleanup(self._delete_queues)

    def _delete_queues(self):
        url = TRANSPORT_URL.replace('rabbit://', 'amqp://')
        with kombu.Connection(url) as connection:
            channel = connection.channel()
            # The listener's pool queue, and the default queue the notifier
            # creates so that notifications sent before any consumer wait.
            for name in (self.pool, f'{self.topic}.info'):
                try:
                    channel.queue_delete(name)
                except Exception:  # noqa: S110 - best effort cleanup
                    channel = connection.channel()


class Notifier(fixtures.Fixture):
    """An agent-side notifier on ``topic``, as the agents will use it."""

    def __init__(self, conf, topic, url=TRANSPORT_URL):
        super().__init__()
        self._conf, self._topic, self._url = conf, topic, url

    def _setUp(self):
        transport = oslo_messaging.get_notification_transport(
            self._conf, url=self._url)
        self.addCleanup(transport.cleanup)
        self.notifier = oslo_messaging.Notifier(
            transport, publisher_id='numa-policy-agent.compute-1',
            driver='messagingv2', topics=[self._topic])

    def info(self, event_type, payload):
        self.notifier.info({}, event_type, payload)


class TcpProxy(fixtures.Fixture):
    """A TCP forwarder to cut and restore a service without touching it.

    ``cut()`` closes every forwarded connection and refuses new ones, as a
    restarting server does; ``restore()`` accepts again on the same port.
    """

    def __init__(self, target_host, target_port):
        super().__init__()
        self._target = (target_host, target_port)
        self._lock = threading.Lock()
        self._sockets = []
        self._server = None

    def _setUp(self):
        probe = socket.socket()
        probe.bind(('127.0.0.1', 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self.restore()
        self.addCleanup(self.cut)

    def restore(self):
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(('127.0.0.1', self.port))
        server.listen(16)
        self._server = server
        threading.Thread(target=self._accept, args=(server,),
                         daemon=True).start()

    def cut(self):
        with self._lock:
            sockets, self._sockets = self._sockets, []
            server, self._server = self._server, None
        for sock in sockets + ([server] if server else []):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def _accept(self, server):
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._target, 5)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._server is not server:
                    client.close()
                    upstream.close()
                    return
                self._sockets += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=forwarding.pump, args=(src, dst),
                                 daemon=True).start()
