"""The performance model: a placement in, latencies and throughput out.

Every vCPU spends its time computing, waiting on memory, waiting on NIC
DMA into its buffers, and waiting on cache lines shared with sibling vCPUs:

    time = compute + mem_bound * miss * Lm / L0
                   + io_bound * Ln / L0 + sharing_bound * Lc / L3

``Lm`` is its mean memory latency (hop latency of seed 000 Table 3 plus the
queueing delay of the memory controller, plus the interconnect port delay
for remote accesses), ``Ln`` the same from the NIC's node to the buffers
(plus, where the host says where the packets are handled, the crossings
of interrupts and vhost workers away from the buffers: zero when local),
``Lc`` the mean distance to its siblings' caches (the L3 latency when they
share its node). ``miss`` falls as the node's LLC covers more of the
working sets there (seed 001 Fig. 4(a) and (b)). Slower vCPUs issue fewer
accesses, so loads and delays are solved as a damped fixed point.
Throughput is normalized to the same vCPU alone on an idle host with
everything local: 1.0 is perfect placement.

A host with a lower memory tier (``SimHost.lower_tier``) has one memory
node more than CPU nodes: memory placements, controller queues and
accesses have a column for it; CPUs, interconnect ports and caches do
not. Its latency is the hop latency to its socket plus the CXL figure of
``constants.py``, its queue that of a controller of its own bandwidth.
"""

import collections
import dataclasses

import numpy as np

from numa_policy_lab.sim import constants as c
from numa_policy_lab.sim import workload as wl

L3_LATENCY = 48  # seed 000 Table 3, L3 hit, cycles


@dataclasses.dataclass
class Result:
    vm_throughput: np.ndarray  # per guest, normalized
    vcpu_throughput: np.ndarray  # per vCPU, all guests in order
    vcpu_penalty: np.ndarray  # stall time per unit of work, per vCPU
    vcpu_mem_latency: np.ndarray  # cycles per memory access, per vCPU
    # Accesses per cycle to each memory node (the CPU nodes, then a
    # lower tier's), per guest and per vCPU.
    vm_accesses: np.ndarray  # guests x memory nodes
    vcpu_accesses: np.ndarray  # vCPUs x memory nodes
    vm_io_rate: np.ndarray  # per guest, requests per second
    mc_util: np.ndarray  # per memory node
    port_util: np.ndarray  # per CPU node
    cpu_load: np.ndarray  # per node, busy fraction of its CPUs
    # Per guest, the share of its vCPUs' time spent waiting for a CPU
    # they share with other vCPUs (what a host reads as run-queue delay).
    vm_cpu_wait: np.ndarray


def miss_ratio(ws, llc):
    """Fraction of accesses missing an LLC of ``llc`` MB shared by ``ws``.

    Never falls as ``ws`` grows: a vCPU's node holds at least its own
    working set, so it misses at least as often as alone (cluster/bound.py
    rests on that).
    """
    cover = np.minimum(1.0, llc / np.maximum(ws, 1e-9))
    return 1.0 - cover ** c.LLC_MISS_EXPONENT


def _queue(util, exponent=1):
    rho = np.minimum(util, c.RHO_MAX)
    return rho ** exponent / (1.0 - rho)


def node_shares(host, cpus):
    """The share of ``cpus`` on each node: where threads on them run."""
    nodes = np.asarray(sorted(cpus), int) // host.cpus_per_node
    return np.bincount(nodes, minlength=host.n_nodes) / len(nodes)


def handling_cycles(host, buffers, irq_shares=None, thread_shares=None):
    """Extra packet-path cycles of I/O handled away from the buffers.

    ``buffers``: the share of the guest's network buffers on each node;
    ``irq_shares`` / ``thread_shares``: the share of its packets whose
    interrupt / vhost copy is handled on each node, None where the host
    does not say (handled by the buffers: nothing to add). Uncontended
    latencies, so that local handling adds exactly zero.
    """
    lat = host.latency_matrix()
    # A handler on node k touches each packet where it lies.
    excess = lat @ buffers - lat[0, 0] * buffers.sum()
    cycles = 0.0
    if irq_shares is not None:
        cycles += c.IRQ_CROSSING * float(np.asarray(irq_shares) @ excess)
    if thread_shares is not None:
        cycles += c.IO_THREAD_CROSSING * float(
            np.asarray(thread_shares) @ excess)
    return cycles


