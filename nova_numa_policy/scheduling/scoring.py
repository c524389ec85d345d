"""Pure verdicts and weights of the scheduler plugins.

Inputs are a :class:`Request` (what one instance asks for, resolved once per
scheduling request), a :class:`~.summary.HostSummary` or None (the host's
last report), :class:`Settings` and the time; outputs are a
:class:`Verdict` or a raw weight. No I/O, no nova objects: the filters and
weighers in ``placement_filters`` gather the inputs and log the reasons.

Each filter's question is one check function (:func:`policy_check`,
:func:`nic_check`, :func:`load_check`) whose :class:`Verdict` builds its
reason and numbers only when they are read; each weight is read off the
same check's verdict. :mod:`.assess` turns the checks into a host's
booleans and weights for the plugins, :mod:`.explain` shows them with
their reasons: one computation, two readers.

Agreement with nova: when nova owns the guest's NUMA topology
(``Request.nova_topology``), nova's NUMATopologyFilter chooses the host
nodes; every function here then passes and weighs neutrally instead of
judging nodes nova may not choose.

Load is measured, never assumed: a node is *quiet* when the load its
agent measured on its floating CPUs is at or under the threshold, and
only that decides :func:`load_check`. The new guest's own vCPUs count at
``Settings.vcpu_load`` each, in the headroom the weighers and the choice
between quiet nodes read, never in a refusal: nova's CPU allocation
ratio, not our filter, decides how many vCPUs a host takes. Load is a
preference, so :func:`keep` sets it aside when no host has a quiet node
(doc/source/scheduler.rst, "The load model").

Memory tiers (doc/source/scheduler.rst, "Memory tiers"): a flavor that
keeps its memory on the top tier (``hw:numa_memory_tiers`` ``top``, or
``tiered``'s share) is the operator's policy, so :func:`policy_check`
refuses a host with a lower tier whose top tier has not that much free,
and the fit rules (:func:`load_fit`, :func:`nic_check`) judge such a
flavor on the top-tier nodes only (:func:`tier_scope`). Flavors that ask
nothing of the tiers (``any``), and every flavor on a host without a
lower tier, are judged exactly as before tiers were reported.
"""

import dataclasses
import math
import statistics
import typing

from nova_numa_policy.contracts import exception
from nova_numa_policy.contracts import locality
from nova_numa_policy.contracts import policy as numa_policy
from nova_numa_policy.contracts import tiers as tier_contract
from nova_numa_policy.scheduling import summary as summary_mod

# Raw weights are headroom fractions clamped to this range, so one host
# with a huge deficit cannot squash every other host's normalised weight.
WEIGHT_FLOOR = -1.0
WEIGHT_CEILING = 1.0


# The busy share of each of a new guest's vCPUs the headroom assumes:
# 1 / nova's initial_cpu_allocation_ratio (4.0), the mean share at which
# a host filled to nova's default ratio is exactly busy.
DEFAULT_VCPU_LOAD = 0.25

# What the load weigher adds to the raw weight of a host whose lower
# memory tier has room for a ``tiered`` guest's lower share (its memory
# beyond hw:numa_top_tier_percent), so that such a guest goes where its
# cold memory may leave the top tier, and top-tier memory stays for the
# guests that need it. Small beside the headroom it is added to (ten
# points of a node's load): a host with lower-tier room wins among hosts
# about as quiet, never over one with more than 0.1 more headroom. A
# term of the load weigher rather than a weigher of its own: no class to
# enable, no option, no field more per host, and no change for the
# flavors that are not ``tiered``; its multiplier is
# node_load_weight_multiplier.
LOWER_TIER_ROOM_WEIGHT = 0.1


