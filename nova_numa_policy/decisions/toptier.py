"""A ``top`` guest's memory kept off a host's lower memory tiers: pure.

``hw:numa_memory_tiers`` (:mod:`nova_numa_policy.contracts.tiers`) asks,
with ``top``, that no page of the guest lives on a lower tier. Its first
placement keeps to the top-tier nodes
(:func:`nova_numa_policy.decisions.enforcement.boot_plan`, by
:func:`keeps_to_top_tier`), but a binding does not hold the kernel's
demotion: Linux 6.1's reclaim moves a bound guest's pages to the next
tier's node whatever its mbind and cpuset say (doc/source/labhost.rst,
"A lower memory tier"). So each period the agent takes a lower-tier node
out of the guest's nodeset and moves its memory found there back
(:func:`enforce_top_tier`). A node's tier is its rank in the host's
topology (``NodeInfo.memory_tier``, 0 the top tier).
"""

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import tiers

# Of a top-tier node's memory, the share that moving a ``top`` guest's
# pages back onto it leaves free: filling the node to its last page would
# have the kernel reclaim, and demote, again at once (its reclaim
# watermarks are, by default, well under 1 % of a node). A choice, not a
# measured value.
TOP_TIER_RESERVE = 0.02
# Pages of 4 KiB, what page moves count.
PAGES_PER_MB = 256


def free_mb(node, usage_by_node):
    usage = usage_by_node.get(node.id)
    return usage.memory_free_mb if usage else node.memory_total_mb


# The tier modes whose first placement keeps to the top tier: ``top``
# for good; ``tiered`` until its cold pages are moved down (a later loop).
TOP_FIRST_MODES = (tiers.TierMode.TOP, tiers.TierMode.TIERED)


def top_tier_nodes(topology):
    """The ids of the nodes in the top memory tier (rank 0)."""
    return frozenset(n.id for n in topology.nodes if n.memory_tier == 0)


def has_lower_tier(topology):
    """Whether the host has top-tier nodes and nodes of a lower tier."""
    ranks = {n.memory_tier for n in topology.nodes}
    return 0 in ranks and len(ranks) > 1


def keeps_to_top_tier(memory_tiers, topology):
    """Whether a guest asking ``memory_tiers`` is placed on the top tier.

    ``memory_tiers``: a :class:`~nova_numa_policy.contracts.tiers.MemoryTiers`.
    Never on a host without a lower tier: its top tier is every node, and
    the guest is placed as if it had asked nothing of tiers.
    """
    return memory_tiers.mode in TOP_FIRST_MODES and has_lower_tier(topology)


def kept_off_lower_tiers(instance, topology):
    """Whether a running guest's memory must be kept off a lower tier here.

    ``top`` only: a ``tiered`` guest's pages may live on a lower tier
    (what moves them is another loop's), an ``any`` guest's anywhere.
    """
    return (instance.requested_tiers.mode == tiers.TierMode.TOP
            and has_lower_tier(topology))


def enforce_top_tier(instance, topology, usage, can_set_nodeset=True,
                     can_move_pages=False, planned=()):
    """Keep a ``top`` guest's memory off the lower tiers, now.

    Two corrections, after ``planned`` (the actions already decided for
    the guest): a nodeset that lets the kernel allocate on a lower-tier
    node loses it, where libvirt can change it live; memory resident on
    a lower-tier node moves back to the top-tier nodes of its nodeset,
    where the host moves pages. The second is needed whatever the
    nodeset: the working hypothesis is that reclaim in Linux 6.1 demotes
    a guest's pages without checking its cgroup's cpuset.mems. Were it
    to check, a guest kept to the top tier has no page down there and
    nothing is moved.
    """
    tops = top_tier_nodes(topology)
    nodeset, nodeset_blocked = _top_tier_nodeset(
        instance, topology, tops, can_set_nodeset, planned)
    nodes = nodeset.nodes if nodeset else reach(instance, topology, planned)
    moves, moves_blocked = _moves_to_top_tier(
        instance, topology, usage, (nodes & tops) or tops, can_move_pages)
    return (((nodeset,) if nodeset else ()) + tuple(moves),
            '; '.join(why for why in (nodeset_blocked, moves_blocked)
                      if why) or None)


