"""A ``tiered`` guest's pages between the memory tiers, each period: pure.

``hw:numa_memory_tiers=tiered`` (:mod:`nova_numa_policy.contracts.tiers`)
lets a guest's cold memory live on a host's lower tier while at least
``hw:numa_top_tier_percent`` of it stays on the top tier. It starts on
the top tier (:func:`nova_numa_policy.decisions.toptier.keeps_to_top_tier`);
from then on, for each guest, :func:`tier_guest` decides three moves, in
this order, and at most one kind per period (the last two only where the
kernel does not tier):

1. **The floor.** Less than its share on the top tier (the kernel
   demoted it, or it arrived so): pages back up, those it writes first,
   onto the top-tier nodes of its nodeset with room. Whoever moves
   pages between tiers, the floor is the agent's.
2. **Cold down.** A top-tier node it has memory on is short of free
   memory (under its low mark, :data:`LOW_FREE` of the node by
   default): pages it did not write over the last period move to the
   lower tier's node with the most room, until the node has its high
   mark (:data:`HIGH_FREE`) free again, never below the floor. Its
   nodeset gains the lower node first where it lacks it (move_pages(2)
   may only move a page to a node of the process's cpuset).
3. **Hot up.** A top-tier node of its nodeset has more than its high
   mark free: pages it wrote, found on a lower tier, move up, leaving the
   node at the high mark.

The hysteresis between the two marks (:class:`Marks`) keeps the two
from undoing each other: pages go down only from a node under the
low mark, up only onto one above the high mark, and each move stops at
the high mark.

**Never fight the kernel.** Where the kernel tiers, by either switch
(``demotion_enabled``, or ``kernel.numa_balancing``'s memory tiering
bit), the pages are its to move: the agent then holds the floor alone,
moving pages up only onto a node above its high mark, well clear of the
watermarks at which the kernel reclaims, and so demotes. Demoting by the
agent's signal while the kernel promotes by its own would move a page
the guest reads but does not write down and up again each period.

"Hot" is what the host can tell per page on Linux 6.1 as distributions
build it (no idle page tracking, no DAMON): written over the last period
(``InstanceState.written_mb_per_node``, :mod:`agent.backend.pagetemps`).
A page only read is cold to it; it comes back up when the guest writes
it. Without the measure (None) only the floor acts, moving any pages.
"""

import dataclasses

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import tiers
from nova_numa_policy.decisions import toptier

# Of a top-tier node's memory: under LOW_FREE free, the node is short and
# its tiered guests' cold pages go down; pages go up onto it only above
# HIGH_FREE, and every move stops at HIGH_FREE. Choices, not measured
# values (the operator's [numa_policy_loops] tiering_low_free and
# tiering_high_free): LOW_FREE is well above the kernel's reclaim
# watermarks (under 1 % of a node by default), so the agent acts before
# the kernel would.
LOW_FREE = 0.05
HIGH_FREE = 0.10


@dataclasses.dataclass(frozen=True)
class Marks:
    """A top-tier node's free-memory marks, as shares of the node."""

    low: float = LOW_FREE
    high: float = HIGH_FREE

    def __post_init__(self):
        if not 0 <= self.low < self.high <= 1:
            raise ValueError(
                f'tiering_low_free ({self.low}) must be under '
                f'tiering_high_free ({self.high}), both between 0 and 1: '
                f'between the two marks nothing moves, which keeps pages '
                f'from going down and up again')


# Moves smaller than this are not worth a period's syscalls and log
# lines; a guest within it of its floor is at its floor.
MIN_MOVE_MB = 4


@dataclasses.dataclass(frozen=True)
class Tiering:
    """One guest's moves this period, and why any part did not move.

    ``seen``: what the decision read of the guest, for the log (not part
    of the decision).
    """

    actions: tuple = ()
    blocked: str | None = None
    seen: str | None = dataclasses.field(default=None, compare=False)


def is_tiered(instance, topology):
    """Whether the guest is ``tiered`` on a host with a lower tier."""
    return (instance.requested_tiers.mode == tiers.TierMode.TIERED
            and toptier.has_lower_tier(topology))


