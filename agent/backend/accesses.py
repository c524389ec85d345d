"""Which of a guest's pages it read or wrote over the last period: DAMON.

The tiering loop's census (:mod:`agent.backend.pagetemps`) reads the
soft-dirty bits, which see writes only. Where the agent runs DAMON on
the ``tiered`` guests (``[numa_policy_agent] access_monitoring``, the
access daemon of :mod:`agent.privsep.damon`), a page the bits call
unwritten but that lies in a region DAMON saw accessed within the last
period counts as hot too: what a guest only reads is not demoted.

DAMON aggregates over one period of the agent's (at most a minute),
sampling each region 500 times in it: a page read now and then is
sampled while read in some of those. A region counts as accessed when
DAMON's last aggregation saw it accessed (``nr_accesses`` above 0) or
when its access frequency has been as it is for less than the period
(``age`` times the aggregation interval): a region must be seen idle
for a whole aggregation before its pages are called cold. A kdamond
just started knows no region that old, so for its first period
everything it watches is hot.
"""

import bisect

from oslo_log import log as logging

from agent import privsep

LOG = logging.getLogger(__name__)

# Samples per aggregation, and the bounds of a sample (the access
# daemon's own bounds are wider: agent.privsep.damon).
SAMPLES = 500
SAMPLE_US = (5000, 100000)
AGGREGATION_US_MAX = 60000000


def intervals(period_s):
    """(sample_us, aggregation_us) for the agent's period: pure."""
    aggregation = min(int(period_s * 1e6), AGGREGATION_US_MAX)
    sample = min(max(aggregation // SAMPLES, SAMPLE_US[0]), SAMPLE_US[1])
    return sample, max(aggregation, sample)


def accessed_ranges(regions, period_s, aggregation_us):
    """Sorted, merged ``(start, end)`` accessed within the period: pure.

    ``regions``: DAMON's ``(start, end, nr_accesses, age)``.
    """
    horizon_us = period_s * 1e6
    merged = []
    for start, end, nr_accesses, age in sorted(regions):
        if nr_accesses == 0 and age * aggregation_us >= horizon_us:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def accessed_pages(ranges, start, count, page_size):
    """One bool per page of a window: whether a range holds it: pure."""
    starts = [first for first, _ in ranges]
    found = []
    for index in range(count):
        address = start + index * page_size
        at = bisect.bisect_right(starts, address) - 1
        found.append(at >= 0 and address < ranges[at][1])
    return found


class AccessMonitor:
    """The access daemon's client: which guests it watches, what it saw.

    ``period``: the agent's, in seconds. Failures (DAMON missing, busy
    with someone else's kdamonds, the daemon not allowed) are said once
    at WARNING; the census then goes on with written pages alone.
    """

    def __init__(self, period):
        self._period = period
        self._sample_us, self._aggregation_us = intervals(period)
        self._watched = frozenset()
        self._warned = False
        # A kernel without DAMON does not grow it: asked once.
        self._absent = False

    @staticmethod
    def daemon():
        return privsep.entry_points('damon')

    def follow(self, pids):
        """Watch exactly ``pids``; DAMON restarts only when they change."""
        pids = frozenset(pids)
        if pids == self._watched or self._absent:
            return
        try:
            self._watched = frozenset(self.daemon().watch(
                sorted(pids), self._sample_us, self._aggregation_us))
        except (OSError, ValueError, *privsep.DAEMON_ERRORS) as exc:
            # No sysfs interface: no DAMON in this kernel, for good.
            self._absent = isinstance(exc, FileNotFoundError)
            self._say(exc)
            self._watched = frozenset()

    def accessed(self, pid):
        """Ranges of ``pid`` accessed within the period, or None."""
        if pid not in self._watched:
            return None
        try:
            regions = self.daemon().regions(pid)
        except (OSError, ValueError, *privsep.DAEMON_ERRORS) as exc:
            self._say(exc)
            return None
        if regions is None:
            return None
        return accessed_ranges(regions, self._period, self._aggregation_us)

    def release(self):
        """Stop and remove the agent's kdamonds (the agent stops)."""
        if not self._watched:
            return
        self._watched = frozenset()
        try:
            self.daemon().release()
        except (OSError, ValueError, *privsep.DAEMON_ERRORS) as exc:
            LOG.warning('DAMON\'s kdamonds of this agent not removed: %s',
                        exc)

    def _say(self, exc):
        log = LOG.debug if self._warned else LOG.warning
        self._warned = True
        log('DAMON not used for tiered guests (%s): their hot pages are '
            'those they wrote', exc)