@dataclasses.dataclass(frozen=True)
class Settings:
    ttl: float
    strict: bool
    threshold: float
    weigh_plain_flavors: bool = False
    # The expected busy share of each vCPU of the new guest.
    vcpu_load: float = DEFAULT_VCPU_LOAD
    # Whether the load filter also judges flavors that name no hw:numa_*
    # key; off, only the weigher may (weigh_plain_flavors).
    filter_plain_flavors: bool = False


@dataclasses.dataclass(frozen=True)
class Request:
    vcpus: int
    memory_mb: int
    policy: numa_policy.NumaPolicy | None = None
    # True when the flavor names hw:numa_policy itself (not only a
    # companion key, which implies the kernel's own first-touch).
    policy_explicit: bool = False
    physnets: frozenset = frozenset()
    nova_topology: bool = False
    # Why the request can never be honoured (a NumaPolicyError message).
    error: str | None = None
    instance_uuid: str | None = None
    # The MB of the guest's memory that must be on the top memory tier
    # (all of it with hw:numa_memory_tiers=top, its share with tiered,
    # 0 with any), and, for tiered, the MB that may be on a lower tier.
    top_tier_mb: int = 0
    lower_tier_mb: int = 0

    @property
    def plain(self):
        return self.policy is None and self.error is None

    @property
    def nic_required(self):
        return (self.policy is not None and
                self.policy.nic_locality is numa_policy.NicLocality.REQUIRED)

    @property
    def io_heavy(self):
        """Whether the instance gains from sitting near its uplink."""
        if self.policy is None:
            return False
        return (self.policy.nic_locality is not numa_policy.NicLocality.NONE
                or self.policy.io_intensity is numa_policy.IoIntensity.HIGH)

    @property
    def asks_tiers(self):
        """Whether the flavor keeps memory on the top tier (top, tiered)."""
        return (self.policy is not None and self.policy.memory_tiers.mode
                is not tier_contract.TierMode.ANY)

    @property
    def tiers(self):
        """The flavor's hw:numa_memory_tiers value, as the user set it."""
        return self.policy.memory_tiers.mode.value


def make_request(extra_specs, vcpus, memory_mb, image_props=None,
                 physnets=(), nova_topology=False, instance_uuid=None):
    """Resolve a flavor once into a :class:`Request`; never raises.

    A flavor :func:`nova_numa_policy.contracts.policy.resolve` refuses becomes
    a request carrying ``error``, which the policy filter rejects everywhere.
    """
    extra_specs = extra_specs or {}
    common = dict(vcpus=vcpus, memory_mb=memory_mb,
                  physnets=frozenset(physnets or ()),
                  instance_uuid=instance_uuid)
    try:
        resolved = numa_policy.resolve(extra_specs, image_props)
    except exception.NumaPolicyError as exc:
        return Request(error=str(exc), nova_topology=nova_topology,
                       **common)
    top_tier_mb = lower_tier_mb = 0
    if resolved is not None:
        memory_tiers = resolved.memory_tiers
        top_tier_mb = memory_tiers.top_tier_mb(memory_mb)
        if memory_tiers.mode is tier_contract.TierMode.TIERED:
            lower_tier_mb = memory_mb - top_tier_mb
    return Request(
        policy=resolved,
        policy_explicit=numa_policy.POLICY_KEY in extra_specs,
        nova_topology=nova_topology or bool(
            resolved and resolved.within_nova_topology),
        top_tier_mb=top_tier_mb, lower_tier_mb=lower_tier_mb,
        **common)


class Verdict(typing.NamedTuple):
    """One check's answer about one host; its reason is built when read.

    The per-host path reads ``passed`` (and a weigher ``headroom`` or
    ``weight``); ``reason``, ``node`` and ``numbers`` are derived from
    ``why`` and the inputs kept here only when a log line or the why-not
    explanation asks for them.
    """

    passed: bool
    why: str  # a key of _REASONS
    best: object = None  # the NodeState the answer rests on, if any
    headroom: float | None = None  # threshold minus the best node's load
    weight: float | None = None  # NIC weight: headroom shared, clamped
    request: object = None  # the Request and Settings judged, for the
    settings: object = None  # reason's numbers
    summary: object = None  # the fresh HostSummary judged, if any

    @property
    def node(self):
        return None if self.best is None else self.best.id

    @property
    def reason(self):
        reason = _REASONS[self.why]
        return reason(self) if callable(reason) else reason

    @property
    def numbers(self):
        return _NUMBERS.get(self.why, _no_numbers)(self)


