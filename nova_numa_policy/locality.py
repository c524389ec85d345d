"""What a host can measure of memory locality, and what follows: pure.

A backend names the signal it has (:data:`SIGNALS`); each guest it
observes carries accesses per node from that signal, or none:

* ``access-counters``: counts of memory accesses per node over the
  period, as hardware counters (or the simulator) give them; rates are
  meaningful.
* ``hinting-faults``: the kernel's NUMA balancing samples (see
  :mod:`agent.numafaults`); their distribution is meaningful, their
  magnitude only says how much was sampled.

Without a signal the loops fall back to memory per node, and the report
says no signal was measured.
"""

from nova_numa_policy import enforcement

SIGNAL_COUNTERS = 'access-counters'
SIGNAL_HINTING_FAULTS = 'hinting-faults'
SIGNALS = (SIGNAL_COUNTERS, SIGNAL_HINTING_FAULTS)
# Signals whose numbers are samples, not totals: thresholds on an access
# rate do not apply to them, a minimum number of samples does.
SAMPLED = frozenset({SIGNAL_HINTING_FAULTS})

# Signals that flow only while the kernel balances memory itself: it then
# moves pages under the default policy toward the threads that touch
# them, so spreading them (interleaving) would be undone (agent.rst,
# "Coexistence with the kernel's balancing").
KERNEL_BALANCED = frozenset({SIGNAL_HINTING_FAULTS})

# What an operator enables for a host to measure locality.
HOW_TO_MEASURE = ('turn on the kernel\'s NUMA balancing '
                  '(sysctl kernel.numa_balancing=1) and the agent\'s page '
                  'migration ([numa_policy_agent] page_migration with the '
                  'privileged helper)')


def is_sampled(signal):
    return signal in SAMPLED


def kernel_balances(signal):
    """Whether, where ``signal`` flows, the kernel also moves pages."""
    return signal in KERNEL_BALANCED


def kernel_balances_memory(memory_mode):
    """Whether the kernel's NUMA balancing samples and moves this memory.

    ``memory_mode``: the running guest's ``<numatune>`` mode, None for
    none. Only the default policy opts in: no mode, or restrictive
    (cpuset.mems alone); strict, interleave and preferred set a memory
    policy the kernel's balancing leaves alone.
    """
    return memory_mode in (None, enforcement.MODE_RESTRICTIVE)


def local_fraction(vcpu_nodes, accesses):
    """Share of ``accesses`` ({node: n}) on nodes the vCPUs run on.

    Each node's accesses are counted local in the proportion of vCPUs on
    it; None when nothing was measured.
    """
    total = sum(accesses.values())
    if not total or not vcpu_nodes:
        return None
    share = {}
    for node in vcpu_nodes:
        share[node] = share.get(node, 0) + 1 / len(vcpu_nodes)
    return sum(count * share.get(node, 0.0)
               for node, count in accesses.items()) / total


def remote_penalty(topology, node, accesses):
    """How far, on average, a thread on ``node`` reaches for its memory.

    The SLIT distance to each access's node over the local distance, less
    one: 0.0 when every sampled access is local, 1.1 when all cross a
    link of distance 21. The same scale as BRM's distance proxy, measured
    instead of estimated; None when nothing was sampled.
    """
    known = {n.id for n in topology.nodes}
    accesses = {k: v for k, v in accesses.items() if k in known}
    total = sum(accesses.values())
    if not total or node is None:
        return None
    local = topology.distance(node, node) or 10
    reach = sum(count * topology.distance(node, other)
                for other, count in accesses.items())
    return reach / (local * total) - 1.0


def vcpu_penalties(topology, vcpu_cpus, faults_by_vcpu):
    """Each vCPU's :func:`remote_penalty` where it was sampled.

    ``faults_by_vcpu``: {vCPU: {node: samples}}; ``vcpu_cpus``: the CPU
    each vCPU last ran on. None when no vCPU was sampled.
    """
    penalties = tuple(
        remote_penalty(topology, topology.node_of_cpu(cpu),
                       faults_by_vcpu.get(vcpu, {}))
        for vcpu, cpu in enumerate(vcpu_cpus))
    return penalties if any(p is not None for p in penalties) else None
