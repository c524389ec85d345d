"""What a policy means for one guest on one host: pure decisions.

Two moments matter. At boot the libvirt driver extension may choose the
guest's memory mode (``<numatune>``), which libvirt cannot change while the
guest runs. Once it runs, the agent can only change the nodeset of a strict
(or restrictive, or absent) memory policy, re-pin vCPUs and the emulator,
and migrate pages. Both moments ask this module, from plain values
(:mod:`nova_numa_policy.contracts.backend` types and a
:class:`~nova_numa_policy.contracts.policy.NumaPolicy`), and get plain values
back. What ``hw:numa_memory_tiers=top`` adds, the top tier's nodes and
keeping a running guest's memory off the lower ones, is
:mod:`nova_numa_policy.decisions.toptier`'s.
"""

import dataclasses

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import scope
from nova_numa_policy.contracts import tiers
from nova_numa_policy.decisions import toptier

# Seed 002 §4.2: above 80 % average CPU load per node performance drops,
# so a node that busy is "high load" and gets no more NIC-prior guests.
LOAD_THRESHOLD = 0.80
# A guest with more than this share of a host's CPUs is large: at most
# three share the host, and which ones do decides what each gets
# ([numa_policy] large_guest_share; 1.0 keeps no guest to a half).
LARGE_GUEST_SHARE = 0.25
# Pages of 4 KiB, what page moves count.
PAGES_PER_MB = 256


@dataclasses.dataclass(frozen=True)
class MemoryTune:
    """A guest's memory policy and the CPUs its threads should run on."""

    # The <numatune> memory mode, or None for none: the kernel's default
    # (first-touch) wherever the vCPUs run.
    mode: str | None
    nodes: frozenset
    # Host CPUs for vCPUs and emulator; empty leaves them where nova put them.
    cpus: frozenset = frozenset()
    # The host CPUs each vCPU is pinned to (index = vCPU number), one
    # node's CPUs each; empty leaves every vCPU on ``cpus``.
    vcpu_pins: tuple = ()
    # Why these nodes, for the driver's log (not part of the decision).
    reason: str = dataclasses.field(default='', compare=False)


@dataclasses.dataclass(frozen=True)
class BootPlan:
    """A boot-time decision and why: ``tune`` None is the kernel default."""

    tune: MemoryTune | None
    reason: str = ''


@dataclasses.dataclass(frozen=True)
class Enforcement:
    """The actions that bring a running guest to its policy, or why not."""

    actions: tuple = ()
    # Why the policy is not (fully) enforceable now, for the log and report.
    blocked: str | None = None


def _free_mb(node, usage_by_node):
    usage = usage_by_node.get(node.id)
    return usage.memory_free_mb if usage else node.memory_total_mb


def _load(node, usage_by_node):
    usage = usage_by_node.get(node.id)
    return usage.cpu_load if usage else 0.0


def nic_nodes(topology):
    """The nodes that hold a NIC with a known locality."""
    return frozenset(nic.numa_node for nic in topology.nics
                     if nic.numa_node is not None)


def select_home_nodes(topology, usage, memory_mb, near=frozenset(),
                      vcpus=0):
    """Pick the fewest, least loaded nodes that hold the guest.

    They must hold its memory in their free memory and, since its vCPUs
    are kept there too, have a CPU per vCPU.

    Nodes in ``near`` (those of the guest's NIC) come first, then the least
    loaded, then the one with most free memory; node ids break ties so the
    choice is stable between periods. A node without CPUs (a memory
    expander's) comes after every node with CPUs: it reads as idle, having
    no CPU to be busy, yet its memory is far from every vCPU. Falls back to
    every node when even all of them together lack the memory: a strict
    binding that cannot hold the guest would have the kernel kill it.
    """
    usage_by_node = {u.node_id: u for u in usage}
    ranked = sorted(
        topology.nodes,
        key=lambda n: (n.id not in near, not n.cpus,
                       round(_load(n, usage_by_node), 2),
                       -_free_mb(n, usage_by_node), n.id))
    chosen = []
    free = cpus = 0
    for node in ranked:
        chosen.append(node.id)
        free += _free_mb(node, usage_by_node)
        cpus += len(node.cpus)
        if free >= memory_mb and cpus >= vcpus:
            return frozenset(chosen)
    return frozenset(n.id for n in topology.nodes)