_new = tuple.__new__


def _verdict(passed, why, best=None, headroom=None, weight=None,
             request=None, settings=None, summary=None):
    # tuple.__new__ skips the NamedTuple's Python-level constructor: the
    # checks run for every host when a report or a new shape arrives.
    return _new(Verdict, (passed, why, best, headroom, weight, request,
                          settings, summary))


def _no_numbers(verdict):
    return {}


def _fit_numbers(verdict):
    request, settings, node = verdict.request, verdict.settings, verdict.best
    numbers = {'vcpus': request.vcpus, 'memory_mb': request.memory_mb,
               'threshold': settings.threshold,
               'vcpu_load': settings.vcpu_load}
    if node is not None:
        # The node's CPUs a floating guest may use and their load: what
        # the verdict judged (summary.NodeState).
        numbers.update(load=round(node.floating_load, 3),
                       cpus=node.floating_cpus, free_mb=node.free_mb,
                       headroom=_finite(verdict.headroom))
    top = tier_scope(request, verdict.summary)
    if top is not None:
        numbers.update(_tier_numbers(request, top))
    return numbers


def _tier_numbers(request, top):
    """The memory tiers' figures a verdict on a tiered host rests on."""
    return {'memory_tiers': request.tiers,
            'top_tier_mb': request.top_tier_mb,
            # Free counts the demotable MB the lower tier has room for
            # (summary.TopTier), which lower_tier_free_mb no longer does.
            'top_tier_free_mb': top.free_mb,
            'top_tier_demotable_mb': top.demotable_mb,
            'lower_tier_free_mb': top.lower_free_mb,
            'top_tier_nodes': top.ids,
            'lower_tier_nodes': list(top.lower_ids)}


def _finite(headroom):
    """A headroom rounded for the numbers; None when minus infinity.

    A node without CPUs for a floating guest has no headroom to speak
    of, and JSON has no infinity.
    """
    return round(headroom, 3) if math.isfinite(headroom) else None


def _enforce_numbers(request, summary):
    numbers = {'enforceable': sorted(summary.enforceable)}
    if request.policy.needs_locality_signal:
        numbers['locality_signal'] = summary.locality_signal
    return numbers


def _tier_words(verdict):
    """Why the flavor's memory fits, or not, on the host's top tier."""
    request, top = verdict.request, verdict.summary.top_tier
    tiers = request.policy.memory_tiers
    if tiers.mode is tier_contract.TierMode.TOP:
        words = 'top tier only'
    else:
        words = f'tiered, {tiers.top_tier_percent} % on the top tier'
    words += (f': {request.top_tier_mb} MB needed, {top.free_mb} MB free '
              f'on top-tier nodes {top.ids}')
    if top.demotable_mb:
        words += (f' ({top.demotable_mb} MB of it cold pages above tiered '
                  f'guests\' shares, which go to the lower tier)')
    return _enforced(request, words)


def _enforced(request, words):
    """``words`` after what the enforcement check said, if it was asked."""
    if request.policy_explicit:
        return f'agent enforces {request.policy.value}; {words}'
    return words


def _on_the_top_tier(words):
    """A memory reason, which names the top tier where the flavor keeps to it.

    The numbers (:func:`_tier_numbers`) say how much is free on each tier.
    """
    def reason(verdict):
        if tier_scope(verdict.request, verdict.summary) is None:
            return words
        if verdict.request.lower_tier_mb:
            return (f'{words} on the top memory tier, with the lower '
                    f"tier's free memory for the rest "
                    f'(hw:numa_memory_tiers=tiered)')
        return f'{words} on the top memory tier (hw:numa_memory_tiers=top)'
    return reason


