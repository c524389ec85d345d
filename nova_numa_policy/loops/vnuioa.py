"""vNUIOA memory/NIC affinity (seed 002 §4.3).

Each period, per guest:

1. classify it: I/O-intensive when its request rate is at least
   ``io_threshold_rps`` (500/s: non-intensive guests stay below 100/s,
   intensive ones above 1000/s);
2. choose its node: *NIC-prior* for I/O-intensive guests (the node nearest
   the NIC, then the next nearest), *NUMA-prior* for the others (the node
   holding most of its memory, away from the NIC on ties); a node whose
   load would exceed ``node_load_threshold`` (80 %) is skipped, and a
   guest already on one node stays unless the choice is strictly closer
   (to the NIC, or to its memory): first do no harm. One exception, the
   seed's load rule: a guest on a node over the threshold leaves for the
   best node with room, even a farther one, when the expected throughput
   there beats what it gets now by ``min_gain`` (CPU contention costs it
   more than the remote NIC or memory would, see :func:`_relief`);
3. pass the choice through the pin count (seed 004) and re-pin the vCPUs
   when it changes;
4. migrate memory to the chosen node only when the busiest remote node
   sees more than ``remote_factor`` (2x) the local accesses and the move
   brings it closer (for an I/O-intensive guest memory on the NIC's node
   counts as near: the NIC writes it).

Heavier I/O guests choose first, so they win the nodes near the NIC.
"""


import numpy as np

from nova_numa_policy.conf import loops as loops_conf
from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality
from nova_numa_policy.loops import base
from nova_numa_policy.loops import hysteresis

PAGES_PER_MB = 256
# Seed 002 §2 (Fig. 3): a remote NIC costs a network-bound guest 34 % of
# its throughput, remote memory a memory-bound one 18 %, both measured one
# step of NUMA distance from local; farther nodes cost in proportion.
REMOTE_NIC_COST = 0.34
REMOTE_MEMORY_COST = 0.18


# Its options in [numa_policy_loops], defined with every loop's in
# nova_numa_policy.conf.loops.
OPTS = loops_conf.VNUIOA_OPTS

Config = base.config_class(
    __name__, OPTS,
    {'io_threshold_rps': 'vnuioa_io_threshold',
     'node_load_threshold': 'vnuioa_node_load',
     'remote_factor': 'vnuioa_remote_factor',
     'max_pin_count': 'hysteresis_pin_count'},
    batch_pages=65536,
    # Leaving an overloaded node must promise this much more throughput:
    # the model is coarse, and a move costs the guest its cache.
    min_gain=0.05)


def io_intensive(inst, threshold_rps):
    """Whether a guest is network-bound: as its flavor says, else measured.

    ``hw:numa_io_intensity=high`` or ``low`` is the operator's word for
    it, and holds whatever the rate (a guest whose traffic no host counter
    sees, a whole passed-through NIC or a VF whose PF keeps no per-VF
    counters, reads as silent); ``auto`` is the seed's rule on the
    measured rate.
    """
    if inst.io_intensity == 'high':
        return True
    if inst.io_intensity == 'low':
        return False
    return inst.io_rate >= threshold_rps


def _nic_node(topology):
    for nic in topology.nics:
        if nic.numa_node is not None:
            return nic.numa_node
    return None


def _load(topology, snapshot):
    """vCPUs per node over the node's CPUs: what a placement adds to."""
    counts = np.zeros(len(topology.nodes))
    for inst in snapshot.instances:
        for node in base.vcpu_nodes(topology, inst):
            counts[node] += 1
    return counts


def _costs(topology, inst, io_intensive, nic):
    """Distance proxy of running on each node: to the NIC, else to memory."""
    dist = base.distance_matrix(topology)
    if io_intensive and nic is not None:
        return dist[nic]
    mem = base.memory_vector(topology, inst)
    share = mem / mem.sum() if mem.sum() else mem
    return dist @ share


def _cost(topology, inst, io_intensive, nic, node):
    """Distance proxy of running on ``node`` alone."""
    return float(_costs(topology, inst, io_intensive, nic)[node])


def _candidates(topology, inst, io_intensive, nic, costs=None):
    n = len(topology.nodes)
    if costs is None:
        costs = _costs(topology, inst, io_intensive, nic)
    away = topology.node(nic).distances if nic is not None else [0] * n
    return sorted(range(n), key=lambda k: (costs[k], -away[k], k))


def _stacks(topology, snapshot):
    """vCPUs last seen on each host CPU, over every guest."""
    # A list: read a CPU at a time, where numpy's scalars cost more.
    stacks = [0] * (max(base.cpu_nodes(topology), default=-1) + 1)
    for inst in snapshot.instances:
        for cpu in inst.vcpu_cpus:
            if 0 <= cpu < len(stacks):
                stacks[cpu] += 1
    return stacks