def reach(instance, topology, planned=()):
    """The nodes the kernel may allocate the guest's memory on.

    Those of the last nodeset ``planned``, else of its binding; every
    node without one, or with ``preferred``, which spills anywhere.
    """
    for action in reversed(planned):
        if isinstance(action, backend.SetNodeset):
            return action.nodes
    if (instance.memory_mode == backend.MODE_PREFERRED
            or not instance.memory_nodes):
        return frozenset(n.id for n in topology.nodes)
    return instance.memory_nodes


def _top_tier_nodeset(instance, topology, tops, can_set_nodeset, planned):
    """(a SetNodeset off the lower tier, or None; why not, or None)."""
    reachable = reach(instance, topology, planned)
    lower = reachable - tops
    if not lower:
        return None, None
    words = f'top tier only: lower-tier node(s) {sorted(lower)}'
    if instance.memory_mode not in backend.LIVE_NODESET_MODES:
        return None, (f'{words} stay open to its memory until its next hard '
                      f'reboot: memory mode {instance.memory_mode} cannot '
                      f'change while the guest runs')
    if not can_set_nodeset:
        return None, (f"{words} stay open to its memory: this host cannot "
                      f"change a running guest's nodeset")
    nodes = (reachable & tops) or tops
    return backend.SetNodeset(
        instance.uuid, f'{words} taken out: memory bound to nodes '
                       f'{sorted(nodes)}', nodes=nodes), None


def _room_mb(topology, usage, node_ids):
    """{node id: its free MB above :data:`TOP_TIER_RESERVE`, or 0}."""
    usage_by_node = {u.node_id: u for u in usage}
    # Whole MB: a move is of whole pages, and measured free memory comes
    # as a float (the agent reads it from meminfo's kB).
    return {n.id: max(0, int(free_mb(n, usage_by_node))
                      - int(TOP_TIER_RESERVE * n.memory_total_mb))
            for n in topology.nodes if n.id in node_ids}


def _moves_to_top_tier(instance, topology, usage, targets, can_move_pages):
    """(MovePages of lower-tier memory onto ``targets``; why not all).

    Each lower-tier node's share goes to the target with the most room
    (free memory above :data:`TOP_TIER_RESERVE`), as much as fits; where
    the guest's vCPUs are is the rebalancing loops' concern afterwards.
    """
    lower = frozenset(n.id for n in topology.nodes) - top_tier_nodes(topology)
    found = {node: mb for node, mb in sorted(
        instance.memory_mb_per_node.items()) if node in lower and mb > 0}
    if not found:
        return [], None
    if not can_move_pages:
        return [], (f'top tier only: {sum(found.values()):.0f} MB on '
                    f'lower-tier node(s) {sorted(found)} stay there: this '
                    f'host cannot move pages')
    room = _room_mb(topology, usage, targets)
    moves, left = [], 0
    for node, mb in found.items():
        target = max(room, key=lambda n: (room[n], -n))
        fits = min(mb, room[target])
        if fits > 0:
            room[target] -= fits
            # numa_maps gives MiB in fractions; a move is of whole pages.
            moves.append(backend.MovePages(
                instance.uuid, f'top tier only: {fits:.0f} MB on lower-tier '
                f'node {node} moved back to node {target}', source_node=node,
                target_node=target, pages=int(fits * PAGES_PER_MB)))
        left += mb - fits
    return moves, (f'top tier only: {left:.0f} MB stay on lower-tier '
                   f'node(s): no top-tier node of its nodeset has room'
                   if left >= 1 else None)