def _cannot_enforce(request, summary):
    words = f'agent cannot enforce {request.policy.value}'
    if request.policy.needs_locality_signal and not summary.locality_signal:
        words += (': the host measures no memory locality; '
                  f'{locality.HOW_TO_MEASURE}')
    return words


_REASONS = {
    'not-asked': 'the request does not ask for this',
    'nova-owns': "nova owns the guest's NUMA topology; "
                 "NUMATopologyFilter decides",
    'no-report-permissive': 'no fresh report; permissive mode',
    'no-report-strict': 'no fresh report; strict mode',
    'no-report-neutral': 'no fresh report; neutral',
    'refused': lambda v: v.request.error,
    'enforces': lambda v: f'agent enforces {v.request.policy.value}',
    'cannot-enforce': lambda v: _cannot_enforce(v.request, v.summary),
    'no-nic-node': 'no NUMA node is local to the uplink',
    'no-nic-memory': _on_the_top_tier(
        'no NIC-local node has the free memory and CPUs a guest without '
        'dedicated CPUs may use'),
    'nic-fits': 'NIC-local node holds the instance',
    'plain-not-filtered': 'the flavor names no hw:numa_* key; plain '
                          'flavors are not filtered on load',
    'no-memory': _on_the_top_tier('no node has the free memory'),
    'over': 'every node that holds the instance is measured over the '
            'load threshold',
    'fits': 'a node measured under the load threshold holds the instance',
    'no-quiet-host': 'no host has a node measured under the load '
                     "threshold for the instance; load is set aside and "
                     "nova's own choice stands",
    'no-lower-tier': lambda v: _enforced(
        v.request, 'no lower memory tier: every node is in the top tier'),
    'top-tier-fits': _tier_words,
    'top-tier-full': _tier_words,
}
_NUMBERS = {
    'cannot-enforce': lambda v: _enforce_numbers(v.request, v.summary),
    'no-nic-node': lambda v: {'physnets': sorted(v.request.physnets)},
    'no-nic-memory': _fit_numbers, 'nic-fits': _fit_numbers,
    'plain-not-filtered': _fit_numbers, 'no-memory': _fit_numbers,
    'over': _fit_numbers, 'fits': _fit_numbers,
    'no-quiet-host': _fit_numbers,
    'top-tier-fits': lambda v: _tier_numbers(v.request, v.summary.top_tier),
    'top-tier-full': lambda v: _tier_numbers(v.request, v.summary.top_tier),
}

PASS_NOT_ASKED = _verdict(True, 'not-asked')
PASS_NOVA_OWNS = _verdict(True, 'nova-owns')
PASS_NO_REPORT = _verdict(True, 'no-report-permissive')
FAIL_NO_REPORT = _verdict(False, 'no-report-strict')
PASS_NO_REPORT_NEUTRAL = _verdict(True, 'no-report-neutral')


def fresh(summary, now, settings):
    """The summary if it is fresh at ``now``, else None."""
    if summary is not None and summary.is_fresh(now, settings.ttl):
        return summary
    return None


def _no_report(settings):
    return FAIL_NO_REPORT if settings.strict else PASS_NO_REPORT


def report_questions(request, asks_policy, asks_nic):
    """The flavor keys only a host's report answers, as the user set them."""
    keys = []
    if asks_policy and request.policy is not None:
        if request.policy_explicit:
            keys.append(f'hw:numa_policy={request.policy.value}')
        if request.asks_tiers:
            keys.append(f'hw:numa_memory_tiers={request.tiers}')
    if asks_nic:
        keys.append('hw:numa_nic_locality=required')
    return keys