@dataclasses.dataclass(frozen=True)
class _Host:
    """What a period's decisions read of the host, in MB per node."""

    topology: backend.HostTopology
    tops: frozenset
    lowers: frozenset
    total: dict
    free: dict
    marks: Marks

    @classmethod
    def of(cls, topology, usage, marks):
        by_node = {u.node_id: u for u in usage}
        tops = toptier.top_tier_nodes(topology)
        return cls(topology=topology, tops=tops,
                   lowers=frozenset(n.id for n in topology.nodes) - tops,
                   total={n.id: n.memory_total_mb for n in topology.nodes},
                   free={n.id: toptier.free_mb(n, by_node)
                         for n in topology.nodes},
                   marks=marks)

    def room(self, node, mark):
        """MB that may land on ``node`` and leave ``mark`` of it free."""
        return max(0, int(self.free[node] - mark * self.total[node]))

    def shortfall(self, node):
        """MB to free on ``node`` for the high mark, when under the low."""
        if self.free[node] >= self.marks.low * self.total[node]:
            return 0
        return int(self.marks.high * self.total[node] - self.free[node]) + 1


def _pages(mb):
    return int(mb * toptier.PAGES_PER_MB)


def _move(instance, reason, source, target, mb, pick, measured):
    if not measured:
        return backend.MovePages(instance.uuid, reason, source_node=source,
                                 target_node=target, pages=_pages(mb))
    return backend.TierPages(instance.uuid, reason, source_node=source,
                             target_node=target, pages=_pages(mb), pick=pick)


def tier_guest(instance, topology, usage, kernel, can_set_nodeset=True,
               marks=Marks()):
    """This period's :class:`Tiering` of one guest.

    ``kernel``: the host's
    :class:`~nova_numa_policy.contracts.backend.MemoryTiers` (whether it
    demotes, whether it promotes); ``can_set_nodeset``: whether the host
    changes a running guest's nodeset; ``marks``: :class:`Marks`.
    """
    if not is_tiered(instance, topology):
        return Tiering()
    host = _Host.of(topology, usage, marks)
    memory = instance.memory_mb_per_node
    resident = sum(memory.values())
    on_top = sum(mb for node, mb in memory.items() if node in host.tops)
    floor = resident * instance.requested_tiers.top_tier_percent / 100
    seen = _seen(instance, host, on_top, floor)
    if floor - on_top >= MIN_MOVE_MB:
        decided = _up_to_floor(instance, host, floor - on_top, kernel)
    elif kernel.kernel_tiers:
        decided = Tiering()
    else:
        decided = _cold_down(instance, host, on_top - floor, can_set_nodeset)
        if not (decided.actions or decided.blocked):
            decided = _hot_up(instance, host)
    return dataclasses.replace(decided, seen=seen)


def demotable_mb(instances, topology, kernel, can_set_nodeset=True):
    """{top-tier node id: MB a lower tier may take off it}: pure.

    What the scheduler may count as room on a host's top tier
    (NumaNodeReport.demotable_mb): per ``tiered`` guest, its pages above
    its floor that it did not write over the last period, node by node,
    the most the cold-down move would take if every top-tier node were
    short. Nothing of a guest whose writes are not measured (no cold page
    is known), nor of one whose cold pages could not leave: the lower
    tier outside its nodeset and not to be opened, while the kernel does
    not demote (which it does whatever the nodeset). Whether the lower
    tier has room for them is the reader's to weigh: the report says
    each node's free memory.
    """
    result = {}
    for instance in instances:
        for node, mb in _demotable_of(instance, topology, kernel,
                                      can_set_nodeset).items():
            result[node] = result.get(node, 0) + mb
    return result


def _demotable_of(instance, topology, kernel, can_set_nodeset):
    written = instance.written_mb_per_node
    if written is None or not is_tiered(instance, topology):
        return {}
    tops = toptier.top_tier_nodes(topology)
    lowers = frozenset(n.id for n in topology.nodes) - tops
    if not (kernel.demotion or toptier.reach(instance, topology) & lowers
            or _closed(instance, min(lowers), can_set_nodeset) is None):
        return {}
    memory = instance.memory_mb_per_node
    on_top = sum(mb for node, mb in memory.items() if node in tops)
    allowance = (on_top - sum(memory.values())
                 * instance.requested_tiers.top_tier_percent / 100)
    result = {}
    for node in sorted(n for n in tops if memory.get(n, 0) > 0):
        amount = int(min(memory[node] - written.get(node, 0), allowance))
        if amount < MIN_MOVE_MB:
            continue
        result[node] = amount
        allowance -= amount
    return result


def _seen(instance, host, on_top, floor):
    """What a decision read of a guest, in words, MB per node."""
    def per_node(mb):
        return ', '.join(f'{node}: {value:.0f}'
                         for node, value in sorted(mb.items()))

    written = instance.written_mb_per_node
    return (f'{on_top:.0f} MB on the top tier, floor {floor:.0f}; memory '
            f'{{{per_node(instance.memory_mb_per_node)}}}, written '
            + ('not measured' if written is None else
               f'{{{per_node(written)}}}')
            + f'; free {{{per_node(host.free)}}}')


