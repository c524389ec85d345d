"""The oslo.messaging notification listener of the collector.

One endpoint reads every notification on the reports topic: it parses the
payload (pure code in :mod:`records`), stores it, and answers the broker.
A malformed payload is dropped and counted; a database that is away is
retried and the message requeued, so nothing is lost while it restarts;
nothing else a message does escapes into the listener's thread.
"""

import collections
import threading
import time

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_log import log as logging
import oslo_messaging
from oslo_utils import timeutils

from nova_numa_policy.collector import records
from nova_numa_policy import exception

LOG = logging.getLogger(__name__)

HANDLED = oslo_messaging.NotificationResult.HANDLED
REQUEUE = oslo_messaging.NotificationResult.REQUEUE

# Errors after which the same write may succeed: the database went away,
# a deadlock, or another collector of the pool wrote the same host first.
TRANSIENT_DB_ERRORS = (db_exc.DBConnectionError, db_exc.DBDeadlock,
                       db_exc.DBDuplicateEntry)


def _now():
    return timeutils.utcnow(with_timezone=True)


class CollectorEndpoint:
    """Stores reports and actions; counts what it stored and dropped."""

    def __init__(self, storage, max_report_bytes, db_retries=3,
                 requeue_delay=2.0, retry_interval=0.5, clock=_now,
                 sleep=time.sleep):
        self._storage = storage
        self._max_report_bytes = max_report_bytes
        self._requeue_delay = requeue_delay
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self.counters = collections.Counter()
        self._store = oslo_db_api.wrap_db_retry(
            max_retries=db_retries, retry_interval=retry_interval,
            max_retry_interval=5, inc_retry_interval=True,
            exception_checker=lambda exc: isinstance(
                exc, TRANSIENT_DB_ERRORS))(self._store_once)

    def _count(self, name):
        with self._lock:
            self.counters[name] += 1

    def _store_once(self, kind, value, received_at):
        if kind == records.KIND_ACTION:
            return self._storage.store_action(value, received_at)
        return self._storage.store_report(value, received_at)

    def _handle(self, publisher_id, event_type, payload):
        try:
            kind, value = records.parse_payload(
                event_type, payload, self._max_report_bytes)
        except exception.MalformedReport as exc:
            self._count('malformed')
            LOG.warning('Dropped a malformed %s notification from %s: %s',
                        event_type, publisher_id, exc)
            return HANDLED
        try:
            stored = self._store(kind, value, self._clock())
        except TRANSIENT_DB_ERRORS as exc:
            self._count('requeued')
            LOG.warning('Database unavailable, requeueing the %s from %s: '
                        '%s', kind, publisher_id, exc)
            # Without the pause the broker redelivers at once and the
            # collector spins until the database is back.
            self._sleep(self._requeue_delay)
            return REQUEUE
        except Exception:
            # A message that fails for any other reason would fail on
            # every redelivery: drop it rather than loop or die.
            self._count('failed')
            LOG.exception('Could not store the %s from %s; dropped', kind,
                          publisher_id)
            return HANDLED
        self._count(f'{kind}s_stored' if stored else f'{kind}s_duplicate')
        return HANDLED

    def _endpoint(self, ctxt, publisher_id, event_type, payload, metadata):
        return self._handle(publisher_id, event_type, payload)

    # Agents report at INFO; any other priority on the topic is read the
    # same way rather than left unacknowledged.
    audit = debug = info = warn = error = critical = sample = _endpoint


def build_listener(conf, transport, endpoint):
    """A started-by-caller notification listener on the reports topic."""
    targets = [oslo_messaging.Target(topic=conf.numa_policy_reports.topic)]
    return oslo_messaging.get_notification_listener(
        transport, targets, [endpoint], executor='threading',
        allow_requeue=True, pool=conf.numa_policy_collector.pool)


def build_endpoint(conf, storage):
    group = conf.numa_policy_collector
    return CollectorEndpoint(
        storage, conf.numa_policy_reports.max_report_bytes,
        db_retries=group.db_retries, requeue_delay=group.requeue_delay)