def no_report_refusal(keys, ttl):
    """Why a request failed when only hosts without a fresh report were left.

    What the user reads in the server's fault (nova's conductor writes a
    NoValidHost reason there), so that "No valid host" names its cause:
    the hosts' agents are silent, not the request wrong. Like nova's own
    reasons it gives no count of hosts: the operator's log has those.
    """
    return (f'No host has a NUMA report from its nova-numa-policy agent '
            f'in the last {ttl:g} s, and this cloud places '
            f'{" with ".join(keys)} only where an agent reports it can be '
            f'enforced (no_report_mode = strict): the agents '
            f'(numa-policy-agent) on the compute hosts are down or cannot '
            f'reach the message queue. Ask the cloud operator.')


def tier_refusal(request):
    """Why a request failed when every host left lacked top-tier room.

    What the user reads in the server's fault, as
    :func:`no_report_refusal`; short, for nova keeps 255 characters of
    it, and like nova's own reasons without a count of hosts.
    """
    tiers = request.policy.memory_tiers
    if tiers.mode is tier_contract.TierMode.TOP:
        keeps = (f'{tier_contract.MEMORY_TIERS_KEY}=top keeps all of the '
                 f"instance's memory")
    else:
        keeps = (f'{tier_contract.MEMORY_TIERS_KEY}=tiered keeps '
                 f"{tiers.top_tier_percent} % of the instance's memory")
    return (f'No host has {request.top_tier_mb} MB free on its top memory '
            f'tier, where {keeps}.')


def tier_scope(request, summary):
    """The top tier a request's memory is held to on a host, or None.

    None (every node, as before tiers) for a flavor that asks nothing of
    the tiers, and on a host without a lower tier.
    """
    if not request.top_tier_mb:
        return None
    return summary.top_tier


def tier_need(request, top):
    """The free MB a top-tier node (or the top tier as one) must have.

    ``top``: :func:`tier_scope`'s. A ``top`` guest needs all its memory
    there; a ``tiered`` one its share, and of the rest what the lower
    tier has no room for.
    """
    return max(request.top_tier_mb, request.memory_mb - top.lower_free_mb)


def best_node(nodes, vcpus, memory_mb, settings):
    """The node the instance would best sit on, among those with the memory.

    Quiet nodes (:func:`summary.is_quiet`) come first; among equals, the
    most headroom left with the instance's expected load.

    :returns: ``(node, headroom)``; headroom is the threshold minus the
        node's projected load (negative: over the threshold), or
        ``(None, None)`` when no node has the free memory.
    """
    threshold, vcpu_load = settings.threshold, settings.vcpu_load
    best = best_quiet = best_headroom = None
    for node in nodes:
        if node.free_mb < memory_mb:
            continue
        quiet = summary_mod.is_quiet(node, threshold)
        headroom = threshold - summary_mod.projected_load(node, vcpus,
                                                          vcpu_load)
        # Compared without a (quiet, headroom) tuple: this runs for every
        # node of every host of a new request shape.
        if (best is None or quiet > best_quiet
                or (quiet == best_quiet and headroom > best_headroom)):
            best, best_quiet, best_headroom = node, quiet, headroom
    return best, best_headroom


def load_candidates(summary, request):
    """The nodes an instance may sit on; the whole host if none can.

    A guest without a NUMA topology bigger than every node (more vCPUs
    than any node has floating CPUs, or more memory) is spread over
    nodes by the kernel, so it is judged against the host as a whole.
    A flavor held to the top memory tier (:func:`tier_scope`) is judged
    the same way among the top-tier nodes, on what it needs of each
    (:func:`tier_need`).
    """
    # tier_scope(), inlined: this runs for every host of a new shape.
    top = summary.top_tier if request.top_tier_mb else None
    if top is not None:
        if (request.vcpus <= top.largest_node_floating_cpus
                and tier_need(request, top) <= top.largest_node_mb):
            return top.nodes
        return (top.whole,)
    if (request.vcpus <= summary.largest_node_floating_cpus
            and request.memory_mb <= summary.largest_node_mb):
        return summary.nodes
    return (summary.whole,)


