"""The oslo.messaging notification listener of the collector.

One endpoint reads every notification on the reports topic: it parses the
payload (pure code in :mod:`records`), stores it, and answers the broker.
Nothing a message does escapes into the listener's thread:

* a payload refused by the checks every consumer shares (size, origin,
  values, time: ``report.read_payload``) is dropped and counted by
  reason, as is one that fails in any way nobody foresaw; the log says
  so once a minute per reason at most, however many arrive;
* a database that is away or deadlocked is retried, then the message is
  requeued, for at most ``requeue_timeout`` seconds from its first
  refusal, then dropped and counted;
* a database that refuses the collector's credentials is an alarm: an
  error each time, a counter, and the message requeued (not lost) until
  an operator corrects the configuration.
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
from nova_numa_policy.conf import reports as reports_conf
from nova_numa_policy.objects import report as report_obj
from nova_numa_policy.objects import validation as report_validation
from nova_numa_policy.objects import wire as report_wire

LOG = logging.getLogger(__name__)

HANDLED = oslo_messaging.NotificationResult.HANDLED
REQUEUE = oslo_messaging.NotificationResult.REQUEUE

# Errors after which the same write may succeed: the database went away,
# a deadlock, or another collector of the pool wrote the same host first.
TRANSIENT_DB_ERRORS = (db_exc.DBConnectionError, db_exc.DBDeadlock,
                       db_exc.DBDuplicateEntry)
# MySQL/MariaDB: access denied for the user, to the database, and for a
# user that must authenticate otherwise.
ACCESS_DENIED_CODES = (1044, 1045, 1698)
# Messages whose requeues are being timed, at most this many.
REQUEUE_MEMORY = 4096

COUNT_REQUEUED = 'requeued'
COUNT_REQUEUE_LIMIT = 'requeue limit'
COUNT_ACCESS_DENIED = 'database refused access'
COUNT_STORE_FAILED = 'failed'
# What a payload that is not read is counted under (report.refusal_reason).
REFUSAL_REASONS = (report_wire.REFUSED_OVERSIZED,
                   report_wire.REFUSED_MALFORMED, report_wire.REFUSED_FUTURE,
                   report_wire.REFUSED_UNSIGNED,
                   report_wire.REFUSED_BAD_SIGNATURE,
                   report_wire.REFUSED_UNEXPECTED)


def _now():
    return timeutils.utcnow(with_timezone=True)


def access_denied(exc):
    """Whether ``exc`` is the database refusing our credentials."""
    seen, depth = exc, 0
    while isinstance(seen, BaseException) and depth < 8:
        if seen.args and seen.args[0] in ACCESS_DENIED_CODES:
            return True
        seen = (getattr(seen, 'inner_exception', None)
                or getattr(seen, 'orig', None) or seen.__cause__
                or seen.__context__)
        depth += 1
    return False


def message_identity(kind, value):
    """What tells one message from another, for timing its requeues."""
    if kind == records.KIND_ACTION:
        return (kind, value['host'], value['seq'],
                str(value['generated_at']))
    return (kind, value.host, records.boot_id(value), value.seq,
            value.generated_at.isoformat())


class CollectorEndpoint:
    """Stores reports and actions; counts what it stored and dropped."""

    def __init__(self, storage, max_report_bytes, db_retries=3,
                 requeue_delay=2.0, retry_interval=0.5, clock=_now,
                 sleep=time.sleep, secrets=(),
                 max_skew=report_obj.DEFAULT_MAX_CLOCK_SKEW,
                 requeue_timeout=900.0, monotonic=time.monotonic):
        self._storage = storage
        self._max_report_bytes = max_report_bytes
        self._requeue_delay = requeue_delay
        self._clock = clock
        self._sleep = sleep
        self._secrets = tuple(secrets)
        self._max_skew = max_skew
        self._requeue_timeout = requeue_timeout
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self.counters = collections.Counter()
        self._refusal_log = report_wire.RefusalLogLimit()
        # identity -> when the database first refused it (monotonic).
        self._refused_since = collections.OrderedDict()
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

    def _read(self, event_type, payload, received_at):
        kind, value = records.parse_payload(
            event_type, payload, self._max_report_bytes, self._secrets)
        # Actions are held to the reports' window: one dated ahead would
        # sort first in a host's history until the clocks caught up.
        report_validation.check_time(records.generated_at(kind, value),
                                     received_at, self._max_skew, kind)
        return kind, value

    def _handle(self, publisher_id, event_type, payload):
        received_at = self._clock()
        try:
            kind, value = self._read(event_type, payload, received_at)
        except Exception as exc:  # noqa: B902 - dropped, never raised
            return self._refused(exc, event_type, publisher_id)
        try:
            stored = self._store(kind, value, received_at)
        except Exception as exc:  # noqa: B902 - dropped, never raised
            return self._store_failed(exc, kind, value, publisher_id)
        self._forget(message_identity(kind, value))
        self._count(f'{kind}s_stored' if stored else f'{kind}s_duplicate')
        return HANDLED

    def _refused(self, exc, event_type, publisher_id):
        reason = report_wire.refusal_reason(exc)
        with self._lock:
            self.counters[reason] += 1
            logged = self._refusal_log.due(reason, self._monotonic())
        if not logged:
            return HANDLED
        values = {'event_type': event_type, 'publisher': publisher_id,
                  'reason': reason, 'exc': exc,
                  'counts': self._refusal_counts()}
        if reason == report_wire.REFUSED_UNEXPECTED:
            # A bug of ours, not a bad payload: the traceback is what
            # fixes it. Rate limited all the same, as a publisher could
            # send the payload that triggers it again and again.
            LOG.error('Dropped a %(event_type)s notification from '
                      '%(publisher)s that could not be read: %(exc)r. '
                      'Refused so far: %(counts)s.', values, exc_info=exc)
        else:
            LOG.warning('Dropped a %(event_type)s notification from '
                        '%(publisher)s (%(reason)s): %(exc)s. Refused so '
                        'far: %(counts)s.', values)
        return HANDLED

    def _refusal_counts(self):
        with self._lock:
            return {reason: count for reason, count in self.counters.items()
                    if reason in REFUSAL_REASONS}

    def _store_failed(self, exc, kind, value, publisher_id):
        if access_denied(exc):
            self._count(COUNT_ACCESS_DENIED)
            LOG.error('The database refused the collector\'s credentials '
                      '([numa_policy_collector] connection): %s. The %s '
                      'from %s goes back to the broker until this is '
                      'corrected.', exc, kind, publisher_id)
            self._sleep(self._requeue_delay)
            return REQUEUE
        if not isinstance(exc, TRANSIENT_DB_ERRORS):
            # It would fail the same way on every redelivery.
            self._count(COUNT_STORE_FAILED)
            LOG.error('Could not store the %s from %s; dropped: %r', kind,
                      publisher_id, exc, exc_info=exc)
            return HANDLED
        identity = message_identity(kind, value)
        waited = self._monotonic() - self._first_refusal(identity)
        if waited > self._requeue_timeout:
            self._forget(identity)
            self._count(COUNT_REQUEUE_LIMIT)
            LOG.error('Dropped the %s from %s: the database has refused it '
                      'for %.0f s (%s)', kind, publisher_id, waited, exc)
            return HANDLED
        self._count(COUNT_REQUEUED)
        LOG.warning('Database unavailable, requeueing the %s from %s: %s',
                    kind, publisher_id, exc)
        # Without the pause the broker redelivers at once and the
        # collector spins until the database is back.
        self._sleep(self._requeue_delay)
        return REQUEUE

    def _first_refusal(self, identity):
        with self._lock:
            since = self._refused_since.setdefault(identity,
                                                   self._monotonic())
            self._refused_since.move_to_end(identity)
            while len(self._refused_since) > REQUEUE_MEMORY:
                self._refused_since.popitem(last=False)
        return since

    def _forget(self, identity):
        with self._lock:
            self._refused_since.pop(identity, None)

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
    reports = conf.numa_policy_reports
    return CollectorEndpoint(
        storage, reports.max_report_bytes,
        db_retries=group.db_retries, requeue_delay=group.requeue_delay,
        secrets=reports_conf.accepted_secrets(reports),
        max_skew=reports.max_clock_skew,
        requeue_timeout=group.requeue_timeout)