def allowed_nodes(topology, allowed_cpus):
    """``topology`` with only the nodes holding CPUs nova allows the guest.

    A home guest's memory belongs where its vCPUs may run. Unchanged when
    nova sets no bound, or when no node holds an allowed CPU (a bound this
    host's topology does not describe tells nothing about nodes).
    """
    kept = tuple(node for node in topology.nodes
                 if scope.allowed(node.cpus, allowed_cpus))
    if not allowed_cpus or not kept:
        return topology
    return dataclasses.replace(topology, nodes=kept)


def only_nodes(topology, node_ids):
    """``topology`` with the nodes ``node_ids`` alone, distances kept.

    Each kept node's distance row loses the columns of the nodes left
    out, so that rows stay in the order of ``nodes``
    (:meth:`~backend.HostTopology.distance`).
    """
    kept = [k for k, node in enumerate(topology.nodes) if node.id in node_ids]
    return dataclasses.replace(topology, nodes=tuple(
        dataclasses.replace(topology.nodes[k], distances=tuple(
            topology.nodes[k].distances[j] for j in kept))
        for k in kept))


def cpus_of(topology, nodes):
    return frozenset(cpu for node in topology.nodes if node.id in nodes
                     for cpu in node.cpus)


def node_vcpus(topology, instances):
    """{node id: vCPUs of the guests already on it}, where each last ran."""
    where = {cpu: node.id for node in topology.nodes for cpu in node.cpus}
    counts = {}
    for inst in instances:
        for cpu in inst.vcpu_cpus:
            node = where.get(cpu)
            if node is not None:
                counts[node] = counts.get(node, 0) + 1
    return counts


def _demand(node, usage_by_node, placed):
    """The node's load in vCPUs: the larger of measured and placed.

    The measured load lags (guests booted since the last sample are not in
    it) and the placed count misses work that is not a guest's vCPU; each
    covers the other's blind spot, and neither is counted twice.
    """
    measured = _load(node, usage_by_node) * len(node.cpus)
    return max(measured, float(placed.get(node.id, 0)))


def has_headroom(node, usage_by_node, placed, vcpus, threshold):
    """True when ``vcpus`` more keep the node at or under ``threshold``."""
    after = _demand(node, usage_by_node, placed) + vcpus
    # A small epsilon: 0.8 * 5 CPUs must admit a fourth vCPU despite floats.
    return after <= threshold * len(node.cpus) + 1e-9


def _nic_distance(topology, node, near):
    return min(topology.distance(node.id, n) for n in near)


def nic_placement(numa_policy, topology, usage=(), vcpus=1, placed=None,
                  threshold=LOAD_THRESHOLD):
    """``(nodes, reason)``: where NIC locality puts the guest, and why.

    Seed 002's rule: an I/O guest goes NIC-local (NIC-prior) only while
    the NIC's node stays under the load threshold with it; otherwise it
    is placed NUMA-prior, on the node with room nearest the NIC (the
    least loaded among equals). Empty nodes leave the guest unrestricted,
    when no locality is asked or no node has room. ``required`` keeps the
    NIC's node whatever its load: the scheduler's NIC filter only passes
    hosts where the guest fits there, and the guest asked for nothing else.
    """
    near = nic_nodes(topology)
    if numa_policy.nic_locality == policy.NicLocality.NONE or not near:
        return frozenset(), ''
    if numa_policy.nic_locality == policy.NicLocality.REQUIRED:
        return near, f'NIC locality required: NIC node(s) {sorted(near)}'
    usage_by_node = {u.node_id: u for u in usage}
    placed = placed or {}
    roomy = [n for n in topology.nodes
             if has_headroom(n, usage_by_node, placed, vcpus, threshold)]
    local = frozenset(n.id for n in roomy if n.id in near)
    limit = f'{100 * threshold:.0f} %'
    if local:
        return local, (f'NIC-prior: NIC node(s) {sorted(local)} stay under '
                       f'{limit} load with {vcpus} more vCPU(s)')
    busy = f'NIC node(s) {sorted(near)} would exceed {limit} load'
    if not roomy:
        return frozenset(), (f'{busy}, and so would every node: left to '
                             f"the kernel's default")
    best = min(roomy, key=lambda n: (
        _nic_distance(topology, n, near),
        round(_demand(n, usage_by_node, placed), 2),
        n.id))
    return frozenset({best.id}), (
        f'NUMA-prior: {busy}; node {best.id} is the nearest with room')


