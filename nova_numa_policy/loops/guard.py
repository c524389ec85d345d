"""First do no harm: refuse actions that load a harmed neighbour's nodes.

A pure filter the runner applies to every loop's actions, from what a real
agent observes. Each guest's *progress* is its request rate when it does
network I/O, else its memory accesses per second (counters); both fall
when the guest slows down. Per guest:

* the *reference* is its mean progress while it is undisturbed, i.e.
  until an admitted action first lands on it or on a node it uses; it is
  frozen then, and measured again every ``revisit_periods``;
* its progress is smoothed (EWMA, ``smoothing`` old weight); while it is
  more than ``tolerance`` below the reference the guest is *protected*.
  Moves onto its nodes stop as soon as it crosses the line, so it settles
  at most about ``tolerance`` plus one period's step below where it was
  (no latch: a guest slowed for a moment by a neighbour's transition, or
  by its own phase, does not freeze the host for an hour);
* an action by or for another guest that would add load to a node a
  protected guest uses (memory or vCPUs there, at least ``min_share`` of
  its own) is refused with a logged reason: pages moved *to* the node,
  vCPUs pinned *onto* it, nodes added to a nodeset.

So that the feedback can act before the harm is done, a node receives
the vCPUs of at most one guest per period; the others wait for the next
period (vNUIOA would otherwise crowd the NIC's node with every I/O guest
in one step, before any harm could be measured). Page moves are not
limited this way: Carrefour spreads two guests over the same nodes at
once, and serializing them made convergence seed-dependent.

Actions on a guest itself are never refused for its own sake: a loop
acting on a slowed guest is trying to repair it. Guests without a
measurable progress (no counters, no I/O) are not protected by the guard;
the loops' own thresholds still apply to them.
"""

import dataclasses

import numpy as np

from nova_numa_policy import backend
from nova_numa_policy.loops import base


@dataclasses.dataclass(frozen=True)
class Config:
    enabled: bool = True
    tolerance: float = 0.01
    smoothing: float = 0.5
    min_share: float = 0.05
    revisit_periods: int = 720
    period_s: float = 5.0


@dataclasses.dataclass(frozen=True)
class Record:
    ref: float
    samples: int  # samples in ref; frozen once disturbed
    ewma: float
    disturbed: bool = False
    protected: bool = False
    age: int = 0


def initial_state():
    return {}


def progress(topology, inst, period_s):
    """Requests per second, else accesses per second, else None."""
    if inst.io_rate and inst.io_rate > 0:
        return float(inst.io_rate)
    acc = base.access_vector(topology, inst)
    if acc is None or acc.sum() <= 0:
        return None
    return float(acc.sum()) / period_s


def exposure(topology, inst, min_share):
    """Nodes whose load this guest feels: its vCPUs' and memory's nodes."""
    nodes = set(base.vcpu_nodes(topology, inst))
    mem = base.memory_vector(topology, inst)
    acc = base.access_vector(topology, inst)
    for vec in (mem, acc):
        if vec is not None and vec.sum() > 0:
            nodes |= {int(n) for n in np.flatnonzero(
                vec / vec.sum() >= min_share)}
    nodes.discard(None)
    return nodes


def _update(rec, value, config):
    if rec is None or rec.age >= config.revisit_periods:
        return Record(ref=value, samples=1, ewma=value)
    ewma = config.smoothing * rec.ewma + (1 - config.smoothing) * value
    ref, samples = rec.ref, rec.samples
    if not rec.disturbed:
        samples += 1
        ref += (value - ref) / samples
        ewma = ref
    protected = rec.disturbed and ewma < (1.0 - config.tolerance) * ref
    return dataclasses.replace(rec, ref=ref, samples=samples, ewma=ewma,
                               protected=protected, age=rec.age + 1)


def observe(snapshot, state, config):
    """New guard state after one snapshot; never mutates ``state``."""
    new = {}
    for inst in snapshot.instances:
        value = progress(snapshot.topology, inst, config.period_s)
        if value is not None:
            new[inst.uuid] = _update(state.get(inst.uuid), value, config)
    return new


def destinations(topology, inst, action):
    """Nodes the action adds load to."""
    if isinstance(action, backend.MovePages):
        return {action.target_node}
    if isinstance(action, backend.SetNodeset):
        return set(action.nodes) - set(inst.memory_nodes or ())
    if isinstance(action, backend.PinVcpu):
        nodes = {topology.node_of_cpu(c) for c in action.cpus}
        if action.vcpu < len(inst.vcpu_cpus):
            current = topology.node_of_cpu(inst.vcpu_cpus[action.vcpu])
            if current in nodes:
                return set()
        return nodes - {None}
    return set()


def refusal(snapshot, state, config, action, arrivals=None):
    """Why ``action`` must not run, or None when it may.

    ``arrivals`` maps a node to the guest whose load was already let onto
    it this period.
    """
    if not config.enabled:
        return None
    topo = snapshot.topology
    by_uuid = {i.uuid: i for i in snapshot.instances}
    inst = by_uuid.get(action.instance_uuid)
    if inst is None:
        return None
    dest = destinations(topo, inst, action)
    if not dest:
        return None
    for node in sorted(dest) if isinstance(action, backend.PinVcpu) else ():
        first = (arrivals or {}).get(node, action.instance_uuid)
        if first != action.instance_uuid:
            return f'guard: node {node} already receives {first} this period'
    for uuid, rec in sorted(state.items()):
        if uuid == action.instance_uuid or not rec.protected:
            continue
        other = by_uuid.get(uuid)
        if other is None:
            continue
        hit = dest & exposure(topo, other, config.min_share)
        if hit:
            return (f'guard: {uuid} is {base.pct(1 - rec.ewma / rec.ref)} '
                    f'below its undisturbed progress and uses node(s) '
                    f'{sorted(hit)}')
    return None


def disturb(snapshot, state, config, action):
    """Mark the guests an admitted action touches as disturbed."""
    topo = snapshot.topology
    by_uuid = {i.uuid: i for i in snapshot.instances}
    inst = by_uuid.get(action.instance_uuid)
    dest = destinations(topo, inst, action) if inst else set()
    new = dict(state)
    for uuid, rec in state.items():
        if rec.disturbed:
            continue
        other = by_uuid.get(uuid)
        if uuid == action.instance_uuid or (
                other is not None
                and dest & exposure(topo, other, config.min_share)):
            new[uuid] = dataclasses.replace(rec, disturbed=True)
    return new