def nic_local_ids(summary, physnets):
    """Ids of the nodes local to the instance's uplink.

    The physnet mapping is used when the request names physnets and the
    host reports which uplink carries which physnet; otherwise any uplink.
    """
    if physnets and summary.physnet_nodes:
        ids = set()
        for name in physnets:
            ids.update(summary.physnet_nodes.get(name, ()))
        return ids
    return summary.nic_nodes


def nic_local_nodes(summary, ids, top=None):
    """The nodes of ``ids`` (:func:`nic_local_ids`) that may hold vCPUs.

    A node without floating CPUs holds no floating guest's vCPUs. With
    ``top`` (:func:`tier_scope`), only the top-tier ones.
    """
    return [node for node in (summary.nodes if top is None else top.nodes)
            if node.id in ids and node.floating_cpus]


def nic_fit(local, vcpus, memory_mb, settings):
    """The best NIC-local node and weight, in one pass over the nodes.

    ``local``: :func:`nic_local_nodes`; only those that hold the memory
    count. The node is the one :func:`best_node` would pick. The weight
    is the clamped headroom shared with the I/O-intensive instances
    already local to that uplink; sharing does not soften a deficit.

    :returns: ``(node, headroom, weight)``: that node, its headroom, and
        the best weight of any of them; or ``(None, None, None)`` when no
        NIC-local node has the free memory.
    """
    threshold, vcpu_load = settings.threshold, settings.vcpu_load
    best = best_quiet = best_headroom = best_weight = None
    for node in local:
        if node.free_mb < memory_mb:
            continue
        quiet = summary_mod.is_quiet(node, threshold)
        headroom = threshold - summary_mod.projected_load(node, vcpus,
                                                          vcpu_load)
        if (best is None or quiet > best_quiet
                or (quiet == best_quiet and headroom > best_headroom)):
            best, best_quiet, best_headroom = node, quiet, headroom
        weight = clamp(headroom)
        if headroom >= 0:
            weight /= 1 + node.io_neighbours
        if best_weight is None or weight > best_weight:
            best_weight = weight
    return best, best_headroom, best_weight


def policy_check(request, summary, settings):
    """NumaPolicyFilter: can this host honour the flavor's policy?

    Can its agent enforce ``hw:numa_policy``, when the flavor names it;
    and, when the flavor keeps memory on the top tier
    (``hw:numa_memory_tiers`` ``top`` or ``tiered``), has its top tier
    that much free (:func:`tier_check`)? ``summary`` is the host's fresh
    summary, or None when it has none: either question then follows
    ``no_report_mode``.
    """
    if request.error is not None:
        return _verdict(False, 'refused', request=request)
    if request.policy is None:
        return PASS_NOT_ASKED
    asks_tiers = request.asks_tiers
    if not (request.policy_explicit or asks_tiers):
        return PASS_NOT_ASKED
    if request.nova_topology:
        # Nova binds each guest cell strictly to a host node, which is the
        # only policy resolve() lets through; no agent is needed for it.
        # Nor for top, the only tier mode it lets through: nova never
        # puts a guest cell on a CPU-less node (contracts/policy.py).
        return PASS_NOVA_OWNS
    if summary is None:
        return _no_report(settings)
    if (request.policy_explicit
            and request.policy.value not in summary.enforceable):
        return _verdict(False, 'cannot-enforce', request=request,
                        summary=summary)
    if asks_tiers:
        return tier_check(request, summary)
    return _verdict(True, 'enforces', request=request)


