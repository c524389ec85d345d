"""What a host can measure of memory locality, and what follows: pure.

A backend names the signal it has (:data:`SIGNALS`); each guest it
observes carries accesses per node from that signal, or none:

* ``access-counters``: counts of memory accesses per node over the
  period, as hardware counters (or the simulator) give them; rates are
  meaningful.
* ``hinting-faults``: the kernel's NUMA balancing samples (see
  :mod:`agent.sensors.numafaults`); their distribution is meaningful, their
  magnitude only says how much was sampled.
* ``memory-bandwidth``: resctrl's memory bandwidth monitoring (Intel
  MBM, AMD's equivalent; see :mod:`agent.sensors.resctrl`): the bytes a guest's
  vCPUs moved between each last-level cache domain and memory, in total
  and to the domain's own node. Rates are meaningful; which remote node
  the remote bytes went to is not measured, and is shared out as the
  guest's memory is (:func:`accesses_from_bandwidth`), exactly so on a
  host of two nodes.
* ``hardware-samples``: the CPU's samples of the ops a guest's vCPUs ran
  (AMD IBS op; see :mod:`agent.privsep.hwsampling`), those memory
  served counted per node that served them, times the sampling period: an
  estimate of accesses per node, so rates are meaningful.

Without a signal the loops fall back to memory per node, and the report
says no signal was measured.
"""

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import topology as topology_mod

SIGNAL_COUNTERS = 'access-counters'
SIGNAL_HINTING_FAULTS = 'hinting-faults'
SIGNAL_BANDWIDTH = 'memory-bandwidth'
SIGNAL_SAMPLES = 'hardware-samples'
SIGNALS = (SIGNAL_COUNTERS, SIGNAL_HINTING_FAULTS, SIGNAL_BANDWIDTH,
           SIGNAL_SAMPLES)
# Bytes of one memory access as bandwidth counts them: a cache line.
LINE_BYTES = 64
# How much a node's memory itself (not only what it holds beyond an even
# share) draws remote accesses (remote_weights).
EVEN_WEIGHT = 0.05
# Signals whose numbers are samples, not totals: thresholds on an access
# rate do not apply to them, a minimum number of samples does.
SAMPLED = frozenset({SIGNAL_HINTING_FAULTS})

# Signals that flow only while the kernel balances memory itself: it then
# moves pages under the default policy toward the threads that touch
# them, so spreading them (interleaving) would be undone (agent.rst,
# "Coexistence with the kernel's balancing").
KERNEL_BALANCED = frozenset({SIGNAL_HINTING_FAULTS})

# Signals whose per-vCPU penalty is measured stall time, the NIC's
# distance included. The others give how far a vCPU's memory is
# (:func:`remote_penalty`), blind to where its NIC sits.
STALL_PENALTY = frozenset({SIGNAL_COUNTERS})

# What an operator enables for a host to measure locality.
HOW_TO_MEASURE = ('turn on the kernel\'s NUMA balancing (sysctl '
                  'kernel.numa_balancing=1), or the agent\'s hardware '
                  'sampling on a CPU with AMD IBS ([numa_policy_agent] '
                  'hardware_sampling), or mount resctrl (/sys/fs/resctrl) '
                  'on a CPU with memory bandwidth monitoring '
                  '([numa_policy_agent] bandwidth_monitoring); and turn '
                  'on the agent\'s page migration ([numa_policy_agent] '
                  'page_migration with the privileged helper)')


def is_sampled(signal):
    return signal in SAMPLED


def penalty_is_stall(signal):
    """Whether vCPU penalties on ``signal`` include the NIC's distance."""
    return signal in STALL_PENALTY


def kernel_balances(signal):
    """Whether, where ``signal`` flows, the kernel also moves pages."""
    return signal in KERNEL_BALANCED


def first_touched(memory_mode):
    """Whether memory under this ``<numatune>`` mode lies where touched.

    ``memory_mode``: the running guest's mode, None for none. No mode, or
    restrictive (cpuset.mems alone), is the kernel's default policy: a
    page is placed on the node of the thread that first touched it.
    Strict, interleave and preferred set a memory policy that places it.
    """
    return memory_mode in (None, backend.MODE_RESTRICTIVE)


def kernel_balances_memory(memory_mode):
    """Whether the kernel's NUMA balancing samples and moves this memory.

    Only the default policy opts in (:func:`first_touched`): strict,
    interleave and preferred set a memory policy the kernel's balancing
    leaves alone.
    """
    return first_touched(memory_mode)


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
    return _remote_penalty(_lookup(topology), node, accesses)


def _remote_penalty(lookup, node, accesses):
    topology = lookup.topology
    if not lookup.known.issuperset(accesses):
        accesses = {k: v for k, v in accesses.items() if k in lookup.known}
    total = sum(accesses.values())
    if not total or node is None:
        return None
    row = lookup.rows.get(node)
    if row is None or node not in row or not row.keys() >= accesses.keys():
        local = topology.distance(node, node) or 10
        reach = sum(count * topology.distance(node, other)
                    for other, count in accesses.items())
    else:
        local = row[node] or 10
        reach = sum(count * row[other] for other, count in accesses.items())
    return reach / (local * total) - 1.0


