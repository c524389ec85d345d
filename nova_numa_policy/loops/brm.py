"""Bias Random vCPU Migration (seed 001 Algorithm 1).

Per NUMA-sensitive vCPU and per node, an uncore penalty smoothed by an
EWMA (7/8 old, 1/8 new sample); each period, for every other node with a
lower penalty than the current one the migration probability rises by
``prob_step`` (else falls), bounded to 0..100, and the bias points at the
node with the lowest penalty. A random draw below the probability moves
the vCPU to its bias node and resets the probability.

Adaptations, each for a stated reason:

* the seed steps the probability by 1 per 10 ms tick; a 5 s agent period
  steps it by ``prob_step`` (25) so a decision takes a few periods;
* a node the vCPU has not run on recently has no sample: its penalty is
  estimated from the measured one, scaled by the distance from that node
  to the guest's memory and sibling vCPUs (NUMA distances of the host);
  estimates are refreshed every ``reset_periods``, the seed's periodic
  reset that forces re-exploration;
* on a host that measures nothing the sample itself is that distance
  proxy at the current node; on a host with a signal a vCPU without a
  measured penalty (the kernel sampled none of its accesses yet) waits
  for one, since the kernel is moving its memory meanwhile; from hinting
  faults the measured penalty is the distance its sampled accesses
  travel (:func:`nova_numa_policy.contracts.locality.remote_penalty`);
* load balancing overrides: a move to a node with no free CPU is skipped;
* the destination goes through the pin count (seed 004) like every
  affinity change;
* a vCPU whose affinity someone else narrowed (nova, vNUIOA) is left
  alone, so two loops never pull one vCPU back and forth;
* a network-bound guest (vNUIOA's rule) whose penalty is not counted
  stall time (it comes from hinting faults, or from the distance proxy
  while nothing was sampled yet) is left alone: both see its memory, not
  its NIC, and would draw its vCPUs toward the one and away from the
  other.

The random draws come from a generator seeded from the runner's seed and
the period number, so decisions are reproducible.
"""

import dataclasses
import random

import numpy as np

from nova_numa_policy.conf import loops as loops_conf
from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality
from nova_numa_policy.contracts import scope
from nova_numa_policy.contracts import topology as topology_mod
from nova_numa_policy.loops import base
from nova_numa_policy.loops import hysteresis
from nova_numa_policy.loops import vnuioa


# Its options in [numa_policy_loops], defined with every loop's in
# nova_numa_policy.conf.loops.
OPTS = loops_conf.BRM_OPTS

Config = base.config_class(
    __name__, (*OPTS, *vnuioa.OPTS),
    {'ewma_old_weight': 'brm_ewma_old_weight',
     'prob_step': 'brm_probability_step',
     'max_pin_count': 'brm_max_pin_count',
     # Which guests are network-bound: vNUIOA's rule and threshold.
     'io_threshold_rps': 'vnuioa_io_threshold'},
    # Below this penalty (stall time per unit of work) a vCPU is not
    # NUMA-sensitive and is left to the host's load balancer.
    min_penalty=0.05, reset_periods=60)


@dataclasses.dataclass(frozen=True)
class VcpuState:
    unc: tuple  # smoothed penalty per node, None when unknown
    prob: int = 0
    bias: int = 0
    seen: int = 0  # periods since the last reset


def _proxy(dist, mem, nodes, vcpu):
    """Distance-weighted latency of each node to memory and siblings.

    ``mem`` is the guest's memory fraction per node; the result is in units
    of the local distance, minus one: 0 when everything is local.
    """
    peers = np.bincount([n for i, n in enumerate(nodes) if i != vcpu],
                        minlength=len(mem)).astype(float)
    peers = peers / peers.sum() if peers.sum() else mem
    return 0.5 * (dist @ mem) + 0.5 * (dist @ peers) - 1.0


def _proxies(dist, mem, nodes):
    """``_proxy`` of every vCPU at once, one row per vCPU.

    The memory term is the same for all vCPUs and the siblings of vCPU v
    are all vCPUs but v, so both are one matrix product per guest.
    """
    nodes = np.asarray(nodes, int)
    to_mem = dist @ mem
    if len(nodes) < 2:
        return np.tile(to_mem - 1.0, (len(nodes), 1))
    counts = np.bincount(nodes, minlength=len(mem)).astype(float)
    to_peers = (dist @ counts - dist[:, nodes].T) / (len(nodes) - 1)
    return 0.5 * to_mem + 0.5 * to_peers - 1.0


def _measured(inst, vcpu):
    """The vCPU's measured penalty, or None."""
    measured = inst.vcpu_penalty
    if (measured is not None and vcpu < len(measured)
            and measured[vcpu] is not None):
        return float(measured[vcpu])
    return None


def _sample(inst, vcpu, proxy, node, kernel_balances=False):
    """This period's penalty sample of the vCPU, or None to wait.

    The distance proxy stands in where nothing was measured for the
    vCPU: on a host that measures nothing, and on memory bandwidth for a
    guest whose vCPUs moved no bytes to memory (threads sharing cache
    lines across sockets stall on each other without reaching memory;
    the proxy's distance to the guest's other vCPUs is what stands for
    that). Where the kernel balances, an unsampled vCPU's memory is on
    its way to it: moving the vCPU toward that memory would chase the
    kernel.
    """
    measured = _measured(inst, vcpu)
    if measured is not None:
        return measured
    return None if kernel_balances else float(proxy[node])


