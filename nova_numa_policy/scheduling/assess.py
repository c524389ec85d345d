"""Every plugin's answer about one host, computed once and shared.

nova runs our filters and weighers one after another over the same hosts
for the same request; each used to judge every host on its own, building
a :class:`~.scoring.Verdict` with its reason and numbers even for hosts that
pass. An :class:`Assessor` (one per request *shape* and settings) computes
a host's :class:`Assessment` once: pass or fail for each filter and the raw
weight for each weigher, as plain booleans and floats.

The assessment is memoised on the :class:`~.summary.HostSummary` it was
computed from. Summaries are immutable and replaced whole by every report,
so a memo entry can never outlive the data it came from, and a repeated
request shape (the common case: a few flavors) costs one dictionary lookup
per host. Freshness depends on the time, not on the summary, so it is
checked on every lookup and never memoised.

A new report brings a new summary with an empty memo; :func:`prime` fills
it at ingest, in the listener's thread, for the request shapes scheduled
most recently, so that the first request after a round of reports finds
its answers ready instead of computing them for every host on the
request's path. Only a shape nobody asked for recently is computed there.

Reasons and numbers come from the verdict functions in :mod:`.scoring`,
called only for a failure that is being logged and by :mod:`.explain`; a
test holds both paths to the same answers.
"""

import threading
import typing

from nova_numa_policy.scheduling import scoring

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


class Assessment(typing.NamedTuple):
    """One host for one request shape; fields mirror the plugins."""

    passed: bool  # every filter that asks about this request passes
    policy: bool  # NumaPolicyFilter
    nic: bool  # NumaNicLocalityFilter
    load: bool  # NumaNodeLoadFilter
    nic_weight: float | None  # NumaNicLocalityWeigher; None: neutral
    load_weight: float | None  # NumaNodeLoadWeigher; None: neutral


_new = tuple.__new__

# Field positions, for plugins that index assessments on the per-host path.
PASSED, POLICY, NIC, LOAD, NIC_WEIGHT, LOAD_WEIGHT = range(
    len(Assessment._fields))


def request_shape(request):
    """What an assessment depends on: the request without its instance."""
    return (request.vcpus, request.memory_mb, request.policy,
            request.policy_explicit, request.physnets,
            request.nova_topology, request.error)


class Assessor:
    """Assesses hosts for one request shape under one set of settings."""

    def __init__(self, request, settings):
        self.request = request
        self.settings = settings
        error = request.error is not None
        owned = request.nova_topology
        # Which filters have a question for this request; the others pass
        # every host without looking (see the verdict functions).
        self.asks_policy = error or (request.policy is not None and
                                     request.policy_explicit and not owned)
        self.asks_nic = not error and request.nic_required and not owned
        self.asks_load = not error and not owned
        self.weighs_nic = scoring.applies(scoring.nic_weight, request,
                                          settings)
        self.weighs_load = scoring.applies(scoring.load_weight, request,
                                           settings)
        self.no_report = self._without_report()
        # What compute() reads for every host, resolved once.
        self._policy_value = (request.policy.value if self.asks_policy
                              and not error else None)
        self._nic = self.asks_nic or self.weighs_nic

    @property
    def asks(self):
        return self.asks_policy or self.asks_nic or self.asks_load

    @property
    def weighs(self):
        return self.weighs_nic or self.weighs_load

    def _without_report(self):
        # A missing or stale report: only strict mode fails, and only the
        # questions a report alone can answer; load never fails on it.
        refuse = self.settings.strict
        policy = (self.request.error is None
                  and not (self.asks_policy and refuse))
        nic = not (self.asks_nic and refuse)
        return Assessment(policy and nic, policy, nic, True, None, None)

    def assess(self, summary, now):
        """The :class:`Assessment` of a host's summary (or None) at ``now``.

        Safe from any thread or greenthread: the memo is only read and
        written with single dictionary operations, and two threads racing
        on the same host compute the same pure answer.
        """
        return self.assess_many((summary,), now)[0]

    def assess_many(self, summaries, now):
        """:meth:`assess` of each summary, in order: the per-host path."""
        if self.request.error is not None:
            return [self.no_report] * len(summaries)
        # Hoisted into locals: this loop runs for every host, up to five
        # times per request (once per plugin).
        ttl, no_report = self.settings.ttl, self.no_report
        out = []
        for summary in summaries:
            # The same test as HostSummary.is_fresh, inlined.
            if summary is None or now - summary.generated_at > ttl:
                out.append(no_report)
                continue
            found = summary.memo.get(self)
            if found is None:
                found = self._remember(summary)
            out.append(found)
        return out

    def _remember(self, summary):
        found = self.compute(summary)
        memo = summary.memo
        if len(memo) >= MAX_SHAPES_PER_HOST:
            memo.clear()
        memo[self] = found
        return found

    def compute(self, summary):
        """Assess a fresh summary, without the memo."""
        request, threshold = self.request, self.settings.threshold
        vcpus, memory_mb = request.vcpus, request.memory_mb
        policy = (self._policy_value is None
                  or self._policy_value in summary.enforceable)
        load, load_weight = True, None
        if self.asks_load:
            node, headroom = scoring.best_node(
                scoring.load_candidates(summary, request), vcpus, memory_mb,
                threshold)
            load = node is not None and headroom >= 0
            if self.weighs_load:
                load_weight = (scoring.WEIGHT_FLOOR if node is None
                               else scoring.clamp(headroom))
        nic, nic_weight = True, None
        if self._nic:
            headroom, weight = scoring.nic_fit(
                summary.nodes,
                scoring.nic_local_ids(summary, request.physnets), vcpus,
                memory_mb, threshold)
            if self.asks_nic:
                nic = headroom is not None and headroom >= 0
            if self.weighs_nic:
                nic_weight = scoring.WEIGHT_FLOOR if weight is None else weight
        # tuple.__new__ skips the NamedTuple's Python-level constructor.
        return _new(Assessment, (policy and nic and load, policy, nic, load,
                                 nic_weight, load_weight))


_assessors = {}
# Assessors by last use, oldest first (a dict keeps insertion order).
_recent = {}
_assessors_lock = threading.Lock()


_last_used = None


def _used(assessor):
    global _last_used
    if _last_used is assessor:
        return  # the common case: the same shape as the last plugin's
    with _assessors_lock:
        _recent.pop(assessor, None)
        _recent[assessor] = None
        while len(_recent) > PRIMED_SHAPES:
            del _recent[next(iter(_recent))]
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
    """The shared :class:`Assessor` of a request's shape and settings.

    Requests of the same shape get the same assessor, whose identity keys
    the memo of every summary, so a repeated flavor reuses assessments.
    Its ``request`` is the first of that shape: log with your own.
    """
    key = (request_shape(request), settings)
    assessor = _assessors.get(key)
    if assessor is None:
        with _assessors_lock:
            assessor = _assessors.get(key)
            if assessor is None:
                if len(_assessors) >= MAX_ASSESSORS:
                    _assessors.clear()
                assessor = _assessors[key] = Assessor(request, settings)
    _used(assessor)
    return assessor
