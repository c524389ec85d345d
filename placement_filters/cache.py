"""The scheduler's in-memory cache of agent reports.

Written by the notification listener's thread, read by the filters and
weighers without a lock: every entry is an immutable
:class:`~nova_numa_policy.scheduling.summary.HostSummary` replaced whole,
and a dict lookup is atomic, so the per-host path is one ``dict.get``.
"""

import collections
import datetime
import threading
import time

from oslo_log import log as logging

from nova_numa_policy.objects import report as report_mod
from nova_numa_policy.objects import validation as report_validation
from nova_numa_policy.objects import wire as report_wire
from nova_numa_policy.scheduling import summary as summary_mod
from placement_filters import assessors

LOG = logging.getLogger(__name__)


def _utc(seconds):
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)


# Reasons a report is dropped; each has its own counter. Those of a
# refused payload are the collector's too (report.refusal_reason).
DROP_OVERSIZED = report_wire.REFUSED_OVERSIZED
DROP_MALFORMED = report_wire.REFUSED_MALFORMED
DROP_FUTURE = report_wire.REFUSED_FUTURE
DROP_UNSIGNED = report_wire.REFUSED_UNSIGNED
DROP_BAD_SIGNATURE = report_wire.REFUSED_BAD_SIGNATURE
DROP_UNEXPECTED = report_wire.REFUSED_UNEXPECTED
DROP_OUTDATED = 'older than the cached one'


DROP_LOG_INTERVAL = report_wire.REFUSAL_LOG_INTERVAL


class ReportCache:
    """Fresh-enough summaries of the last report of each compute node."""

    def __init__(self, max_hosts, max_report_bytes, io_rate, ttl,
                 clock=time.time, secrets=(),
                 max_skew=report_mod.DEFAULT_MAX_CLOCK_SKEW):
        self.max_hosts = max_hosts
        self.max_report_bytes = max_report_bytes
        self.io_rate = io_rate
        self.ttl = ttl
        self.clock = clock
        # Report signing (objects/signing.py): verified when set.
        self.secrets = tuple(secrets)
        self.max_skew = max_skew
        # Ordered by last update, so the first entry is the one to evict.
        self._entries = collections.OrderedDict()
        # get(key): the summary for ``(host, nodename)``, or None. Lock
        # free. The dict's own method, not a wrapper: the filters and
        # weighers call it for every host. _entries is never rebound.
        self.get = self._entries.get
        self._write_lock = threading.Lock()
        self.accepted = 0
        self.dropped = collections.Counter()
        self._drop_log = report_wire.RefusalLogLimit(DROP_LOG_INTERVAL)

    def snapshot(self):
        """A copy of every entry, for the why-not explanation."""
        with self._write_lock:
            return dict(self._entries)

    def __len__(self):
        return len(self._entries)

    def ingest(self, payload):
        """Check, summarise and store one notification payload.

        :returns: True if the report was stored. Never raises for a bad
            report: it is counted and logged (rate limited) instead.
        """
        try:
            summary = self._summarize(payload)
        except Exception as exc:  # noqa: B902 - counted, never raised
            self._drop(report_wire.refusal_reason(exc), exc)
            return False
        # Answers for the flavors being scheduled, computed here rather
        # than on the next request's path; before the summary is published.
        assessors.prime(summary, assessors.recent_assessors())
        return self._store(summary)

    def _summarize(self, payload):
        """The checked report's summary; the checks the collector runs."""
        data = report_wire.check_payload(payload, self.max_report_bytes,
                                         self.secrets)
        report_validation.check_time(data['generated_at'],
                                     _utc(self.clock()), self.max_skew)
        return summary_mod.summarize(data, self.io_rate)

    def _store(self, summary):
        key = summary.key
        with self._write_lock:
            old = self._entries.get(key)
            if old is not None and not report_mod.supersedes(
                    summary.order(), old.order()):
                outdated = True
            else:
                outdated = False
                self._entries[key] = summary
                self._entries.move_to_end(key)
                while len(self._entries) > self.max_hosts:
                    self._entries.popitem(last=False)
                self.accepted += 1
        if outdated:
            # Redelivery or reordering; harmless, but worth a count.
            self._drop(DROP_OUTDATED, key)
        return not outdated

    def _drop(self, reason, detail):
        """Count a dropped report; log it unless its reason was just logged.

        Rate limited per reason, an unexpected failure included: a
        publisher that found a way to cause one could otherwise fill the
        scheduler's log with it.
        """
        self.dropped[reason] += 1
        if not self._drop_log.due(reason, self.clock()):
            return
        values = {'reason': reason, 'detail': detail,
                  'counts': dict(self.dropped)}
        if reason == DROP_UNEXPECTED:
            LOG.error('A NUMA host report failed unexpectedly: %(detail)r. '
                      'Dropped so far: %(counts)s.', values)
        else:
            LOG.warning('Dropped a NUMA host report (%(reason)s): '
                        '%(detail)s. Dropped so far: %(counts)s.', values)