def update(prev, node, sample, proxy, config):
    """Algorithm 1, UPDATE: new VcpuState after one sample on ``node``."""
    n = len(proxy)
    if prev is None or prev.seen >= config.reset_periods:
        prev = VcpuState(unc=(None,) * n, bias=node)
    unc = list(prev.unc)
    old = unc[node]
    unc[node] = sample if old is None else (
        config.ewma_old_weight * old + (1 - config.ewma_old_weight) * sample)
    scale = unc[node] / proxy[node] if proxy[node] > 0 else 0.0
    est = [u if u is not None else (proxy[i] * scale if scale else
                                    unc[node])
           for i, u in enumerate(unc)]
    prob, bias = prev.prob, prev.bias
    for i in range(n):
        if i == node:
            continue
        if est[node] > est[i]:
            prob = min(100, prob + config.prob_step)
            if est[bias] > est[i]:
                bias = i
        else:
            prob = max(0, prob - config.prob_step)
    return VcpuState(unc=tuple(unc), prob=prob, bias=bias,
                     seen=prev.seen + 1)


def blind_to_its_nic(inst, config):
    """A network-bound guest whose penalty is not counted stall time.

    Hinting faults, memory bandwidth and the distance proxy all measure
    how far its memory is, never how far its NIC is: any of them would
    draw its vCPUs toward the one and away from the other.
    """
    counted = (inst.vcpu_penalty is not None
               and locality.penalty_is_stall(inst.access_signal))
    return (not counted
            and vnuioa.io_intensive(inst, config.io_threshold_rps))


def _pinned_by_other(topology, inst, vcpu, pin, everywhere=None):
    """True when nova or another loop narrowed the vCPU's affinity.

    BRM does not fight over such a vCPU. ``everywhere``: every CPU nova
    allows the guest, when the caller has it already.
    """
    if vcpu >= len(inst.vcpu_affinity):
        return False
    affinity = frozenset(inst.vcpu_affinity[vcpu])
    if everywhere is None:
        everywhere = scope.allowed(_all_cpus(topology), inst.allowed_cpus)
    if not affinity or affinity >= everywhere:
        return False  # free to run on every CPU nova allows it
    return pin is None or affinity != base.node_cpus(topology, inst,
                                                     pin.value)


@topology_mod.per_topology
def _all_cpus(topology):
    return frozenset(c for n in topology.nodes for c in n.cpus)


def _free_cpu(topology, counts, node):
    return counts[node] < len(topology.node(node).cpus)


class Brm(base.Strategy):
    name = 'brm'
    inputs = ('vcpu_penalty', 'vcpu_cpus', 'memory_mb_per_node')
    required_capabilities = frozenset({backend.CAP_VCPU_PINNING})
    Config = Config
    OPTS = OPTS

    def initial_state(self, seed=0):
        return {'seed': seed, 'tick': 0, 'vcpus': {}, 'pins': {}}

    def forget(self, state, uuids):
        # A rebooted guest's vCPUs are new threads on new CPUs: their
        # penalties and pin counts belong to the placement before.
        return {**state,
                'vcpus': {k: v for k, v in state['vcpus'].items()
                          if k[0] not in uuids},
                'pins': {k: v for k, v in state['pins'].items()
                         if k[0] not in uuids}}

    def decide(self, snapshot, state, config):
        topo = snapshot.topology
        rng = random.Random(f"{state['seed']}:{state['tick']}")
        vcpus = dict(state['vcpus'])
        pins = dict(state['pins'])
        counts = np.zeros(len(topo.nodes))
        for inst in snapshot.instances:
            for node in base.vcpu_nodes(topo, inst):
                counts[node] += 1
        dist = base.distance_matrix(topo) / 10.0
        kernel_balances = locality.kernel_balances(snapshot.locality_signal)
        actions = []
        for inst in filter(base.vcpus_movable, base.managed(snapshot)):
            if blind_to_its_nic(inst, config):
                continue
            nodes = base.vcpu_nodes(topo, inst)
            mem = base.memory_vector(topo, inst)
            mem = mem / mem.sum() if mem.sum() else mem
            # Rows as lists of floats: read an element at a time, the
            # same numbers as numpy's scalars, without their cost.
            proxies = _proxies(dist, mem, nodes).tolist()
            everywhere = scope.allowed(_all_cpus(topo), inst.allowed_cpus)
            for v, node in enumerate(nodes):
                if _pinned_by_other(topo, inst, v, pins.get((inst.uuid, v)),
                                    everywhere):
                    continue
                proxy = proxies[v]
                sample = _sample(inst, v, proxy, node, kernel_balances)
                key = (inst.uuid, v)
                if sample is None:
                    continue  # wait for the kernel's samples
                if sample < config.min_penalty:
                    vcpus.pop(key, None)  # not NUMA-sensitive
                    continue
                st = update(vcpus.get(key), node, sample, proxy, config)
                draw = rng.randrange(100)
                if draw >= st.prob or st.bias == node:
                    vcpus[key] = st
                    continue
                pin = hysteresis.update(pins.get(key), st.bias,
                                        config.max_pin_count)
                pins[key] = pin
                vcpus[key] = dataclasses.replace(st, prob=0)
                cpus = base.node_cpus(topo, inst, st.bias)
                if (pin.value != st.bias or not cpus
                        or not _free_cpu(topo, counts, st.bias)):
                    continue
                counts[node] -= 1
                counts[st.bias] += 1
                actions.append(backend.PinVcpu(
                    instance_uuid=inst.uuid, vcpu=v,
                    cpus=cpus,
                    reason=f'brm: penalty {st.unc[node]:.3f} on node '
                           f'{node} above node {st.bias}, probability '
                           f'{st.prob} drew {draw}'))
        return actions, {'seed': state['seed'], 'tick': state['tick'] + 1,
                         'vcpus': vcpus, 'pins': pins}