def _targets(instance, host):
    """The top-tier nodes the guest's memory may be on, most room first."""
    nodes = (toptier.reach(instance, host.topology) & host.tops) or host.tops
    return sorted(nodes, key=lambda n: (-host.free[n], n))


def _lower_holdings(instance, host):
    """(node, MB) of the guest on lower-tier nodes, the most first."""
    return sorted(((node, mb) for node, mb in
                   instance.memory_mb_per_node.items()
                   if node in host.lowers and mb > 0),
                  key=lambda item: (-item[1], item[0]))


def _up_to_floor(instance, host, missing, kernel):
    """Pages up until the top tier holds the guest's floor."""
    measured = instance.written_mb_per_node is not None
    mark = (host.marks.high if kernel.kernel_tiers
            else toptier.TOP_TIER_RESERVE)
    share = instance.requested_tiers.top_tier_percent
    room = {n: host.room(n, mark) for n in _targets(instance, host)}
    actions = []
    for source, mb in _lower_holdings(instance, host):
        for target in sorted(room, key=lambda n: (-room[n], n)):
            amount = min(missing, mb, room[target])
            if amount < MIN_MOVE_MB:
                continue
            actions.append(_move(
                instance, f'tiered: {amount:.0f} MB from lower-tier node '
                f'{source} to node {target}, up to its {share} % on the top '
                f'tier', source, target, amount, backend.PICK_HOT_FIRST,
                measured))
            room[target] -= amount
            missing -= amount
            mb -= amount
    blocked = None
    if missing >= MIN_MOVE_MB:
        blocked = (f'tiered: {missing:.0f} MB short of its {share} % on the '
                   f'top tier: no top-tier node of its nodeset has room')
    return Tiering(tuple(actions), blocked)


def _cold_down(instance, host, allowance, can_set_nodeset):
    """Cold pages down from short top-tier nodes, never below the floor."""
    written = instance.written_mb_per_node
    if written is None:
        return Tiering()
    memory = instance.memory_mb_per_node
    room = {n: host.room(n, toptier.TOP_TIER_RESERVE) for n in host.lowers}
    reachable = nodes = toptier.reach(instance, host.topology)
    moves = []
    for source in sorted(n for n in host.tops if memory.get(n, 0) > 0):
        cold = memory[source] - written.get(source, 0)
        target = max(sorted(room), key=lambda n: room[n], default=None)
        if target is None:
            break
        amount = min(host.shortfall(source), cold, allowance, room[target])
        if amount < MIN_MOVE_MB:
            continue
        if target not in nodes:
            why = _closed(instance, target, can_set_nodeset)
            if why:
                return Tiering(blocked=why)
            nodes = nodes | {target}
        moves.append(_move(
            instance, f'tiered: {amount:.0f} MB not written over the last '
            f'period, from top-tier node {source} (under '
            f'{host.marks.low:.0%} free) to lower-tier node {target}',
            source, target, amount,
            backend.PICK_COLD, True))
        room[target] -= amount
        allowance -= amount
    if nodes == reachable:
        return Tiering(tuple(moves))
    # move_pages(2) moves a page only to a node of the process's cpuset.
    opened = backend.SetNodeset(
        instance.uuid, f'tiered: lower-tier node(s) '
        f'{sorted(nodes - reachable)} opened to its cold pages', nodes=nodes)
    return Tiering((opened, *moves))


def _closed(instance, lower, can_set_nodeset):
    """Why ``lower`` cannot be added to the guest's nodeset, or None."""
    if instance.memory_mode not in backend.LIVE_NODESET_MODES:
        return (f'tiered: cold pages stay on the top tier: memory mode '
                f'{instance.memory_mode} cannot open lower-tier node {lower} '
                f'to it while the guest runs')
    if not can_set_nodeset:
        return ("tiered: cold pages stay on the top tier: this host cannot "
                "change a running guest's nodeset")
    return None


def _hot_up(instance, host):
    """Pages it wrote, found on a lower tier, up where there is room."""
    written = instance.written_mb_per_node
    if written is None:
        return Tiering()
    room = {n: host.room(n, host.marks.high)
            for n in _targets(instance, host)}
    actions = []
    for source, _ in _lower_holdings(instance, host):
        hot = written.get(source, 0)
        for target in sorted(room, key=lambda n: (-room[n], n)):
            amount = min(hot, room[target])
            if amount < MIN_MOVE_MB:
                continue
            actions.append(_move(
                instance, f'tiered: {amount:.0f} MB written over the last '
                f'period, from lower-tier node {source} to node {target}',
                source, target, amount, backend.PICK_HOT, True))
            room[target] -= amount
            hot -= amount
    return Tiering(tuple(actions))
