"""What the scheduler keeps of a HostReport: a small, immutable summary.

A report carries up to a thousand instances; the scheduler needs a few
numbers per node. Summarising once at ingest keeps the cache small and the
per-host path free of anything but arithmetic on tuples.

Every guest our plugins judge is a *floating* one, without dedicated
CPUs: nova's NUMATopologyFilter alone places pinned guests (the checks
pass them, :mod:`.scoring`). So a node's capacity here is the CPUs a
floating guest may use and their load, never the CPUs nova dedicates to
pinned guests, whose idleness is no headroom for a floating guest. The
all-CPU figures stay in the report, for operators (the REST API).

Each node keeps the rank of its memory tier (NumaNodeReport 1.2; not
said is the top tier, 0), and a host with a lower tier keeps its top
tier apart (:class:`TopTier`) for the flavors that keep their memory
there (``hw:numa_memory_tiers``; :mod:`.scoring`). A host without a
lower tier has none: every flavor is judged on it as before tiers.

The top tier's free memory counts, beside what is free, what the host's
tiering loop would move down off it (NumaNodeReport 1.3's
``demotable_mb``: ``tiered`` guests' unwritten pages above their
shares), as far as the lower tier has room for it, which then has that
much less (:func:`_top_tier`). A guest's pages fill a node's DRAM as
they are touched, long before anything demotes them: measured free
memory alone would refuse a ``top`` guest a host whose DRAM holds cold
pages that are only waiting for a reason to go down (doc/source/
scheduler.rst, "Memory tiers").
"""

import dataclasses
import math

from nova_numa_policy.objects import report as report_obj


@dataclasses.dataclass(frozen=True, slots=True)
class NodeState:
    """One host NUMA node as the scheduler sees it."""

    id: int
    # How many of the node's CPUs guests without dedicated CPUs may use
    # (0: all are dedicated), and their measured busy fraction.
    floating_cpus: int
    floating_load: float
    free_mb: int
    total_mb: int
    # I/O-intensive instances whose memory is mostly on this node.
    io_neighbours: int = 0
    # The rank of the node's memory tier: 0 the top (fastest) tier.
    tier: int = 0
    # Of its memory in use, the MB its agent's tiering loop would move to
    # a lower tier if it ran short (0: not said).
    demotable_mb: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class TopTier:
    """The top memory tier of a host that has a lower one.

    What a flavor that keeps its memory on the top tier may use: the
    top-tier nodes, as :class:`HostSummary` keeps all of them, and the
    free memory below them.
    """

    nodes: tuple  # of NodeState, the top-tier ones, in report order
    # The top-tier nodes seen as one node (id -1, like HostSummary.whole).
    whole: NodeState
    largest_node_floating_cpus: int
    largest_node_mb: int
    # The free memory of the nodes in lower tiers, less what the top
    # tier's counted room takes of it, and their ids.
    lower_free_mb: int
    lower_ids: tuple
    # The MB of the top-tier nodes' free memory that is demotable memory
    # the lower tier has room for, not memory free now.
    demotable_mb: int = 0

    @property
    def ids(self):
        return [node.id for node in self.nodes]

    @property
    def free_mb(self):
        return self.whole.free_mb


@dataclasses.dataclass(frozen=True, slots=True)
class HostSummary:
    host: str
    nodename: str
    generated_at: float  # POSIX seconds, the agent's clock
    seq: int
    nodes: tuple  # of NodeState, in report order
    # The whole host seen as one node, for instances no node can hold.
    whole: NodeState
    # Nodes any uplink sits on, and the same per physnet.
    nic_nodes: frozenset
    physnet_nodes: dict
    enforceable: frozenset
    largest_node_floating_cpus: int
    largest_node_mb: int
    # The agent process that sent it (None from agents before 1.1).
    boot_id: str | None = None
    # What the host measures of memory locality (None: nothing, or an
    # agent before report 1.2).
    locality_signal: str | None = None
    # Everything the host measures of its guests (report 1.3's
    # measurements; empty from older agents).
    measurements: frozenset = frozenset()
    # The top memory tier when the host has a lower one (report 1.8);
    # None: every node is in the top tier, as every node of an agent
    # before 1.8 is.
    top_tier: TopTier | None = None
    # Derived answers about this summary, filled by the scheduler plugins
    # (placement_filters/assessors.py). Not part of the value: a new
    # report brings a new summary with an empty memo, and
    # dataclasses.replace() never copies it.
    memo: dict = dataclasses.field(default_factory=dict, init=False,
                                   compare=False, repr=False)

    @property
    def key(self):
        return (self.host, self.nodename)

    def is_fresh(self, now, ttl):
        return now - self.generated_at <= ttl

    def order(self):
        """(boot id, seq, time), for :func:`report.supersedes`."""
        return (self.boot_id, self.seq, self.generated_at)


def _nic_nodes(nics, node_ids):
    if len(node_ids) == 1:
        # On a single-node host every device is local to the only node,
        # whatever the kernel reports as its numa_node.
        any_nodes = frozenset(node_ids) if nics else frozenset()
        physnets = {nic['physnet']: any_nodes for nic in nics
                    if nic['physnet']}
        return any_nodes, physnets
    physnets = {}
    any_nodes = set()
    for nic in nics:
        if nic['numa_node'] is None:
            continue  # locality unknown: local to nothing we can prove
        any_nodes.add(nic['numa_node'])
        if nic['physnet']:
            physnets.setdefault(nic['physnet'], set()).add(nic['numa_node'])
    return (frozenset(any_nodes),
            {name: frozenset(ids) for name, ids in physnets.items()})