def nodes_needed(topology, vcpus):
    """How many of the host's largest nodes hold ``vcpus``, a CPU each."""
    per_node = max(len(node.cpus) for node in topology.nodes)
    return -(-vcpus // per_node)


def deal_vcpus(topology, nodes, vcpus, usage=(), placed=None,
               allowed_cpus=None):
    """The CPUs each vCPU is pinned to: one node's, dealt evenly.

    Each vCPU in turn goes to the node of ``nodes`` with the fewest vCPUs
    for its CPUs, counting the guests already there and the vCPUs dealt
    before it, so a guest spread over several nodes puts as many threads
    near each of its memory controllers and none piles onto a node
    others already fill. Among equally busy nodes the one with the most
    free memory comes first (then node ids): vCPU 0 boots the guest and
    first-touches what a master thread allocates for all the others, so
    two guests dealt over the same nodes do not both gather that memory
    on one controller. Nodes without a CPU nova allows guests on take
    none.
    """
    usage_by_node = {u.node_id: u for u in usage}
    placed = placed or {}
    # A node may hold no CPU at all where nova records only the CPUs it
    # gives guests (a live migration's view of its destination), or has
    # none (memory only: a CXL expander).
    candidates = [node for node in topology.nodes if node.id in nodes
                  and scope.allowed(node.cpus, allowed_cpus)]
    if not candidates:
        return ()
    pins = {node.id: _restrict(cpus_of(topology, {node.id}), allowed_cpus)
            for node in candidates}
    demand = {node.id: _demand(node, usage_by_node, placed)
              for node in candidates}
    dealt = []
    for _ in range(vcpus):
        node = min(candidates,
                   key=lambda n: (demand[n.id] / len(n.cpus),
                                  -_free_mb(n, usage_by_node), n.id))
        demand[node.id] += 1
        dealt.append(pins[node.id])
    return tuple(dealt)


def _idle(node, usage_by_node, placed):
    """True when no guest's vCPU runs or is placed on ``node``."""
    return _demand(node, usage_by_node, placed) < 0.5


def _nearest(topology, seed, nodes, count):
    """``count`` of ``nodes``, nearest to ``seed`` first (ids break ties)."""
    def order(node):
        return (node.id != seed.id, topology.distance(seed.id, node.id),
                node.id)
    return sorted(nodes, key=order)[:count]


def _spread_of(topology, group):
    """Summed distance between the group's nodes: lower is more compact."""
    return sum(topology.distance(a.id, b.id) for a in group for b in group)


def half_of_host(topology, usage=(), memory_mb=0, vcpus=1, placed=None,
                 large_share=LARGE_GUEST_SHARE):
    """The idle half of the host a large guest keeps to, and why.

    Returns ``(nodes, reason)``; nodes are empty when the guest spreads
    over the host.

    Spread over every node, a large guest meets its one or two neighbours
    on every memory controller, and what it gets swings with which guests
    they are: in the simulated consolidation of two 24-vCPU guests per
    48-CPU host (doc/source/cluster.rst) a low-imbalance guest ran at 0.73
    beside another and at 0.55 beside an interleaved one. Seed 000 Fig. 8
    gives each of the two guests its own half of the nodes instead: kept
    to nodes nobody else uses, a guest sends no memory traffic to its
    neighbours' controllers and receives none of theirs. A guest with
    more than ``large_share`` of the host's CPUs that half the nodes hold
    gets the most compact half whose nodes are all idle, when there is
    one. Hosts of fewer than four nodes have no half of two nodes: a
    single node would be a home binding nobody asked for, and interleave
    over one node no interleave.
    """
    nodes = topology.nodes
    size = len(nodes) // 2
    total_cpus = sum(len(node.cpus) for node in nodes)
    if size < 2:
        return frozenset(), 'the host has no half of two nodes or more'
    if vcpus <= large_share * total_cpus:
        return frozenset(), (f'not a large guest, {vcpus} vCPUs being at '
                             f"most {100 * large_share:.0f} % of the host's "
                             f'CPUs')
    usage_by_node = {u.node_id: u for u in usage}
    placed = placed or {}
    idle = [node for node in nodes if _idle(node, usage_by_node, placed)]
    halves = []
    for seed in idle:
        half = _nearest(topology, seed, idle, size)
        if (len(half) == size
                and sum(len(node.cpus) for node in half) >= vcpus
                and sum(_free_mb(node, usage_by_node) for node in half)
                >= memory_mb):
            halves.append(half)
    if not halves:
        return frozenset(), 'a large guest, but no idle half holds it'
    best = min(halves, key=lambda half: (
        _spread_of(topology, half), sorted(node.id for node in half)))
    chosen = frozenset(node.id for node in best)
    return chosen, f'a large guest kept to idle half {sorted(chosen)}'


def _spread_pins(topology, nodes, vcpus, usage, placed, allowed_cpus):
    """Dealt pins for a guest that needs several nodes, else none."""
    if nodes_needed(topology, vcpus) < 2:
        return ()
    return deal_vcpus(topology, nodes, vcpus, usage, placed, allowed_cpus)


@dataclasses.dataclass(frozen=True)
class _NewGuest:
    """What a boot decision weighs of the guest it places, and the host."""

    usage: tuple
    memory_mb: int
    allowed_cpus: frozenset | None
    vcpus: int
    # {node id: vCPUs of the guests already there} (node_vcpus).
    placed: dict
    large_share: float

    def half(self, topology):
        return half_of_host(topology, self.usage, self.memory_mb,
                            self.vcpus, self.placed, self.large_share)

    def pins(self, topology, nodes):
        return _spread_pins(topology, nodes, self.vcpus, self.usage,
                            self.placed, self.allowed_cpus)

    def cpus(self, topology, nodes):
        return _restrict(cpus_of(topology, nodes), self.allowed_cpus)


def boot_plan(numa_policy, topology, usage=(), memory_mb=0,
              allowed_cpus=None, vcpus=1, instances=(),
              threshold=LOAD_THRESHOLD, large_share=LARGE_GUEST_SHARE):
    """The ``<numatune>`` and vCPU pins a new guest starts with, and why.

    ``vcpus`` is the new guest's; ``instances`` are the guests already
    on the host (their vCPUs count as load where they last ran),
    ``threshold`` the node load a NIC-prior placement may reach and
    ``large_share`` the share of the host's CPUs above which a guest is
    kept to an idle half (:func:`half_of_host`). A guest that needs more
    than one node's CPUs has its vCPUs dealt over its nodes
    (:func:`deal_vcpus`). A None tune leaves the guest to the kernel's
    default, which is first-touch; so does a host with a single node,
    where no choice exists. A guest kept to the top memory tier on a
    host that has a lower one
    (:func:`~nova_numa_policy.decisions.toptier.keeps_to_top_tier`) is placed
    among the top-tier nodes only (:func:`_top_tier_plan`).
    """
    if (numa_policy is None or numa_policy.within_nova_topology
            or len(topology.nodes) < 2):
        return BootPlan(None, 'no choice to make')
    guest = _NewGuest(usage, memory_mb, allowed_cpus, vcpus,
                      node_vcpus(topology, instances), large_share)
    near, why = nic_placement(numa_policy, topology, usage, vcpus,
                              guest.placed, threshold)
    placement = numa_policy.placement
    if toptier.keeps_to_top_tier(numa_policy.memory_tiers, topology):
        return _top_tier_plan(placement, topology, guest, near, why,
                              numa_policy.memory_tiers)
    if placement == policy.Placement.INTERLEAVE:
        return _plan(*_interleave(topology, guest))
    if placement == policy.Placement.HOME:
        return _plan(*_home(topology, guest, near, why))
    return _kernel_first_touch(placement, topology, guest, near, why)


def _interleave(topology, guest):
    """(tune, reason): interleave over an idle half, else every node."""
    half, kept = guest.half(topology)
    nodes = half or frozenset(n.id for n in topology.nodes)
    pins = guest.pins(topology, nodes)
    cpus = guest.cpus(topology, half) if half else frozenset()
    return (MemoryTune(backend.MODE_INTERLEAVE, nodes, cpus, pins),
            f'interleave over {sorted(nodes)}: {kept}' + _dealt_words(pins))


def _home(topology, guest, near, why):
    """(tune, reason): strict on the home nodes, vCPUs on their CPUs."""
    nodes = select_home_nodes(allowed_nodes(topology, guest.allowed_cpus),
                              guest.usage, guest.memory_mb, near,
                              guest.vcpus)
    return (MemoryTune(backend.MODE_STRICT, nodes,
                       guest.cpus(topology, nodes)),
            why or 'home on the least loaded nodes that hold it')


def _first_touch_within(topology, guest, nodes, why):
    """(tune, reason): restrictive, the kernel's first-touch within."""
    pins = guest.pins(topology, nodes)
    return (MemoryTune(backend.MODE_RESTRICTIVE, nodes,
                       guest.cpus(topology, nodes), pins),
            f'first-touch within {sorted(nodes)}: {why}'
            + _dealt_words(pins))


def _kernel_first_touch(placement, topology, guest, near, why):
    """first-touch and ``auto`` (first-touch until it chooses): a plan."""
    if placement == policy.Placement.FIRST_TOUCH and len(near) == 1:
        # First-touch near the NIC (or, NUMA-prior, on the node chosen
        # instead): prefer its node and let the kernel spill elsewhere
        # rather than fail an allocation.
        return _plan(MemoryTune(backend.MODE_PREFERRED, near,
                                guest.cpus(topology, near)), why)
    if placement != policy.Placement.FIRST_TOUCH or why:
        # auto decides at run time; a NIC locality the host cannot honour
        # leaves the guest to the kernel, saying why.
        return BootPlan(None, why or "first-touch is the kernel's default")
    half, kept = guest.half(topology)
    if half:
        return _plan(*_first_touch_within(topology, guest, half, kept))
    pins = guest.pins(topology, frozenset(n.id for n in topology.nodes))
    default = f"first-touch is the kernel's default ({kept})"
    if pins:
        return _plan(MemoryTune(None, frozenset(), frozenset(), pins),
                     default + _dealt_words(pins))
    return BootPlan(None, default)


def _top_tier_plan(placement, topology, guest, near, why, memory_tiers):
    """The plan of a guest kept to the top tier of a host with a lower one.

    Every choice of the plan without tiers is made again among the
    top-tier nodes alone; the NIC's node counts only when it is one. A
    ``tiered`` guest's home is restrictive rather than strict: the
    tiering loop later opens its nodeset to a lower-tier node for its
    cold pages, which libvirt does live for restrictive only
    (:data:`~nova_numa_policy.contracts.backend.LIVE_NODESET_MODES`).
    """
    tops = toptier.top_tier_nodes(topology)
    top = only_nodes(topology, tops)
    if near and not near & tops:
        why = f'NIC node(s) {sorted(near)} are not in the top tier'
    near = near & tops
    if placement == policy.Placement.INTERLEAVE:
        tune, reason = _interleave(top, guest)
    elif placement == policy.Placement.HOME:
        tune, reason = _home(top, guest, near, why)
        if memory_tiers.mode == tiers.TierMode.TIERED:
            tune = dataclasses.replace(tune, mode=backend.MODE_RESTRICTIVE)
    else:
        tune, reason = _first_touch_on_top_tier(placement, top, guest, near,
                                                why)
    return _plan(tune, f'{reason}; top tier only: nodes {sorted(tops)}')


def _first_touch_on_top_tier(placement, topology, guest, near, why):
    """(tune, reason) of first-touch and ``auto`` within the top tier.

    ``topology`` holds the top-tier nodes only. Always a restrictive
    nodeset, where the plan without tiers may have none: the kernel's
    own first-touch, kept off the lower tier, where it would otherwise
    place pages once the nodes near the vCPUs are full.
    """
    tops = frozenset(n.id for n in topology.nodes)
    if placement == policy.Placement.FIRST_TOUCH and len(near) == 1:
        # Near the NIC as without tiers, but not libvirt's preferred: it
        # names one node, and when that node is full the kernel spills
        # onto any node, a lower tier's included. Restrictive over the
        # top tier lets first-touch fill the node of the vCPUs (kept on
        # the NIC's node) and spill onto other top-tier nodes only.
        return (MemoryTune(backend.MODE_RESTRICTIVE, tops,
                           guest.cpus(topology, near)), why)
    if placement != policy.Placement.FIRST_TOUCH or why:
        return (MemoryTune(backend.MODE_RESTRICTIVE, tops),
                why or f'first-touch within {sorted(tops)}')
    half, kept = guest.half(topology)
    if half:
        return _first_touch_within(topology, guest, half, kept)
    pins = guest.pins(topology, tops)
    return (MemoryTune(backend.MODE_RESTRICTIVE, tops, frozenset(), pins),
            f'first-touch within {sorted(tops)}: {kept}' + _dealt_words(pins))


def _dealt_words(pins):
    return ('; vCPUs dealt evenly over the nodes, the least busy first'
            if pins else '')


def _plan(tune, reason):
    return BootPlan(dataclasses.replace(tune, reason=reason), reason)


def boot_tune(numa_policy, topology, usage=(), memory_mb=0,
              allowed_cpus=None, **kwargs):
    """:func:`boot_plan`'s tune alone (the driver extension's call)."""
    return boot_plan(numa_policy, topology, usage, memory_mb,
                     allowed_cpus, **kwargs).tune


def _restrict(cpus, allowed_cpus):
    """Keep to the CPUs nova allows the guest; never produce an empty set.

    One rule for the driver at boot and the agent at run time, so the two
    never disagree on a guest's CPUs.
    """
    return scope.allowed(cpus, allowed_cpus) or frozenset(allowed_cpus)


def live_nodeset_allowed(memory_mode):
    return memory_mode in backend.LIVE_NODESET_MODES


def observed_placement(instance, topology):
    """The policy a running guest's memory binding actually realizes.

    A guest kept to the top tier
    (:func:`~nova_numa_policy.decisions.toptier.keeps_to_top_tier`) has the
    top tier for its whole host: bound to every top-tier node, it is
    first-touch within them, as another guest bound to every node is; a
    ``tiered`` one is placed where its top-tier nodes say.
    """
    all_nodes = frozenset(n.id for n in topology.nodes)
    everywhere = (toptier.top_tier_nodes(topology)
                  if toptier.keeps_to_top_tier(instance.requested_tiers,
                                               topology)
                  else all_nodes)
    mode = instance.memory_mode
    nodes = instance.memory_nodes
    if (instance.requested_tiers.mode == tiers.TierMode.TIERED
            and everywhere != all_nodes):
        # Lower-tier nodes the tiering loop opened to its cold pages are
        # not where it is placed.
        nodes = (nodes & everywhere) or nodes
    if mode == backend.MODE_INTERLEAVE and len(nodes) > 1:
        return policy.Placement.INTERLEAVE.value
    # restrictive only limits where the kernel's own first-touch may
    # allocate; on several nodes that is first-touch, on one it is home.
    if (mode == backend.MODE_RESTRICTIVE and len(nodes) > 1) or not nodes:
        return policy.Placement.FIRST_TOUCH.value
    if (mode in (backend.MODE_STRICT, backend.MODE_RESTRICTIVE)
            and nodes < all_nodes and nodes != everywhere):
        return policy.Placement.HOME.value
    return policy.Placement.FIRST_TOUCH.value


def applied_policy(instance, topology):
    """What the report says is applied: 'none' unless a policy was asked."""
    if instance.requested_policy is None or instance.hands_off_reason:
        return 'none'
    return observed_placement(instance, topology)


def pin_actions(instance, cpus, reason):
    """Pins of every vCPU and the emulator to ``cpus`` not yet there."""
    actions = []
    for vcpu, affinity in enumerate(instance.vcpu_affinity):
        if affinity != cpus:
            actions.append(backend.PinVcpu(instance.uuid, reason, vcpu=vcpu,
                                           cpus=cpus))
    if instance.emulator_affinity != cpus:
        actions.append(backend.PinEmulator(instance.uuid, reason, cpus=cpus))
    return actions


def home_cpus(topology, nodes, allowed_cpus):
    """The CPUs a home guest's threads run on: its nodes', within nova's.

    Inside what nova allows the guest, as the driver's boot placement.
    """
    return _restrict(cpus_of(topology, nodes), allowed_cpus)


def _home_candidates(instance, topology):
    """The nodes a running guest's home is chosen among, as a topology."""
    if toptier.keeps_to_top_tier(instance.requested_tiers, topology):
        return only_nodes(topology, toptier.top_tier_nodes(topology))
    return topology


def _enforce_home(instance, topology, usage, can_set_nodeset):
    all_nodes = frozenset(n.id for n in topology.nodes)
    actions = []
    if (instance.memory_mode in (backend.MODE_STRICT, backend.MODE_RESTRICTIVE)
            and instance.memory_nodes and instance.memory_nodes < all_nodes):
        # Already bound to home nodes (at boot or by an earlier period):
        # keep them, moving memory again would only cost.
        home = instance.memory_nodes
    elif not live_nodeset_allowed(instance.memory_mode):
        return Enforcement(blocked=(
            f'memory mode {instance.memory_mode} cannot become strict while '
            f'the guest runs; home applies at its next hard reboot'))
    elif not can_set_nodeset:
        return Enforcement(blocked='this host cannot change a running '
                                   "guest's nodeset")
    else:
        home = select_home_nodes(allowed_nodes(_home_candidates(
            instance, topology), instance.allowed_cpus),
            usage, instance.memory_mb, vcpus=len(instance.vcpu_affinity))
        actions.append(backend.SetNodeset(
            instance.uuid, f'home: bind memory to nodes {sorted(home)}',
            nodes=home))
    cpus = home_cpus(topology, home, instance.allowed_cpus)
    actions.extend(pin_actions(
        instance, cpus, f'home: keep vCPUs on nodes {sorted(home)}'))
    return Enforcement(actions=tuple(actions))


def enforce(instance, topology, usage, can_set_nodeset=True,
            can_move_pages=False):
    """What to do now so a running guest gets its requested policy.

    ``can_set_nodeset``: whether the host changes a running guest's
    nodeset (``CAP_LIVE_NODESET``); ``can_move_pages``: whether it moves
    pages (``CAP_PAGE_MIGRATION``), which only the memory of a ``top``
    guest found on a lower tier needs here
    (:func:`~nova_numa_policy.decisions.toptier.enforce_top_tier`).
    """
    if instance.requested_policy is None or instance.hands_off_reason:
        return Enforcement()
    if len(topology.nodes) < 2:
        return Enforcement()
    placed = _enforce_placement(instance, topology, usage, can_set_nodeset)
    if not toptier.kept_off_lower_tiers(instance, topology):
        return placed
    actions, blocked = toptier.enforce_top_tier(
        instance, topology, usage, can_set_nodeset, can_move_pages,
        placed.actions)
    return Enforcement(
        actions=placed.actions + actions,
        blocked='; '.join(why for why in (placed.blocked, blocked)
                          if why) or None)


def _enforce_placement(instance, topology, usage, can_set_nodeset):
    """The ``hw:numa_policy`` part of :func:`enforce`."""
    spec = policy.POLICIES[instance.requested_policy]
    if spec.placement == policy.Placement.HOME:
        return _enforce_home(instance, topology, usage, can_set_nodeset)
    if (spec.placement == policy.Placement.INTERLEAVE
            and instance.memory_mode != backend.MODE_INTERLEAVE):
        return Enforcement(blocked=(
            'interleave must be in the domain XML when the guest starts; it '
            'applies at its next hard reboot with the driver extension'))
    # first-touch is the kernel's default; keeping vCPUs near their memory
    # and auto's choice belong to the rebalancing loops.
    return Enforcement()


def undo(action, instance, topology):
    """The action that restores what ``action`` changed on ``instance``."""
    everything = scope.allowed(
        cpus_of(topology, {n.id for n in topology.nodes}),
        instance.allowed_cpus)
    reason = f'roll back: {action.reason}'
    if isinstance(action, backend.PinVcpu):
        before = (instance.vcpu_affinity[action.vcpu]
                  if action.vcpu < len(instance.vcpu_affinity) else None)
        return backend.PinVcpu(instance.uuid, reason, vcpu=action.vcpu,
                               cpus=before or everything)
    if isinstance(action, backend.PinEmulator):
        return backend.PinEmulator(
            instance.uuid, reason,
            cpus=instance.emulator_affinity or everything)
    if isinstance(action, backend.SetNodeset):
        before = instance.memory_nodes or frozenset(
            n.id for n in topology.nodes)
        return backend.SetNodeset(instance.uuid, reason, nodes=before)
    if isinstance(action, backend.PinIoThreads):
        return backend.PinIoThreads(
            instance.uuid, reason,
            cpus=instance.io_thread_cpus or everything)
    return None
