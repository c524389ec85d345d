"""Every plugin's answer about one host, from the checks in :mod:`.scoring`.

nova runs our filters and weighers one after another over the same hosts
for the same request. An :class:`Assessor` (one per request *shape* and
settings) turns the checks' verdicts about a host into one
:class:`Assessment`: pass or fail for each filter and the raw weight for
each weigher, as plain booleans and floats, which every plugin reads.

Pure: remembering assessments across plugins and requests, and computing
them ahead when a report arrives, is the scheduler's business
(``placement_filters/assessors.py``).
"""

import typing

from nova_numa_policy.scheduling import scoring


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


def kept(assessments, field):
    """``(kept, load_set_aside)`` of a filter reading ``field``.

    The rule is :func:`~.scoring.keep`'s. The load filter has no other
    check: with no quiet host it keeps every host. The combined filter
    then keeps the hosts that pass the policy and NIC checks. Other
    fields are read as they are.
    """
    if field == LOAD:
        return scoring.keep([(True, a[LOAD]) for a in assessments])
    if field == PASSED:
        return scoring.keep([(a[POLICY] and a[NIC], a[LOAD])
                             for a in assessments])
    return [a[field] for a in assessments], False


def without_report(assessor, assessments, field):
    """How many hosts a filter reading ``field`` refuses for want of a report.

    Those are the hosts assessed as :attr:`Assessor.no_report` (no fresh
    report) when that answer fails the filter: strict mode, for a flavor
    that asks what only a report can answer.
    """
    no_report = assessor.no_report
    if no_report[field]:
        return 0
    return sum(1 for assessment in assessments if assessment is no_report)


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
        # every host without looking (as their checks say).
        # The policy filter asks about hw:numa_policy and about the top
        # memory tier (scoring.policy_check).
        self.asks_policy = error or (
            request.policy is not None and not owned
            and (request.policy_explicit or request.asks_tiers))
        self.asks_nic = not error and request.nic_required and not owned
        self.asks_load = not error and not owned and (
            not request.plain or settings.filter_plain_flavors)
        self.weighs_nic = scoring.applies(scoring.nic_weight, request,
                                          settings)
        self.weighs_load = scoring.applies(scoring.load_weight, request,
                                           settings)
        # A host without a fresh report, answered once for every such host.
        self.no_report = self._answer(None)

    @property
    def asks(self):
        return self.asks_policy or self.asks_nic or self.asks_load

    @property
    def weighs(self):
        return self.weighs_nic or self.weighs_load

    def assess(self, summary, now):
        """The :class:`Assessment` of a host's summary (or None) at ``now``."""
        if summary is None or not summary.is_fresh(now, self.settings.ttl):
            return self.no_report
        return self.compute(summary)

    def compute(self, summary):
        """The assessment of a fresh summary, the checks' verdicts read."""
        return self._answer(summary)

    def _answer(self, summary):
        # summary: fresh, or None when the host has no fresh report.
        # A check the request does not ask (asks_* and weighs_* say so,
        # from the same request) would only pass: it is not run. This runs
        # for every host of a new shape and eight times per report.
        request, settings = self.request, self.settings
        fresh = summary is not None
        policy = nic = load = True
        nic_weight = load_weight = None
        if self.asks_policy:
            policy = scoring.policy_check(request, summary, settings).passed
        if self.asks_nic or self.weighs_nic:
            verdict = scoring.nic_check(request, summary, settings)
            nic = verdict.passed
            if fresh and self.weighs_nic:
                nic_weight = scoring.nic_weight_of(verdict)
        if self.asks_load or self.weighs_load:
            verdict = scoring.load_fit(request, summary, settings)
            if self.asks_load:
                load = verdict.passed
            if fresh and self.weighs_load:
                load_weight = scoring.load_weight_of(verdict)
        # tuple.__new__ skips the NamedTuple's Python-level constructor.
        return _new(Assessment, (policy and nic and load, policy, nic, load,
                                 nic_weight, load_weight))
