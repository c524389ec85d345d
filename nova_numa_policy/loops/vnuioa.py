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
   (to the NIC, or to its memory): first do no harm;
3. pass the choice through the pin count (seed 004) and re-pin the vCPUs
   when it changes;
4. migrate memory to the chosen node only when the busiest remote node
   sees more than ``remote_factor`` (2x) the local accesses and the move
   brings it closer (for an I/O-intensive guest memory on the NIC's node
   counts as near: the NIC writes it).

Heavier I/O guests choose first, so they win the nodes near the NIC.
"""

import dataclasses

import numpy as np

from nova_numa_policy import backend
from nova_numa_policy.loops import base
from nova_numa_policy.loops import hysteresis

PAGES_PER_MB = 256


@dataclasses.dataclass(frozen=True)
class Config:
    io_threshold_rps: float = 500.0
    node_load_threshold: float = 0.80
    remote_factor: float = 2.0
    max_pin_count: int = 2
    batch_pages: int = 65536


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


def _choose(topology, inst, io_intensive, nic, counts, config):
    """The best node with room, or the current one when none is better.

    First do no harm: a guest whose vCPUs already share one node is moved
    only to a node strictly better by the distance proxy, never sideways
    (a tie would cost it its cache and, if memory follows, its memory).
    """
    vnodes = base.vcpu_nodes(topology, inst)
    own = np.bincount(vnodes, minlength=len(topology.nodes))
    current = vnodes[0] if len(set(vnodes)) == 1 else None
    costs = _costs(topology, inst, io_intensive, nic)
    for node in _candidates(topology, inst, io_intensive, nic, costs):
        cpus = len(topology.node(node).cpus)
        after = counts[node] - own[node] + len(inst.vcpu_cpus)
        if after / cpus > config.node_load_threshold:
            continue
        if current is not None and costs[node] >= costs[current]:
            return current
        return node
    return None


def _pin(topology, inst, node, why):
    cpus = frozenset(topology.node(node).cpus)
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

    def decide(self, snapshot, state, config):
        topo = snapshot.topology
        nic = _nic_node(topo)
        counts = _load(topo, snapshot)
        pins = dict(state.get('pins', {}))
        actions = []
        order = sorted(base.managed(snapshot), key=lambda i: -i.io_rate)
        for inst in order:
            io = inst.io_rate >= config.io_threshold_rps
            choice = _choose(topo, inst, io, nic, counts, config)
            if choice is None:
                continue
            pins[inst.uuid] = hysteresis.update(pins.get(inst.uuid), choice,
                                                config.max_pin_count)
            node = pins[inst.uuid].value
            for old in base.vcpu_nodes(topo, inst):
                counts[old] -= 1
            counts[node] += len(inst.vcpu_cpus)
            why = ('NIC-prior (I/O-intensive, '
                   f'{inst.io_rate:.0f} req/s)' if io else 'NUMA-prior')
            actions.extend(_pin(topo, inst, node, why))
            actions.extend(_memory(topo, inst, node, config, nic, io))
        return actions, {'pins': pins}