def vcpu_penalties(topology, vcpu_cpus, faults_by_vcpu):
    """Each vCPU's :func:`remote_penalty` where it was sampled.

    ``faults_by_vcpu``: {vCPU: {node: samples}}; ``vcpu_cpus``: the CPU
    each vCPU last ran on. None when no vCPU was sampled.
    """
    lookup = _lookup(topology)
    # vCPUs of one node often share one dict of samples (bandwidth is
    # measured per node): each (node, dict) is worked out once. Each dict
    # is held with its answer, so that its id is not reused meanwhile.
    done = {}
    penalties = []
    for vcpu, cpu in enumerate(vcpu_cpus):
        node = lookup.node_of_cpu(cpu)
        faults = faults_by_vcpu.get(vcpu, {})
        key = (node, id(faults))
        hit = done.get(key)
        if hit is None:
            hit = done[key] = (faults, _remote_penalty(lookup, node, faults))
        penalties.append(hit[1])
    penalties = tuple(penalties)
    return penalties if any(p is not None for p in penalties) else None


class _Lookup:
    """A topology's node ids, distances and CPUs' nodes, as dicts.

    The same answers as ``HostTopology.distance`` and ``node_of_cpu``,
    which scan the nodes at every call; what the tables lack (a malformed
    topology, a CPU of no node) is asked of those.
    """

    def __init__(self, topology):
        self.topology = topology
        self.known = {n.id for n in topology.nodes}
        # {from id: {to id: distance}}; the first node of an id answers,
        # as HostTopology.node() finds it, and so does the first position.
        self.rows = {}
        self.cpus = {}
        for node in topology.nodes:
            for cpu in node.cpus:
                self.cpus.setdefault(cpu, node.id)
            if node.id in self.rows:
                continue
            row = self.rows[node.id] = {}
            for position, other in enumerate(topology.nodes):
                if position < len(node.distances):
                    row.setdefault(other.id, node.distances[position])

    def node_of_cpu(self, cpu):
        found = self.cpus.get(cpu)
        if found is None:
            return self.topology.node_of_cpu(cpu)
        return found


# A topology is frozen and every guest of a snapshot shares one: its
# tables are built once, not once per vCPU.
_lookup = topology_mod.per_topology(lambda topology: _Lookup(topology))


def accesses_from_bandwidth(domains, memory_mb_per_node, first_touch=True):
    """Accesses per node from memory bandwidth per cache domain.

    ``domains``: {node: (total bytes, local bytes)} over a period, for
    the last-level cache domain on each node that ran the guest's vCPUs;
    ``memory_mb_per_node``: the guest's resident memory; ``first_touch``:
    whether its memory lies where its threads first touched it (no memory
    policy of its own). Returns {cache node: {memory node: accesses}}, in
    cache lines.

    A domain's local bytes went to its own node. Where its remote bytes
    went is not measured (on a host of two nodes there is one place);
    they are shared out over the other nodes by :func:`remote_weights`.
    Bytes counted as local beyond the total are read as all local.
    """
    weights = remote_weights({**dict.fromkeys(domains, 0),
                              **memory_mb_per_node}, first_touch)
    by_domain = {}
    for node, (total, local) in domains.items():
        local = min(local, total)
        others = {n: w for n, w in weights.items() if n != node}
        remote = total - local if others else 0
        seen = {node: local / LINE_BYTES}
        weight = sum(others.values())
        for other, share in others.items():
            seen[other] = remote * share / weight / LINE_BYTES
        by_domain[node] = {n: int(round(v)) for n, v in seen.items()}
    return by_domain


def remote_weights(memory_mb_per_node, first_touch=True):
    """How much of a remote access each node draws: {node: weight}.

    Threads first-touch their own data where they run, so a node holding
    more than an even share of a guest's memory holds what threads
    allocated for others too: data they share, which is what remote
    accesses reach most. That excess draws them; a node's memory counts
    a little too, so that an evenly spread guest draws its remote
    accesses as its memory lies. Memory a policy placed (interleaved,
    bound, preferred) says nothing of who allocated it: there remote
    accesses go as the memory lies.
    """
    memory = {n: max(mb, 0) for n, mb in memory_mb_per_node.items()}
    holding = [n for n, mb in memory.items() if mb > 0]
    even = sum(memory.values()) / len(holding) if holding else 0.0
    weights = {}
    for node, mb in memory.items():
        excess = max(mb - even, 0.0) if first_touch else 0.0
        weights[node] = excess + EVEN_WEIGHT * mb + EVEN_WEIGHT
    return weights


def measured_from_bandwidth(topology, vcpu_cpus, domains, memory_mb_per_node,
                            memory_mode=None):
    """(accesses per node, vCPU penalties) from a period's bandwidth.

    ``domains``: {node: (total bytes, local bytes)}; ``vcpu_cpus``: the
    CPU each vCPU last ran on; ``memory_mode``: the guest's
    ``<numatune>`` mode. A vCPU's penalty is its node's. (None, None)
    when no domain moved a byte: not measured, rather than zero.
    """
    domains = {node: counts for node, counts in domains.items()
               if counts[0] > 0}
    if not domains:
        return None, None
    by_domain = accesses_from_bandwidth(domains, memory_mb_per_node,
                                        first_touched(memory_mode))
    node_of_cpu = _lookup(topology).node_of_cpu
    return total_accesses(by_domain), vcpu_penalties(
        topology, vcpu_cpus,
        {v: by_domain.get(node_of_cpu(cpu), {})
         for v, cpu in enumerate(vcpu_cpus)})


def total_accesses(by_domain):
    """{memory node: accesses} summed over the cache domains."""
    total = {}
    for seen in by_domain.values():
        for node, count in seen.items():
            total[node] = total.get(node, 0) + count
    return total
