"""The scheduler's memory of assessments: per host report, per shape.

An assessment (:mod:`nova_numa_policy.scheduling.assess`) is pure; this
module decides how long to keep one, at the edge where nova calls us.

* **Memo on the summary.** An assessment is kept on the
  :class:`~nova_numa_policy.scheduling.summary.HostSummary` it was
  computed from. Summaries are immutable and replaced whole by every
  report, so a kept answer can never outlive its data, and a repeated
  request shape (the common case: a few flavors) costs one dictionary
  lookup per host for every plugin after the first. Freshness depends on
  the time, not on the summary: judged at every lookup, never kept.
* **One assessor per shape and settings**, so its identity keys the memo
  of every summary.
* **Priming.** A new report brings a new summary with an empty memo;
  :func:`prime` fills it at ingest, in the listener's thread, for the
  shapes scheduled most recently, so that the first request after a round
  of reports finds its answers ready instead of computing them for every
  host on the request's path.

``tests/bench/scheduler.py`` shows what each pays: the memo is the
difference between its *warm* and *new shape* rows, priming between its
*after reports* and *new shape* rows.
"""

import threading

import cachetools

from nova_numa_policy.scheduling import assess

# A summary remembers at most this many request shapes; past that its memo
# starts over. Clouds schedule a handful of flavors, so this is rarely hit,
# and it bounds memory at max_hosts x MAX_SHAPES_PER_HOST assessments.
MAX_SHAPES_PER_HOST = 16
# Assessors kept for reuse across requests, by shape and settings.
MAX_ASSESSORS = 256
# Shapes assessed ahead at ingest: the most recently requested ones. Each
# costs a few microseconds per report (see tests/bench/scheduler.py), and
# a cloud schedules a handful of flavors at a time.
PRIMED_SHAPES = 8


def assess_many(assessor, summaries, now):
    """``assessor.assess`` of each summary, in order, through the memos.

    The per-host path. Safe from any thread or greenthread: a memo is only
    read and written with single dictionary operations, and two threads
    racing on the same host compute the same pure answer.
    """
    if assessor.request.error is not None:
        return [assessor.no_report] * len(summaries)
    # Hoisted into locals: this loop runs for every host, up to five
    # times per request (once per plugin).
    ttl, no_report = assessor.settings.ttl, assessor.no_report
    out = []
    for summary in summaries:
        # The same test as HostSummary.is_fresh, inlined.
        if summary is None or now - summary.generated_at > ttl:
            out.append(no_report)
            continue
        found = summary.memo.get(assessor)
        if found is None:
            found = _remember(assessor, summary)
        out.append(found)
    return out


def _remember(assessor, summary):
    found = assessor.compute(summary)
    memo = summary.memo
    if len(memo) >= MAX_SHAPES_PER_HOST:
        memo.clear()
    memo[assessor] = found
    return found


# A plain dict, read without a lock on every request: cleared when full
# rather than kept in least-recently-used order, which would cost a
# bookkeeping step on every lookup.
_assessors = {}


def _recent_shapes(size):
    """The assessors of the shapes requested last, at most ``size``.

    Least recently used first: an assessor used again is taken out and
    put back, so iteration follows use, and a full cache drops the one
    used longest ago.
    """
    return cachetools.LRUCache(maxsize=size)


_recent = _recent_shapes(PRIMED_SHAPES)
_assessors_lock = threading.Lock()
_last_used = None


def _used(assessor):
    global _last_used
    if _last_used is assessor:
        return  # the common case: the same shape as the last plugin's
    with _assessors_lock:
        _recent.pop(assessor, None)
        _recent[assessor] = None
        _last_used = assessor


def recent_assessors():
    """The assessors of the shapes requested last, most recent last."""
    with _assessors_lock:
        return tuple(_recent)


def prime(summary, assessors):
    """Memoise each assessor's answer on a new summary before it is read.

    Called before the summary is published to the cache, so no reader
    races with these writes.
    """
    for assessor in assessors:
        if assessor.request.error is None:
            summary.memo[assessor] = assessor.compute(summary)


def assessor_for(request, settings):
    """The shared :class:`~assess.Assessor` of a request's shape and settings.

    Requests of the same shape get the same assessor, whose identity keys
    the memo of every summary, so a repeated flavor reuses assessments.
    Its ``request`` is the first of that shape: log with your own.
    """
    key = (assess.request_shape(request), settings)
    assessor = _assessors.get(key)
    if assessor is None:
        with _assessors_lock:
            assessor = _assessors.get(key)
            if assessor is None:
                if len(_assessors) >= MAX_ASSESSORS:
                    _assessors.clear()
                assessor = _assessors[key] = assess.Assessor(request,
                                                             settings)
    _used(assessor)
    return assessor