class _Arrays:
    """Per-vCPU inputs of every guest, flattened into numpy arrays."""

    def __init__(self, host, vms, irq_nodes=None):
        n, m = host.n_nodes, host.memory_nodes
        rows = []
        handling = []
        for index, vm in enumerate(vms):
            rows.extend(self._vm_rows(host, index, vm))
            handling += [self._handling(host, vm, irq_nodes or {})] * (
                vm.n_vcpus)
        # Per vCPU, extra packet-path cycles of remote I/O handling.
        self.handling = np.asarray(handling, float)
        self.vm_of = np.array([r[0] for r in rows], int)
        self.cpu = np.array([r[1] for r in rows], int)
        self.node = self.cpu // host.cpus_per_node
        self.mem = np.array([r[2] for r in rows]).reshape(-1, m)
        self.dma = np.array([r[3] for r in rows]).reshape(-1, m)
        self.peers = np.array([r[4] for r in rows]).reshape(-1, n)
        self.nic = np.array([r[5] for r in rows], int)
        prof = np.array([r[6] for r in rows], float).reshape(-1, 6)
        (self.mem_bound, self.io_bound, self.sharing_bound, self.ws,
         self.mlp, self.io_mlp) = prof.T
        self.io_rate = np.array([vm.profile.io_rate for vm in vms], float)

    @staticmethod
    def _handling(host, vm, irq_nodes):
        """The guest's :func:`handling_cycles`; 0 where none is known."""
        irqs = irq_nodes.get(vm.nic)
        threads = vm.io_thread_cpus
        if irqs is None and not threads:
            return 0.0
        sizes = vm.seg_mb[wl.SEG_IO]
        if not sizes.sum():
            return 0.0
        return handling_cycles(
            host, sizes / sizes.sum(), irqs,
            node_shares(host, threads) if threads else None)

    @staticmethod
    def _vm_rows(host, index, vm):
        n = host.n_nodes
        p = vm.profile
        sizes = vm.seg_mb.sum(axis=1, keepdims=True)
        dist = np.divide(vm.seg_mb, sizes, out=np.zeros_like(vm.seg_mb),
                         where=sizes > 0)
        nodes = vm.vcpu_cpus // host.cpus_per_node
        counts = np.bincount(nodes, minlength=n).astype(float)
        nic = host.nic(vm.nic).node if vm.nic else 0
        private = 1.0 - p.shared_fraction - p.io_fraction
        for i, cpu in enumerate(vm.vcpu_cpus):
            mem = (p.shared_fraction * dist[wl.SEG_SHARED]
                   + p.io_fraction * dist[wl.SEG_IO]
                   + private * dist[wl.FIRST_PRIVATE + i])
            peers = counts.copy()
            peers[nodes[i]] -= 1
            peers = peers / peers.sum() if peers.sum() else peers
            yield (index, int(cpu), mem, dist[wl.SEG_IO], peers, nic,
                   (p.mem_bound, p.io_bound, p.sharing_bound,
                    p.working_set_mb, p.mlp, p.io_mlp))


def _cpu_share(host, cpu):
    per_cpu = np.bincount(cpu, minlength=host.n_cpus).astype(float)
    return 1.0 / per_cpu[cpu]


class _PortTraffic:
    """Traffic each node's port carries for accesses src -> dist.

    Built once per solve for one ``src_node`` and ``dist``, called with
    each iteration's rates: what does not depend on the rate is not
    recomputed in every iteration of the fixed point.
    """

    def __init__(self, src_node, dist, n):
        src = np.eye(n)[src_node]
        self.src_t = src.T
        self.local = 1.0 - (dist * src).sum(axis=1)
        self.away_t = (dist * (1.0 - src)).T

    def __call__(self, rate):
        return self.src_t @ (rate * self.local) + self.away_t @ rate


_sum = np.add.reduce


