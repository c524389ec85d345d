"""The performance model: a placement in, latencies and throughput out.

Every vCPU spends its time computing, waiting on memory, waiting on NIC
DMA into its buffers, and waiting on cache lines shared with sibling vCPUs:

    time = compute + mem_bound * miss * Lm / L0
                   + io_bound * Ln / L0 + sharing_bound * Lc / L3

``Lm`` is its mean memory latency (hop latency of seed 000 Table 3 plus the
queueing delay of the memory controller, plus the interconnect port delay
for remote accesses), ``Ln`` the same from the NIC's node to the buffers,
``Lc`` the mean distance to its siblings' caches (the L3 latency when they
share its node). ``miss`` falls as the node's LLC covers more of the
working sets there (seed 001 Fig. 4(a) and (b)). Slower vCPUs issue fewer
accesses, so loads and delays are solved as a damped fixed point.
Throughput is normalized to the same vCPU alone on an idle host with
everything local: 1.0 is perfect placement.
"""

import dataclasses

import numpy as np

from nova_numa_policy.lab.sim import constants as c
from nova_numa_policy.lab.sim import workload as wl

L3_LATENCY = 48  # seed 000 Table 3, L3 hit, cycles


@dataclasses.dataclass
class Result:
    vm_throughput: np.ndarray  # per guest, normalized
    vcpu_throughput: np.ndarray  # per vCPU, all guests in order
    vcpu_penalty: np.ndarray  # stall time per unit of work, per vCPU
    vcpu_mem_latency: np.ndarray  # cycles per memory access, per vCPU
    vm_accesses: np.ndarray  # guests x nodes, accesses per cycle
    vcpu_accesses: np.ndarray  # vCPUs x nodes, accesses per cycle
    vm_io_rate: np.ndarray  # per guest, requests per second
    mc_util: np.ndarray  # per node
    port_util: np.ndarray  # per node
    cpu_load: np.ndarray  # per node, busy fraction of its CPUs
    # Per guest, the share of its vCPUs' time spent waiting for a CPU
    # they share with other vCPUs (what a host reads as run-queue delay).
    vm_cpu_wait: np.ndarray


def _miss_ratio(ws, llc):
    cover = np.minimum(1.0, llc / np.maximum(ws, 1e-9))
    return 1.0 - cover ** c.LLC_MISS_EXPONENT


def _queue(util, exponent=1):
    rho = np.minimum(util, c.RHO_MAX)
    return rho ** exponent / (1.0 - rho)


class _Arrays:
    """Per-vCPU inputs of every guest, flattened into numpy arrays."""

    def __init__(self, host, vms):
        n = host.n_nodes
        rows = []
        for index, vm in enumerate(vms):
            rows.extend(self._vm_rows(host, index, vm, n))
        self.vm_of = np.array([r[0] for r in rows], int)
        self.cpu = np.array([r[1] for r in rows], int)
        self.node = self.cpu // host.cpus_per_node
        self.mem = np.array([r[2] for r in rows]).reshape(-1, n)
        self.dma = np.array([r[3] for r in rows]).reshape(-1, n)
        self.peers = np.array([r[4] for r in rows]).reshape(-1, n)
        self.nic = np.array([r[5] for r in rows], int)
        prof = np.array([r[6] for r in rows], float).reshape(-1, 6)
        (self.mem_bound, self.io_bound, self.sharing_bound, self.ws,
         self.mlp, self.io_mlp) = prof.T
        self.io_rate = np.array([vm.profile.io_rate for vm in vms], float)

    @staticmethod
    def _vm_rows(host, index, vm, n):
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


def _port_traffic(rate, src_node, dist, n):
    """Traffic each node's port carries for accesses src -> dist."""
    src = np.eye(n)[src_node]
    remote_out = rate * (1.0 - (dist * src).sum(axis=1))
    return src.T @ remote_out + ((dist * (1.0 - src)).T @ rate)


