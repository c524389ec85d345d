"""Entry points: ``numa-policy-collector`` and ``numa-policy-db-sync``.

The collector's signal handling is its own, not oslo.service's, for the
reasons agent/service/cmd.py gives: its listener runs on native threads
(oslo.messaging's threading executor), which oslo.service's eventlet
backend would hold up, and its threading backend would move the work
into a child process. One process; SIGTERM or SIGINT stops the listener,
"Collector stopped" is logged with the counters, and the exit code is 0
(tests/functional/test_service_signals.py).
"""

import signal
import sys
import threading

from oslo_log import log as logging
import oslo_messaging

from nova_numa_policy.collector import db
from nova_numa_policy.collector import listener
from nova_numa_policy.collector import migration
from nova_numa_policy import conf as nnp_conf
from nova_numa_policy.contracts import messaging

LOG = logging.getLogger(__name__)


def _configure(argv):
    conf = nnp_conf.CONF
    messaging.use_nova_exchange()
    logging.register_options(conf)
    conf(argv, project='nova-numa-policy')
    logging.setup(conf, 'nova-numa-policy')
    return conf


class Collector:
    """The listener plus the storage it writes to, started and stopped."""

    def __init__(self, conf, transport=None):
        self.storage = db.Storage.from_conf(conf)
        self.endpoint = listener.build_endpoint(conf, self.storage)
        self._transport = (transport or
                           oslo_messaging.get_notification_transport(conf))
        self._listener = listener.build_listener(conf, self._transport,
                                                 self.endpoint)

    def start(self):
        self._listener.start()

    def stop(self):
        self._listener.stop()
        self._listener.wait()
        self.storage.dispose()


def main(argv=None):
    conf = _configure(sys.argv[1:] if argv is None else argv)
    collector = Collector(conf)
    stopping = threading.Event()
    # The handler only sets the event: stopping the listener from inside a
    # signal handler could deadlock on its locks.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    collector.start()
    LOG.info('Collecting reports from topic %s into %s',
             conf.numa_policy_reports.topic,
             db.safe_url(conf.numa_policy_collector.connection))
    stopping.wait()
    collector.stop()
    LOG.info('Collector stopped; counters: %s', dict(
        collector.endpoint.counters))
    return 0


def db_sync(argv=None):
    """Create or upgrade the collector schema to the newest revision."""
    conf = _configure(sys.argv[1:] if argv is None else argv)
    url = conf.numa_policy_collector.connection
    migration.upgrade_url(url)
    print(f'Collector database {db.safe_url(url)} is at revision head.')
    return 0


if __name__ == '__main__':
    sys.exit(main())
