"""Carrefour page rebalancer (seed 000 §3.4; Dashti et al., ASPLOS 2013).

Per guest, from its accesses per node over the last period:

1. too few accesses (below ``min_accesses_per_us``): not memory-bound,
   nothing to gain, do nothing;
2. memory controllers imbalanced (relative std deviation of accesses over
   the guest's nodes above ``mc_imbalance``): *interleave heuristic*, move
   hot pages from the busiest node to the guest's under-loaded nodes;
3. poor locality (local access ratio below ``min_local_ratio``, i.e. the
   interconnect carries the traffic): *migration heuristic*, move pages
   from nodes no vCPU of the guest runs on to the node most of its vCPUs
   run on;
4. otherwise locality is good: do nothing.

Defaults are the published Carrefour thresholds: 50 memory accesses per
microsecond, 35 % controller imbalance, 80 % local accesses.

On a sampled signal (the kernel's hinting faults) the shares are read
from the samples and step 1 asks for ``carrefour_min_samples`` samples
instead of a rate. Those samples flow only while the kernel balances
memory itself, pulling each page toward the thread that touches it. Step
3 is the kernel's own direction, in batches. Step 2 would be undone,
pages the guest's threads share included (the lab host shows the kernel
gathering them on one node), so it is held back there.
"""

import numpy as np

from nova_numa_policy.conf import loops as loops_conf
from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality
from nova_numa_policy.loops import base

PAGES_PER_MB = 256
CARREFOUR_POLICIES = ('first-touch+carrefour', 'interleave+carrefour')


# Its options in [numa_policy_loops], defined with every loop's in
# nova_numa_policy.conf.loops.
OPTS = loops_conf.CARREFOUR_OPTS

Config = base.config_class(
    __name__, OPTS,
    {'min_accesses_per_us': 'carrefour_min_accesses_per_us',
     'min_samples': 'carrefour_min_samples',
     'mc_imbalance': 'carrefour_mc_imbalance',
     'min_local_ratio': 'carrefour_min_local_ratio'},
    # Pages one guest may move per period (256 MB of 4 KiB pages).
    batch_pages=65536, period_s=5.0)


def local_ratio(nodes_of_vcpus, acc):
    """Share of accesses served by a node the guest's vCPUs run on.

    Each node's accesses are assumed to come from the vCPUs in proportion.
    """
    share = np.bincount(nodes_of_vcpus, minlength=len(acc)) / len(
        nodes_of_vcpus)
    total = acc.sum()
    return float((acc * share).sum() / total) if total else 1.0


def _interleave(inst, acc, mem, nodes, vnodes, config, imb):
    src = max(nodes, key=lambda n: acc[n])
    mean = acc[nodes].mean()
    under = [n for n in sorted(set(vnodes)) if acc[n] < mean and n != src]
    if not under or mem[src] <= 0:
        return []
    excess = (acc[src] - mean) / acc[src]
    pages = int(min(config.batch_pages, excess * mem[src] * PAGES_PER_MB))
    deficits = np.array([mean - acc[n] for n in under])
    actions = []
    for node, weight in zip(under, deficits / deficits.sum()):
        count = int(pages * weight)
        if count > 0:
            actions.append(backend.MovePages(
                instance_uuid=inst.uuid, source_node=int(src),
                target_node=int(node), pages=count,
                reason=f'carrefour interleave: access imbalance '
                       f'{base.pct(imb)} > {base.pct(config.mc_imbalance)}, '
                       f'node {src} overloaded'))
    return actions


def _migrate(inst, acc, mem, vnodes, config, ratio):
    home = int(np.bincount(vnodes).argmax())
    vnodes = set(vnodes.tolist())
    actions = []
    budget = config.batch_pages
    for node in np.argsort(-acc):
        node = int(node)
        if node in vnodes or acc[node] <= 0 or mem[node] <= 0:
            continue
        count = int(min(budget, mem[node] * PAGES_PER_MB))
        if count <= 0:
            break
        budget -= count
        actions.append(backend.MovePages(
            instance_uuid=inst.uuid, source_node=node, target_node=home,
            pages=count,
            reason=f'carrefour migrate: local accesses {base.pct(ratio)} < '
                   f'{base.pct(config.min_local_ratio)}, node {node} is '
                   f'used only remotely'))
    return actions


def memory_bound(acc, signal, config):
    """Step 1: enough accesses (or samples of them) to act on."""
    if locality.is_sampled(signal):
        return acc.sum() >= config.min_samples
    return acc.sum() / (config.period_s * 1e6) >= config.min_accesses_per_us


def decide_instance(topology, inst, config):
    """The Carrefour actions for one guest; [] when it needs none."""
    acc = base.access_vector(topology, inst)
    if acc is None or not inst.vcpu_cpus:
        return []
    if not memory_bound(acc, inst.access_signal, config):
        return []
    mem = base.memory_vector(topology, inst)
    vnodes = np.array(base.vcpu_nodes(topology, inst), int)
    nodes = sorted(set(vnodes.tolist()) | set(np.flatnonzero(mem > 0)))
    imb = base.imbalance(acc[nodes])
    if (imb > config.mc_imbalance
            and not locality.kernel_balances(inst.access_signal)):
        return _interleave(inst, acc, mem, nodes, vnodes.tolist(), config,
                           imb)
    ratio = local_ratio(vnodes, acc)
    if ratio < config.min_local_ratio:
        return _migrate(inst, acc, mem, vnodes, config, ratio)
    return []


class Carrefour(base.Strategy):
    name = 'carrefour'
    inputs = ('accesses_per_node', 'memory_mb_per_node', 'vcpu_cpus')
    required_capabilities = frozenset({backend.CAP_PAGE_MIGRATION,
                                       backend.CAP_ACCESS_COUNTERS})
    Config = Config
    OPTS = OPTS

    def decide(self, snapshot, state, config):
        actions = []
        for inst in base.managed(snapshot):
            if inst.requested_policy in CARREFOUR_POLICIES:
                actions.extend(decide_instance(snapshot.topology, inst,
                                               config))
        return actions, state
