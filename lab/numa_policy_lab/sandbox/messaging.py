"""The broker: reachability, a configuration for our side, queue cleanup.

nova's own RPC stays on its in-process fake bus; the agents' reports and
actions go through the machine's RabbitMQ, on a topic unique to the run,
to the scheduler's report cache and to the collector.
"""

import socket
import urllib.parse
import uuid

import fixtures
import kombu
from oslo_config import cfg
import oslo_messaging

from nova_numa_policy.conf import opts as nnp_opts
from nova_numa_policy.contracts import messaging
from nova_numa_policy.loops import options as loop_options

DEFAULT_URL = 'rabbit://guest:guest@127.0.0.1:5672/'
START_HINT = 'rabbitmq-server -detached'


class SandboxError(Exception):
    """A problem the user can fix; printed without a traceback."""


def unique(prefix):
    return f'{prefix}_{uuid.uuid4().hex[:10]}'


def check_broker(url, timeout=2.0):
    """Raise :class:`SandboxError` saying how to start a missing broker."""
    parsed = urllib.parse.urlsplit(url)
    host, port = parsed.hostname or '127.0.0.1', parsed.port or 5672
    try:
        socket.create_connection((host, port), timeout).close()
    except OSError as exc:
        raise SandboxError(
            f'RabbitMQ is not reachable at {host}:{port} ({exc}). The '
            f'sandbox sends the agents\' reports through it. Start it with '
            f'`{START_HINT}` (Debian: apt-get install rabbitmq-server) and '
            f'run the sandbox again, or name another broker with '
            f'--transport-url.')


def make_conf(transport_url, topic, collector_pool, db_url):
    """A private ConfigOpts for the agents, the collector and the API.

    Private rather than ``cfg.CONF``: nova's fixtures reset the global
    configuration when they stop, and our services must not depend on it.
    """
    conf = cfg.ConfigOpts()
    for module in nnp_opts.GROUP_MODULES:
        module.register_opts(conf)
    loop_options.register_opts(conf)
    conf([], project='nova-numa-policy', default_config_files=[],
         default_config_dirs=[])
    # oslo.messaging registers its options (transport, notifications, the
    # rabbit driver's) on a configuration when it first builds a transport
    # from it; building one here, unconnected, lets us override them.
    oslo_messaging.get_notification_transport(conf, transport_url).cleanup()
    conf.set_override('transport_url', transport_url,
                      'oslo_messaging_notifications')
    # The scheduler's listener runs in nova's process, whose default
    # exchange nova sets to 'nova'; a process that does not import nova
    # (agent, collector) defaults to 'openstack' and would publish where
    # the scheduler never looks. Name it explicitly for every party.
    conf.set_override('control_exchange', messaging.NOVA_EXCHANGE)
    conf.set_override('topic', topic, 'numa_policy_reports')
    conf.set_override('pool', collector_pool, 'numa_policy_collector')
    conf.set_override('connection', db_url, 'numa_policy_collector')
    # The API answers on the loopback only, to the sandbox's user.
    conf.set_override('auth_strategy', 'noauth', 'numa_policy_api')
    # Reconnect fast: the sandbox is short lived.
    conf.set_override('rabbit_retry_interval', 1, 'oslo_messaging_rabbit')
    conf.set_override('rabbit_retry_backoff', 1, 'oslo_messaging_rabbit')
    return conf


class RunQueues(fixtures.Fixture):
    """Deletes this run's queues from the broker at cleanup.

    Listener pools are durable queues: left behind, they would collect
    every later report sent on the topic.
    """

    def __init__(self, url, topic):
        super().__init__()
        self._url = url
        self.names = [f'{topic}.info']

    def add(self, name):
        if name and name not in self.names:
            self.names.append(name)

    def _setUp(self):
        self.addCleanup(self._delete)

    def _delete(self):
        url = self._url.replace('rabbit://', 'amqp://', 1)
        with kombu.Connection(url, connect_timeout=5) as connection:
            for name in self.names:
                channel = connection.channel()
                try:
                    channel.queue_delete(name)
                except Exception:  # noqa: S110 - already gone is fine
                    pass
                finally:
                    try:
                        channel.close()
                    except Exception:  # noqa: S110
                        pass
