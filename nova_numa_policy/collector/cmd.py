"""Entry points: ``numa-policy-collector`` and ``numa-policy-db-sync``.

The collector is an oslo.service service in one process
(:mod:`nova_numa_policy.launcher`): SIGTERM or SIGINT stops the
listener, "Collector stopped" is logged with the counters, and the exit
code is 0 (tests/functional/test_service_signals.py).
"""

import sys
import threading

from oslo_log import log as logging
import oslo_messaging
from oslo_service.backend import base as service_base

from nova_numa_policy.collector import db
from nova_numa_policy.collector import listener
from nova_numa_policy.collector import migration
from nova_numa_policy import conf as nnp_conf
from nova_numa_policy.contracts import messaging
from nova_numa_policy import launcher

LOG = logging.getLogger(__name__)


def _configure(argv):
    conf = nnp_conf.CONF
    messaging.use_nova_exchange()
    logging.register_options(conf)
    conf(argv, project='nova-numa-policy')
    logging.setup(conf, 'nova-numa-policy')
    return conf


class Collector(service_base.ServiceBase):
    """The listener plus the storage it writes to, as oslo.service runs it.

    ``stop`` is called from oslo.service's signal handler, in the main
    thread, while :meth:`wait` waits there; the listener's own threads
    hold its locks, never the main thread.
    """

    def __init__(self, conf, transport=None):
        self.storage = db.Storage.from_conf(conf)
        self.endpoint = listener.build_endpoint(conf, self.storage)
        self._transport = (transport or
                           oslo_messaging.get_notification_transport(conf))
        self._listener = listener.build_listener(conf, self._transport,
                                                 self.endpoint)
        self._conf = conf
        self._stopped = threading.Event()

    def start(self):
        self._listener.start()
        LOG.info('Collecting reports from topic %s into %s',
                 self._conf.numa_policy_reports.topic,
                 db.safe_url(self._conf.numa_policy_collector.connection))

    def stop(self):
        self._listener.stop()
        self._listener.wait()
        self.storage.dispose()
        LOG.info('Collector stopped; counters: %s', dict(
            self.endpoint.counters))
        self._stopped.set()

    def wait(self):
        self._stopped.wait()

    def reset(self):
        """Nothing to reset: one process, never restarted in place."""


def main(argv=None):
    conf = _configure(sys.argv[1:] if argv is None else argv)
    return launcher.run(conf, Collector(conf))


def db_sync(argv=None):
    """Create or upgrade the collector schema to the newest revision."""
    conf = _configure(sys.argv[1:] if argv is None else argv)
    url = conf.numa_policy_collector.connection
    migration.upgrade_url(url)
    print(f'Collector database {db.safe_url(url)} is at revision head.')
    return 0


if __name__ == '__main__':
    sys.exit(main())