class _Solver:
    def __init__(self, host, a):
        self.host, self.a, self.n = host, a, host.n_nodes
        self.lat = host.latency_matrix()
        self.l0 = self.lat[0, 0]
        self.remote = (host.hop_matrix() > 0).astype(float)
        self.share = _cpu_share(host, a.cpu)
        w_node = np.bincount(a.node, weights=a.ws, minlength=self.n)
        self.miss = _miss_ratio(w_node[a.node], host.llc_mb)
        self.miss_ideal = _miss_ratio(a.ws, host.llc_mb)
        self.phi = a.mem_bound * self.miss
        self.compute = 1.0 - a.mem_bound - a.io_bound - a.sharing_bound
        self.gbps = c.LINE_BYTES * host.freq_ghz

    def latencies(self, q_mc, q_port):
        a, lat = self.a, self.lat
        pair = np.maximum.outer(q_port, q_port) * self.remote
        mem_lat = lat + c.MC_QUEUE_CYCLES * q_mc[None, :] \
            + c.LINK_QUEUE_CYCLES * pair
        lm = (a.mem * mem_lat[a.node]).sum(axis=1)
        ln = (a.dma * mem_lat[a.nic]).sum(axis=1)
        cache_lat = lat + c.LINK_QUEUE_CYCLES * pair
        np.fill_diagonal(cache_lat, L3_LATENCY)
        lc = (a.peers * cache_lat[a.node]).sum(axis=1)
        # A packet crossing the interconnect twice (NIC to buffer, buffer
        # to vCPU) pays more than the two crossings apart (seed 002 Fig. 5).
        lb = (a.dma * mem_lat[a.node]).sum(axis=1)
        both = (ln / self.l0 - 1.0) * (lb / self.l0 - 1.0)
        return lm, ln + c.IO_PATH_SHARING * self.l0 * both, lc

    def stalls(self, lm, ln, lc):
        a = self.a
        return (self.phi * lm / self.l0 + a.io_bound * ln / self.l0
                + a.sharing_bound * lc / L3_LATENCY)

    def loads(self, time):
        a, n = self.a, self.n
        r_mem = self.share * a.mlp * self.phi / self.l0 / time
        r_dma = self.share * a.io_mlp * a.io_bound / self.l0 / time
        r_coh = self.share * a.sharing_bound / L3_LATENCY / time
        mc = (a.mem.T @ r_mem + a.dma.T @ r_dma) * self.gbps
        port = (_port_traffic(r_mem, a.node, a.mem, n)
                + _port_traffic(r_dma, a.nic, a.dma, n)
                + _port_traffic(r_coh, a.node, a.peers, n)) * self.gbps
        return mc / self.host.mc_gbps, port / self.host.port_gbps, r_mem

    def solve(self):
        q_mc = np.zeros(self.n)
        q_port = np.zeros(self.n)
        for _ in range(c.FIXED_POINT_ITERATIONS):
            lm, ln, lc = self.latencies(q_mc, q_port)
            time = self.compute + self.stalls(lm, ln, lc)
            mc_u, port_u, r_mem = self.loads(time)
            d = c.FIXED_POINT_DAMPING
            q_mc = d * q_mc + (1 - d) * _queue(mc_u, c.MC_QUEUE_EXPONENT)
            q_port = d * q_port + (1 - d) * _queue(
                port_u, c.LINK_QUEUE_EXPONENT)
        lm, ln, lc = self.latencies(q_mc, q_port)
        stall = self.stalls(lm, ln, lc)
        time = self.compute + stall
        mc_u, port_u, r_mem = self.loads(time)
        return lm, stall, time, mc_u, port_u, r_mem


def evaluate(host, vms):
    """Solve the model for the guests ``vms`` on ``host``."""
    n = host.n_nodes
    if not vms:
        zeros = np.zeros(n)
        return Result(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0),
                      np.zeros((0, n)), np.zeros((0, n)), np.zeros(0), zeros,
                      zeros, zeros, np.zeros(0))
    a = _Arrays(host, vms)
    s = _Solver(host, a)
    lm, stall, time, mc_u, port_u, r_mem = s.solve()
    ideal = (s.compute + a.mem_bound * s.miss_ideal + a.io_bound
             + a.sharing_bound)
    vcpu_tp = s.share * ideal / time
    n_vm = len(vms)
    counts = np.bincount(a.vm_of, minlength=n_vm)
    vm_tp = np.bincount(a.vm_of, weights=vcpu_tp, minlength=n_vm) / counts
    vcpu_accesses = a.mem * r_mem[:, None]
    accesses = np.zeros((n_vm, n))
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
