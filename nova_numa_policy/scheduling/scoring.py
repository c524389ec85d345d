"""Pure verdicts and weights of the scheduler plugins.

Inputs are a :class:`Request` (what one instance asks for, resolved once per
scheduling request), a :class:`~.summary.HostSummary` or None (the host's
last report), :class:`Settings` and the time; outputs are a
:class:`Verdict` or a raw weight. No I/O, no nova objects: the filters and
weighers in ``placement_filters`` gather the inputs and log the reasons.

The plugins do not call the verdict functions per host: they read the same
answers from :mod:`.assess`, which computes them once per host and request
shape; the verdicts, with their reasons and numbers, serve rejection logs
and :mod:`.explain`.

Agreement with nova: when nova owns the guest's NUMA topology
(``Request.nova_topology``), nova's NUMATopologyFilter chooses the host
nodes; every function here then passes and weighs neutrally instead of
judging nodes nova may not choose.
"""

import dataclasses
import statistics

from nova_numa_policy import exception
from nova_numa_policy import policy as numa_policy
from nova_numa_policy.scheduling import summary as summary_mod

# Raw weights are headroom fractions clamped to this range, so one host
# with a huge deficit cannot squash every other host's normalised weight.
WEIGHT_FLOOR = -1.0
WEIGHT_CEILING = 1.0


@dataclasses.dataclass(frozen=True)
class Settings:
    ttl: float
    strict: bool
    threshold: float
    weigh_plain_flavors: bool = False


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


def make_request(extra_specs, vcpus, memory_mb, image_props=None,
                 physnets=(), nova_topology=False, instance_uuid=None):
    """Resolve a flavor once into a :class:`Request`; never raises.

    A flavor :func:`nova_numa_policy.policy.resolve` refuses becomes a
    request carrying ``error``, which the policy filter rejects everywhere.
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
    return Request(
        policy=resolved,
        policy_explicit=numa_policy.POLICY_KEY in extra_specs,
        nova_topology=nova_topology or bool(
            resolved and resolved.within_nova_topology),
        **common)


@dataclasses.dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str
    node: int | None = None
    numbers: dict = dataclasses.field(default_factory=dict)


PASS_NOT_ASKED = Verdict(True, 'the request does not ask for this')
PASS_NOVA_OWNS = Verdict(
    True, "nova owns the guest's NUMA topology; NUMATopologyFilter decides")
PASS_NO_REPORT = Verdict(True, 'no fresh report; permissive mode')
FAIL_NO_REPORT = Verdict(False, 'no fresh report; strict mode')
PASS_NO_REPORT_NEUTRAL = Verdict(True, 'no fresh report; neutral')


def fresh(summary, now, settings):
    """The summary if it is fresh at ``now``, else None."""
    if summary is not None and summary.is_fresh(now, settings.ttl):
        return summary
    return None


def _no_report(settings):
    return FAIL_NO_REPORT if settings.strict else PASS_NO_REPORT


def best_node(nodes, vcpus, memory_mb, threshold):
    """The node with the most headroom among those that hold the memory.

    :returns: ``(node, headroom)``; headroom is the threshold minus the
        node's projected load (negative: over the threshold), or
        ``(None, None)`` when no node has the free memory.
    """
    best, best_headroom = None, None
    for node in nodes:
        if node.free_mb < memory_mb:
            continue
        headroom = threshold - summary_mod.projected_load(node, vcpus)
        if best is None or headroom > best_headroom:
            best, best_headroom = node, headroom
    return best, best_headroom


def load_candidates(summary, request):
    """The nodes an instance may sit on; the whole host if none can.

    A guest without a NUMA topology bigger than every node is spread over
    nodes by the kernel, so it is judged against the host as a whole.
    """
    if (request.vcpus <= summary.largest_node_cpus
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


def nic_local_nodes(summary, physnets):
    """Nodes local to the instance's uplink (see :func:`nic_local_ids`)."""
    ids = nic_local_ids(summary, physnets)
    return tuple(node for node in summary.nodes if node.id in ids)