def tier_check(request, summary):
    """Has a fresh host's top memory tier the flavor's top-tier memory?

    The sum of the top-tier nodes' free memory against
    ``Request.top_tier_mb``: all of a ``top`` guest's memory, a
    ``tiered`` guest's share. A host without a lower tier passes, as it
    did before tiers were reported. The memory beyond a ``tiered``
    guest's share is no policy of the flavor, only room, which the fit
    rules judge (:func:`tier_need`), as they judge every guest's.
    """
    top = summary.top_tier
    if top is None:
        return _verdict(True, 'no-lower-tier', request=request)
    passed = top.whole.free_mb >= request.top_tier_mb
    return _verdict(passed, 'top-tier-fits' if passed else 'top-tier-full',
                    request=request, summary=summary)


def nic_check(request, summary, settings):
    """NumaNicLocalityFilter: does a NIC-local node hold the instance?

    The flavor's requirement is locality, so locality and memory decide;
    how busy the NIC-local nodes are is :func:`load_check`'s question
    (which, for such a flavor, judges those nodes only). The same pass
    gives the NIC weigher its weight (``weight``) for an I/O-heavy
    request that does not require locality; the verdict then passes, as
    the filter does not ask.
    """
    if request.error is not None:
        return PASS_NOT_ASKED
    required = request.nic_required
    if not (required or request.io_heavy):
        return PASS_NOT_ASKED
    if request.nova_topology:
        return PASS_NOVA_OWNS
    if summary is None:
        return _no_report(settings) if required else PASS_NOT_ASKED
    ids = nic_local_ids(summary, request.physnets)
    top = summary.top_tier if request.top_tier_mb else None  # tier_scope()
    best, headroom, weight = nic_fit(
        nic_local_nodes(summary, ids, top), request.vcpus,
        request.memory_mb if top is None else tier_need(request, top),
        settings)
    if not required:
        return _new(Verdict, (True, 'not-asked', best, headroom, weight,
                              None, None, None))
    if best is not None:
        why = 'nic-fits'
    elif any(node.id in ids for node in summary.nodes):
        why = 'no-nic-memory'
    else:
        why = 'no-nic-node'
    return _new(Verdict, (best is not None, why, best, headroom, weight,
                          request, settings, summary))


def load_fit(request, summary, settings):
    """Where the instance would sit on a host, and whether that is quiet.

    The node :func:`best_node` picks among :func:`load_candidates` (the
    NIC-local ones, for a flavor that requires NIC locality and has
    such a node with the memory): ``fits`` when it is quiet, ``over``
    when every candidate with the memory is busy, ``no-memory`` when
    none has it. The load weigher reads its headroom for every flavor it
    weighs; :func:`load_check` adds whether the filter asks at all.
    """
    if request.error is not None:
        return PASS_NOT_ASKED
    if request.nova_topology:
        return PASS_NOVA_OWNS
    if summary is None:
        # Load is a preference nova never had: unknown load is no reason
        # to refuse a host, whatever the mode.
        return PASS_NO_REPORT_NEUTRAL
    top = summary.top_tier if request.top_tier_mb else None  # tier_scope()
    need = request.memory_mb if top is None else tier_need(request, top)
    best = None
    if request.nic_required:
        best, headroom = best_node(
            nic_local_nodes(summary, nic_local_ids(summary,
                                                   request.physnets), top),
            request.vcpus, need, settings)
    if best is None:
        best, headroom = best_node(load_candidates(summary, request),
                                   request.vcpus, need, settings)
    if best is None:
        why = 'no-memory'
    elif summary_mod.is_quiet(best, settings.threshold):
        why = 'fits'
    else:
        why = 'over'
    return _new(Verdict, (why == 'fits', why, best, headroom, None,
                          request, settings, summary))


def load_check(request, summary, settings):
    """NumaNodeLoadFilter: does a quiet node hold the instance?

    A flavor that names no ``hw:numa_*`` key passes unless the operator
    asks for plain flavors to be filtered too (``filter_plain_flavors``).
    """
    verdict = load_fit(request, summary, settings)
    if (request.plain and not settings.filter_plain_flavors
            and not verdict.passed):
        return verdict._replace(passed=True, why='plain-not-filtered')
    return verdict