class _Solver:
    def __init__(self, host, a):
        self.host, self.a, self.n = host, a, host.n_nodes
        self.m = host.memory_nodes
        self.lat = host.latency_matrix()
        # Without a lower tier every memory node is its own port's: the
        # arrays are used as they are, the same operations as before.
        self.tiered = host.lower_tier is not None
        self.ports = host.memory_ports()
        self.mem_gbps = host.memory_gbps()
        self.l0 = self.lat[0, 0]
        self.remote = (host.hop_matrix() > 0).astype(float)
        self.share = _cpu_share(host, a.cpu)
        w_node = np.bincount(a.node, weights=a.ws, minlength=self.n)
        self.miss = miss_ratio(w_node[a.node], host.llc_mb)
        self.miss_ideal = miss_ratio(a.ws, host.llc_mb)
        self.phi = a.mem_bound * self.miss
        self.compute = 1.0 - a.mem_bound - a.io_bound - a.sharing_bound
        self.gbps = c.LINE_BYTES * host.freq_ghz
        # Constant over the fixed point's iterations, hoisted out of it
        # with the same operations in the same order: same bits.
        self.io_path = c.IO_PATH_SHARING * self.l0
        self.diagonal = np.diag_indices(self.n)
        self.rate_mem = self.share * a.mlp * self.phi / self.l0
        self.rate_dma = self.share * a.io_mlp * a.io_bound / self.l0
        self.rate_coh = self.share * a.sharing_bound / L3_LATENCY
        self.mem_t, self.dma_t = a.mem.T, a.dma.T
        self.port_mem = _PortTraffic(a.node, self._by_port(a.mem), self.n)
        self.port_dma = _PortTraffic(a.nic, self._by_port(a.dma), self.n)
        self.port_coh = _PortTraffic(a.node, a.peers, self.n)
        # A term zero for every vCPU adds exactly nothing to the sums it
        # enters (+0.0 to finite, non-negative numbers): guests without
        # NIC buffers, network-bound time or shared cache lines skip it.
        # Without buffers the packet path's latency is io_path itself:
        # ln = lb = 0, so ln + io_path * (0 - 1) * (0 - 1).
        self.dma_used = bool(a.dma.any())
        self.io_waits = bool(a.io_bound.any())
        self.shares_lines = bool(a.sharing_bound.any())
        self.dma_flows = bool(self.rate_dma.any())
        self.lines_flow = bool(self.rate_coh.any())
        self.no_buffers = np.full(len(a.node), self.io_path)
        # No remote handling anywhere (the host does not say where, or it
        # is local): the packet path is left exactly as it was.
        self.handled = bool(a.handling.any())

    def _by_port(self, dist):
        """``dist`` over memory nodes folded onto the ports they cross."""
        if not self.tiered:
            return dist
        folded = np.zeros((len(dist), self.n))
        np.add.at(folded.T, self.ports, dist.T)
        return folded

    def latencies(self, q_mc, q_port):
        a, lat, l0 = self.a, self.lat, self.l0
        link = c.LINK_QUEUE_CYCLES * (np.maximum.outer(q_port, q_port)
                                      * self.remote)
        to_memory = link[:, self.ports] if self.tiered else link
        mem_lat = lat + c.MC_QUEUE_CYCLES * q_mc[None, :] + to_memory
        at_vcpu = mem_lat[a.node]
        lm = _sum(a.mem * at_vcpu, axis=1)
        if self.dma_used:
            ln = _sum(a.dma * mem_lat[a.nic], axis=1)
            # A packet crossing the interconnect twice (NIC to buffer,
            # buffer to vCPU) pays more than the two crossings apart
            # (seed 002 Fig. 5).
            lb = _sum(a.dma * at_vcpu, axis=1)
            both = (ln / l0 - 1.0) * (lb / l0 - 1.0)
            ln = ln + self.io_path * both
        else:
            ln = self.no_buffers
        if self.handled:
            ln = ln + self.a.handling
        lc = None
        if self.shares_lines:
            cache_lat = lat[:, :self.n] + link
            cache_lat[self.diagonal] = L3_LATENCY
            lc = _sum(a.peers * cache_lat[a.node], axis=1)
        return lm, ln, lc

    def stalls(self, lm, ln, lc):
        a = self.a
        stall = self.phi * lm / self.l0
        if self.io_waits:
            stall = stall + a.io_bound * ln / self.l0
        if self.shares_lines:
            stall = stall + a.sharing_bound * lc / L3_LATENCY
        return stall

    def loads(self, time):
        r_mem = self.rate_mem / time
        mc = self.mem_t @ r_mem
        port = self.port_mem(r_mem)
        if self.dma_flows:
            r_dma = self.rate_dma / time
            mc = mc + self.dma_t @ r_dma
            port = port + self.port_dma(r_dma)
        if self.lines_flow:
            port = port + self.port_coh(self.rate_coh / time)
        mc = mc * self.gbps
        port = port * self.gbps
        return mc / self.mem_gbps, port / self.host.port_gbps, r_mem

    def solve(self):
        q_mc = np.zeros(self.m)
        q_port = np.zeros(self.n)
        d = c.FIXED_POINT_DAMPING
        for _ in range(c.FIXED_POINT_ITERATIONS):
            lm, ln, lc = self.latencies(q_mc, q_port)
            time = self.compute + self.stalls(lm, ln, lc)
            mc_u, port_u, r_mem = self.loads(time)
            q_mc = d * q_mc + (1 - d) * _queue(mc_u, c.MC_QUEUE_EXPONENT)
            q_port = d * q_port + (1 - d) * _queue(
                port_u, c.LINK_QUEUE_EXPONENT)
        lm, ln, lc = self.latencies(q_mc, q_port)
        stall = self.stalls(lm, ln, lc)
        time = self.compute + stall
        mc_u, port_u, r_mem = self.loads(time)
        return lm, stall, time, mc_u, port_u, r_mem