def nic_fit(nodes, ids, vcpus, memory_mb, threshold):
    """The best NIC-local headroom and weight, in one pass over the nodes.

    Only nodes whose id is in ``ids`` and that hold the memory count. The
    weight is the clamped headroom shared with the I/O-intensive instances
    already local to that uplink; sharing does not soften a deficit.

    :returns: ``(headroom, weight)``, each the best of its own, or
        ``(None, None)`` when no NIC-local node has the free memory.
    """
    best_headroom = best_weight = None
    for node in nodes:
        if node.id not in ids or node.free_mb < memory_mb:
            continue
        headroom = threshold - summary_mod.projected_load(node, vcpus)
        weight = clamp(headroom)
        if headroom >= 0:
            weight /= 1 + node.io_neighbours
        if best_headroom is None or headroom > best_headroom:
            best_headroom = headroom
        if best_weight is None or weight > best_weight:
            best_weight = weight
    return best_headroom, best_weight


def _fit_numbers(request, node, headroom, settings):
    numbers = {'vcpus': request.vcpus, 'memory_mb': request.memory_mb,
               'threshold': settings.threshold}
    if node is not None:
        numbers.update(load=round(node.load, 3), cpus=node.cpus,
                       free_mb=node.free_mb,
                       headroom=round(headroom, 3))
    return numbers


def policy_verdict(request, summary, settings, now):
    """Can this host's agent enforce the request's ``hw:numa_policy``?"""
    if request.error is not None:
        return Verdict(False, request.error)
    if request.policy is None or not request.policy_explicit:
        return PASS_NOT_ASKED
    if request.nova_topology:
        # Nova binds each guest cell strictly to a host node, which is the
        # only policy resolve() lets through; no agent is needed for it.
        return PASS_NOVA_OWNS
    summary = fresh(summary, now, settings)
    if summary is None:
        return _no_report(settings)
    if request.policy.value in summary.enforceable:
        return Verdict(True, f'agent enforces {request.policy.value}')
    return Verdict(
        False, f'agent cannot enforce {request.policy.value}',
        numbers={'enforceable': sorted(summary.enforceable)})


def nic_verdict(request, summary, settings, now):
    """Is there a NIC-local node that holds the instance under threshold?"""
    if request.error is not None or not request.nic_required:
        return PASS_NOT_ASKED
    if request.nova_topology:
        return PASS_NOVA_OWNS
    summary = fresh(summary, now, settings)
    if summary is None:
        return _no_report(settings)
    local = nic_local_nodes(summary, request.physnets)
    if not local:
        return Verdict(False, 'no NUMA node is local to the uplink',
                       numbers={'physnets': sorted(request.physnets)})
    node, headroom = best_node(local, request.vcpus, request.memory_mb,
                               settings.threshold)
    numbers = _fit_numbers(request, node, headroom, settings)
    if node is None:
        return Verdict(False, 'no NIC-local node has the free memory',
                       numbers=numbers)
    if headroom < 0:
        return Verdict(False, 'every NIC-local node would be over the '
                       'load threshold', node=node.id, numbers=numbers)
    return Verdict(True, 'NIC-local node holds the instance', node=node.id,
                   numbers=numbers)


def load_verdict(request, summary, settings, now):
    """Is there a node that holds the instance under the load threshold?"""
    if request.error is not None:
        return PASS_NOT_ASKED
    if request.nova_topology:
        return PASS_NOVA_OWNS
    summary = fresh(summary, now, settings)
    if summary is None:
        # Load is a preference nova never had: unknown load is no reason
        # to refuse a host, whatever the mode.
        return PASS_NO_REPORT_NEUTRAL
    node, headroom = best_node(load_candidates(summary, request),
                               request.vcpus, request.memory_mb,
                               settings.threshold)
    numbers = _fit_numbers(request, node, headroom, settings)
    if node is None:
        return Verdict(False, 'no node has the free memory',
                       numbers=numbers)
    if headroom < 0:
        return Verdict(False, 'every node would be over the load threshold',
                       node=node.id, numbers=numbers)
    return Verdict(True, 'a node holds the instance', node=node.id,
                   numbers=numbers)


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
    if (request.error is not None or not request.io_heavy
            or request.nova_topology):
        return None
    _, weight = nic_fit(summary.nodes,
                        nic_local_ids(summary, request.physnets),
                        request.vcpus, request.memory_mb, settings.threshold)
    return WEIGHT_FLOOR if weight is None else weight


def load_weight(request, summary, settings):
    """Raw node-load weight of a fresh host, or None for "neutral"."""
    if request.error is not None or request.nova_topology:
        return None
    if request.plain and not settings.weigh_plain_flavors:
        return None
    node, headroom = best_node(load_candidates(summary, request),
                               request.vcpus, request.memory_mb,
                               settings.threshold)
    return WEIGHT_FLOOR if node is None else clamp(headroom)


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