def _io_neighbours(instances, io_rate):
    counts = {}
    for instance in instances:
        if not (instance['io_intensive'] or instance['io_rate'] >= io_rate):
            continue
        per_node = instance['memory_mb_per_node']
        if per_node:
            home = int(max(per_node, key=per_node.get))
            counts[home] = counts.get(home, 0) + 1
    return counts


def _whole_host(nodes):
    cpus = sum(node.floating_cpus for node in nodes)
    busy = sum(node.floating_load * node.floating_cpus for node in nodes)
    return NodeState(
        id=-1, floating_cpus=cpus,
        floating_load=busy / cpus if cpus else 1.0,
        free_mb=sum(node.free_mb for node in nodes),
        total_mb=sum(node.total_mb for node in nodes),
        io_neighbours=sum(node.io_neighbours for node in nodes))


def _node_state(node, io_neighbours):
    cpus, load = report_obj.floating_capacity(node)
    return NodeState(
        id=node['id'], floating_cpus=len(cpus),
        # A node without floating CPUs has no load of theirs; its count
        # of 0 already keeps every floating guest off it.
        floating_load=0.0 if load is None else load,
        free_mb=node['memory_free_mb'], total_mb=node['memory_total_mb'],
        io_neighbours=io_neighbours, tier=report_obj.memory_tier(node),
        demotable_mb=report_obj.demotable_mb(node))


def _top_tier(nodes):
    """The host's :class:`TopTier`, or None when no node is in a lower one."""
    lower = [node for node in nodes if node.tier]
    if not lower:
        return None
    # A report whose nodes are all in lower tiers (ranks start at 0 for
    # the fastest tier present, so only a hostile one) has an empty top
    # tier: nothing fits there.
    top = tuple(node for node in nodes if not node.tier)
    lower_free = sum(node.free_mb for node in lower)
    top, counted = _with_demotable_room(top, lower_free)
    return TopTier(
        nodes=top, whole=_whole_host(top),
        largest_node_floating_cpus=max(
            (node.floating_cpus for node in top), default=0),
        largest_node_mb=max((node.total_mb for node in top), default=0),
        lower_free_mb=lower_free - counted,
        lower_ids=tuple(node.id for node in lower), demotable_mb=counted)


def _with_demotable_room(top, lower_free_mb):
    """The top-tier nodes with their demotable MB counted free, and its sum.

    No more in all than the lower tier has free: when it has less, each
    node counts its demotable MB's share of that, rounded down.
    """
    demotable = sum(node.demotable_mb for node in top)
    if not demotable or lower_free_mb <= 0:
        return top, 0
    scale = min(1.0, lower_free_mb / demotable)
    room = [int(node.demotable_mb * scale) for node in top]
    return (tuple(dataclasses.replace(node, free_mb=node.free_mb + mb)
                  for node, mb in zip(top, room)), sum(room))


def summarize(data, io_rate):
    """Summarise a checked report, as ``report.load_report_data`` gives it.

    :param io_rate: requests per second from which an instance counts as
        I/O intensive (``[numa_policy_scheduler] io_intensive_rate``).
    """
    neighbours = _io_neighbours(data['instances'], io_rate)
    nodes = tuple(_node_state(n, neighbours.get(n['id'], 0))
                  for n in data['numa_nodes'])
    nic_nodes, physnet_nodes = _nic_nodes(data['nics'],
                                          [n.id for n in nodes])
    return HostSummary(
        host=data['host'], nodename=data['hypervisor_hostname'],
        generated_at=data['generated_at'].timestamp(), seq=data['seq'],
        nodes=nodes, whole=_whole_host(nodes), nic_nodes=nic_nodes,
        physnet_nodes=physnet_nodes,
        enforceable=frozenset(data['enforceable_policies']),
        largest_node_floating_cpus=max(node.floating_cpus for node in nodes),
        largest_node_mb=max(node.total_mb for node in nodes),
        boot_id=data['boot_id'],
        locality_signal=data['locality_signal'],
        measurements=frozenset(data['measurements']),
        top_tier=_top_tier(nodes))


def projected_load(node, vcpus, vcpu_load):
    """The load of the node's floating CPUs with a new guest's expected share.

    ``vcpus`` more vCPUs, each expected busy ``vcpu_load`` of the time
    (``[numa_policy_scheduler] expected_vcpu_load``). Infinite on a node
    without floating CPUs: no vCPU of a floating guest may run there.
    """
    if not node.floating_cpus:
        return math.inf
    return node.floating_load + vcpus * vcpu_load / node.floating_cpus


def is_quiet(node, threshold):
    """Whether the node's floating CPUs were measured at or under threshold.

    What the load filter decides on: the load the agent measured, not
    what the new guest is assumed to add. A node without floating CPUs
    holds no floating guest, so it is never quiet.
    """
    return node.floating_cpus > 0 and node.floating_load <= threshold