# Solved placements, least recently used first, and the bytes they hold.
_SOLVED = collections.OrderedDict()
_SOLVED_MAX_BYTES = 64 * 1024 * 1024
_solved_bytes = 0


def _placement_key(host, vms, irq_nodes=None):
    """Everything :func:`evaluate` reads of its arguments, exactly.

    Arrays enter as their bytes, dtype and shape: equal keys are the same
    inputs bit for bit.
    """
    irqs = tuple(sorted((irq_nodes or {}).items()))
    return (host, irqs) + tuple(
        (vm.profile, vm.nic, vm.io_thread_cpus,
         vm.seg_mb.shape, vm.seg_mb.dtype.str,
         vm.seg_mb.tobytes(), vm.vcpu_cpus.dtype.str,
         vm.vcpu_cpus.tobytes()) for vm in vms)


def evaluate(host, vms, irq_nodes=None):
    """Solve the model for the guests ``vms`` on ``host``.

    A pure function of the host, each guest's profile, NIC, vCPU and
    memory placement and vhost workers' CPUs, and ``irq_nodes`` ({NIC
    name: the share of its interrupt vectors on each node}, for the NICs
    whose vectors the host models); a placement solved before in this
    process (by
    another run of the same scenario, or an earlier period of this one)
    is answered from memory, the same numbers. The arrays of the
    :class:`Result` returned are read-only: it may be shared.
    """
    global _solved_bytes
    if not vms:
        return _evaluate(host, vms)
    key = _placement_key(host, vms, irq_nodes)
    result = _SOLVED.get(key)
    if result is not None:
        _SOLVED.move_to_end(key)
        return result
    result = _evaluate(host, vms, irq_nodes)
    for field in dataclasses.fields(result):
        getattr(result, field.name).flags.writeable = False
    _SOLVED[key] = result
    _solved_bytes += _size(key, result)
    while _solved_bytes > _SOLVED_MAX_BYTES and len(_SOLVED) > 1:
        _solved_bytes -= _size(*_SOLVED.popitem(last=False))
    return result


def _size(key, result):
    """Bytes a solved placement holds, roughly: its arrays and key."""
    return (sum(len(part[5]) + len(part[7]) for part in key[2:])
            + sum(getattr(result, f.name).nbytes
                  for f in dataclasses.fields(result)))


def _evaluate(host, vms, irq_nodes=None):
    n, m = host.n_nodes, host.memory_nodes
    if not vms:
        zeros = np.zeros(n)
        return Result(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0),
                      np.zeros((0, m)), np.zeros((0, m)), np.zeros(0),
                      np.zeros(m), zeros, zeros, np.zeros(0))
    a = _Arrays(host, vms, irq_nodes)
    s = _Solver(host, a)
    lm, stall, time, mc_u, port_u, r_mem = s.solve()
    ideal = (s.compute + a.mem_bound * s.miss_ideal + a.io_bound
             + a.sharing_bound)
    vcpu_tp = s.share * ideal / time
    n_vm = len(vms)
    counts = np.bincount(a.vm_of, minlength=n_vm)
    vm_tp = np.bincount(a.vm_of, weights=vcpu_tp, minlength=n_vm) / counts
    vcpu_accesses = a.mem * r_mem[:, None]
    accesses = np.zeros((n_vm, m))
    np.add.at(accesses, a.vm_of, vcpu_accesses)
    # Every simulated vCPU is busy; a node is loaded by the vCPUs on it.
    on_node = np.bincount(a.node, minlength=n)
    cpu_load = np.minimum(1.0, on_node / host.cpus_per_node)
    cpu_wait = np.bincount(a.vm_of, weights=1.0 - s.share,
                           minlength=n_vm) / counts
    return Result(vm_throughput=vm_tp, vcpu_throughput=vcpu_tp,
                  vcpu_penalty=stall, vcpu_mem_latency=lm,
                  vm_accesses=accesses, vcpu_accesses=vcpu_accesses,
                  vm_io_rate=a.io_rate * vm_tp,
                  mc_util=mc_u, port_util=port_u, cpu_load=cpu_load,
                  vm_cpu_wait=cpu_wait)