def _share(inst, stacks):
    """CPU share of the guest's vCPUs: n vCPUs on one CPU get 1/n each."""
    if not inst.vcpu_cpus:
        return 1.0
    shares = [1.0 / max(1, stacks[c]) if 0 <= c < len(stacks) else 1.0
              for c in inst.vcpu_cpus]
    # np.mean's sum and division without its dispatch: the same bits.
    return float(np.add.reduce(np.array(shares)) / len(shares))


def _remote_cost(topology, costs, node, io_intensive):
    """Throughput lost on ``node`` to a remote NIC (or memory), 0 to 0.95.

    The seed's loss per step of distance beyond local, the step being the
    host's nearest remote distance; capped so a guest never looks dead.
    """
    dist = base.distance_matrix(topology)
    local = float(dist.diagonal().min())
    remote = dist[dist > local]
    step = float(remote.min()) - local if remote.size else 1.0
    weight = REMOTE_NIC_COST if io_intensive else REMOTE_MEMORY_COST
    return min(0.95, weight * max(0.0, float(costs[node]) - local) / step)


def _has_room(topology, node, counts, own, vcpus, config):
    cpus = len(topology.node(node).cpus)
    after = counts[node] - own[node] + vcpus
    return after / cpus <= config.node_load_threshold + 1e-9


def _relief(topology, inst, io_intensive, current, counts, own, costs,
            share, config):
    """The node an overloaded guest should leave for, or None.

    Seed 002 step 3 maps vCPUs away from a node over 80 % load. Leaving
    for a node farther from the NIC (or memory) only pays when the CPU
    contention it escapes costs more than the distance it takes on: here
    it gets ``share`` of a CPU at ``current``'s remote cost; a node with
    room gives every vCPU a CPU of its own at that node's remote cost.
    """
    cpus = len(topology.node(current).cpus)
    if counts[current] / cpus <= config.node_load_threshold:
        return None
    vcpus = len(inst.vcpu_cpus)
    roomy = [k for k in range(len(topology.nodes)) if k != current
             and base.node_cpus(topology, inst, k)
             and _has_room(topology, k, counts, own, vcpus, config)]
    if not roomy:
        return None
    # Among equally near nodes the least loaded: spreads the leavers.
    best = min(roomy, key=lambda k: (
        _remote_cost(topology, costs, k, io_intensive), counts[k], k))
    here = share * (1.0 - _remote_cost(topology, costs, current,
                                       io_intensive))
    there = 1.0 - _remote_cost(topology, costs, best, io_intensive)
    return best if there > here * (1.0 + config.min_gain) else None


def left_to_the_kernel(snapshot, inst, io_intensive):
    """Whether the kernel already brings this guest's memory to its vCPUs.

    Where the kernel balances (hinting faults are the host's signal) it
    moves a guest's default-policy memory toward the vCPUs that touch it.
    NUMA-prior would move the vCPUs toward the memory at the same time,
    the two chasing each other, and would act on samples taken before
    the kernel's moves. Such a guest that is not network-bound is left
    to the kernel, but for the load rule (:func:`_relief`), which the
    kernel does not apply to pinned vCPUs. A network-bound one is not:
    the kernel knows nothing of NICs.
    """
    return (not io_intensive
            and locality.kernel_balances(snapshot.locality_signal)
            and locality.kernel_balances_memory(inst.memory_mode))


def _choose(topology, inst, io_intensive, nic, counts, config, share=1.0,
            relief_only=False):
    """The best node with room, or the current one when none is better.

    First do no harm: a guest whose vCPUs already share one node is moved
    only to a node strictly better by the distance proxy, never sideways
    (a tie would cost it its cache and, if memory follows, its memory),
    unless its node is overloaded and leaving pays (:func:`_relief`).
    ``share`` is the CPU share its vCPUs get where they run now;
    ``relief_only``: the guest may only leave an overloaded node.
    """
    vnodes = base.vcpu_nodes(topology, inst)
    own = np.bincount(vnodes, minlength=len(topology.nodes))
    current = vnodes[0] if len(set(vnodes)) == 1 else None
    costs = _costs(topology, inst, io_intensive, nic)
    vcpus = len(inst.vcpu_cpus)
    if relief_only:
        # Nothing to pin where there is nothing to relieve: the kernel
        # also moves unpinned threads toward their memory.
        return None if current is None else _relief(
            topology, inst, io_intensive, current, counts, own, costs,
            share, config)
    for node in _candidates(topology, inst, io_intensive, nic, costs):
        if not base.node_cpus(topology, inst, node):
            continue  # nova allows the guest none of its CPUs
        if not _has_room(topology, node, counts, own, vcpus, config):
            continue
        if current is not None and costs[node] >= costs[current]:
            relief = _relief(topology, inst, io_intensive, current, counts,
                             own, costs, share, config)
            return current if relief is None else relief
        return node
    return None