def keep(rows):
    """Which hosts a filter keeps, from each host's (others, load) passes.

    ``rows``: per host, whether it passes every check but load, and
    whether it passes load. Load is a preference: a host is kept when
    it passes both, unless no host does, when every host that passes the
    other checks is kept (nova's own filters and weighers then choose).

    :returns: ``(kept, load_set_aside)``: a boolean per host, and whether
        load was set aside.
    """
    kept = [others and load for others, load in rows]
    if any(kept):
        return kept, False
    kept = [others for others, _ in rows]
    return kept, any(kept)


def set_aside(verdict):
    """A failed load verdict as it reads once :func:`keep` set load aside."""
    return verdict._replace(passed=True, why='no-quiet-host')


def policy_verdict(request, summary, settings, now):
    """:func:`policy_check` of the host's summary as it stands at ``now``."""
    return policy_check(request, fresh(summary, now, settings), settings)


def nic_verdict(request, summary, settings, now):
    """:func:`nic_check` of the host's summary as it stands at ``now``."""
    return nic_check(request, fresh(summary, now, settings), settings)


def load_verdict(request, summary, settings, now):
    """:func:`load_check` of the host's summary as it stands at ``now``."""
    return load_check(request, fresh(summary, now, settings), settings)


def nic_weight_of(verdict):
    """The raw NIC weight a fresh host's :func:`nic_check` carries."""
    return WEIGHT_FLOOR if verdict.weight is None else verdict.weight


def load_weight_of(verdict):
    """The raw load weight a fresh host's :func:`load_fit` carries.

    The clamped headroom; for a ``tiered`` flavor, plus
    :data:`LOWER_TIER_ROOM_WEIGHT` where the host's lower tier has room
    for the memory beyond the flavor's top-tier share.
    """
    if verdict.best is None:
        return WEIGHT_FLOOR
    weight = clamp(verdict.headroom)
    lower_mb = verdict.request.lower_tier_mb
    if lower_mb:
        top = verdict.summary.top_tier
        if top is not None and top.lower_free_mb >= lower_mb:
            weight += LOWER_TIER_ROOM_WEIGHT
    return weight


def clamp(value):
    """A raw weight within WEIGHT_FLOOR..WEIGHT_CEILING."""
    # Comparisons rather than min(max()): this runs for every host.
    if value > WEIGHT_CEILING:
        return WEIGHT_CEILING
    return WEIGHT_FLOOR if value < WEIGHT_FLOOR else value


def nic_weight(request, summary, settings):
    """Raw NIC-locality weight of a fresh host, or None for "neutral".

    The headroom of the best NIC-local node that holds the memory, shared
    with the I/O-intensive instances already local to that uplink.
    """
    if not applies(nic_weight, request, settings):
        return None
    return nic_weight_of(nic_check(request, summary, settings))


def load_weight(request, summary, settings):
    """Raw node-load weight of a fresh host, or None for "neutral"."""
    if not applies(load_weight, request, settings):
        return None
    return load_weight_of(load_fit(request, summary, settings))


def applies(weight_fn, request, settings):
    """Whether ``weight_fn`` weighs this request at all (else all zeros)."""
    if request.error is not None or request.nova_topology:
        return False
    if weight_fn is nic_weight:
        return request.io_heavy
    return not request.plain or settings.weigh_plain_flavors


def neutral_fill(weights):
    """Give hosts without a fresh report (None) the median known weight.

    Unknown is neither preferred nor avoided: such a host sits in the
    middle of the hosts that were weighed.
    """
    known = [w for w in weights if w is not None]
    if not known:
        return [0.0] * len(weights)
    middle = statistics.median(known)
    return [middle if w is None else w for w in weights]