def _pin(topology, inst, node, why):
    cpus = base.node_cpus(topology, inst, node)
    return [backend.PinVcpu(instance_uuid=inst.uuid, vcpu=v, cpus=cpus,
                            reason=f'vnuioa: {why}, node {node}')
            for v in range(len(inst.vcpu_cpus))
            if inst.vcpu_affinity[v:v + 1] != (cpus,)]


def _memory_cost(topology, node, nic, io_intensive, where):
    """Distance proxy of memory on ``where`` for vCPUs on ``node``.

    An I/O-intensive guest's buffers are also written by the NIC, so for
    it memory near the NIC is as good as memory near the vCPUs.
    """
    cost = topology.node(node).distances[where]
    if io_intensive and nic is not None:
        cost += topology.node(nic).distances[where]
    return cost


def _memory(topology, inst, node, config, nic=None, io_intensive=False):
    acc = base.access_vector(topology, inst)
    if acc is None:
        acc = base.memory_vector(topology, inst)
    mem = base.memory_vector(topology, inst)
    remote = [k for k in range(len(acc)) if k != node and mem[k] > 0]
    if not remote:
        return []
    worst = max(remote, key=lambda k: acc[k])
    if acc[worst] <= config.remote_factor * acc[node]:
        return []
    if _memory_cost(topology, node, nic, io_intensive, node) >= _memory_cost(
            topology, node, nic, io_intensive, worst):
        return []  # not closer for this guest: moving would only cost
    pages = int(min(config.batch_pages, mem[worst] * PAGES_PER_MB))
    return [backend.MovePages(
        instance_uuid=inst.uuid, source_node=worst, target_node=node,
        pages=pages,
        reason=f'vnuioa: node {worst} accesses > {config.remote_factor:g}x '
               f'local node {node}')]


class Vnuioa(base.Strategy):
    name = 'vnuioa'
    inputs = ('io_rate', 'vcpu_cpus', 'memory_mb_per_node',
              'accesses_per_node', 'usage')
    required_capabilities = frozenset({backend.CAP_VCPU_PINNING,
                                       backend.CAP_PAGE_MIGRATION})
    Config = Config
    OPTS = OPTS

    @classmethod
    def judge(cls, instance, topology, config):
        """Whether the guest is I/O intensive, by this loop's rule."""
        return {'io_intensive': io_intensive(instance,
                                             config.io_threshold_rps)}

    def decide(self, snapshot, state, config):
        topo = snapshot.topology
        nic = _nic_node(topo)
        counts = _load(topo, snapshot)
        pins = dict(state.get('pins', {}))
        actions = []
        # Guests whose policy places their vCPUs (home, interleave) are
        # not the loop's to move; they still count in the nodes' load.
        order = sorted((i for i in base.managed(snapshot)
                        if base.vcpus_movable(i)), key=lambda i: -i.io_rate)
        stacks = _stacks(topo, snapshot)
        for inst in order:
            io = io_intensive(inst, config.io_threshold_rps)
            kernels = left_to_the_kernel(snapshot, inst, io)
            choice = _choose(topo, inst, io, nic, counts, config,
                             _share(inst, stacks), relief_only=kernels)
            if choice is None:
                continue
            pins[inst.uuid] = hysteresis.update(pins.get(inst.uuid), choice,
                                                config.max_pin_count)
            node = pins[inst.uuid].value
            old_nodes = base.vcpu_nodes(topo, inst)
            for old, cpu in zip(old_nodes, inst.vcpu_cpus):
                counts[old] -= 1
                if old != node and 0 <= cpu < len(stacks):
                    # Its CPU-mates get the CPU to themselves once it
                    # leaves: they need not leave too.
                    stacks[cpu] -= 1
            counts[node] += len(inst.vcpu_cpus)
            actions.extend(_pin(topo, inst, node, self._why(
                inst, io, node, old_nodes, counts, topo, config)))
            if not kernels:
                actions.extend(_memory(topo, inst, node, config, nic, io))
        return actions, {'pins': pins}

    def forget(self, state, uuids):
        # A rebooted guest runs where the host put it now: its old pin
        # count would pull it back to where it ran before the reboot.
        pins = state.get('pins', {})
        return {**state, 'pins': {u: p for u, p in pins.items()
                                  if u not in uuids}}

    @staticmethod
    def _why(inst, io, node, old_nodes, counts, topo, config):
        measured = (f'{inst.io_rate:.0f} req/s' if inst.io_intensity
                    in (None, 'auto') else f'flavor says {inst.io_intensity}')
        why = (f'NIC-prior (I/O-intensive, {measured})' if io
               else 'NUMA-prior')
        if len(set(old_nodes)) == 1 and old_nodes[0] != node:
            old = old_nodes[0]
            load = (counts[old] + len(inst.vcpu_cpus)) / len(
                topo.node(old).cpus)
            if load > config.node_load_threshold:
                why += (f', leaving node {old} at {base.pct(load)} load '
                        f'(> {base.pct(config.node_load_threshold)})')
        return why
