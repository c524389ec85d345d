"""Simulated hosts: nodes, CPUs, memory, hop matrix, capacities and NICs.

Three presets follow the machines the seeds measured on; the latencies of
every preset come from seed 000 Table 3 (the only latency table in the
seeds), indexed by hop count. Any of them may be given a lower memory
tier (:func:`with_lower_tier`): a CPU-less node of CXL-attached memory,
numbered after the CPU nodes as Linux numbers it, whose latency and
bandwidth come from published CXL measurements (``constants.py``).
"""

import dataclasses

import numpy as np

from numa_policy_lab import shape
from numa_policy_lab.sim import constants

# ACPI SLIT-style distances by hop count, what Linux reports in
# /sys/devices/system/node/node*/distance.
SLIT_BY_HOPS = (10, 16, 22)


def slit(hops):
    """The SLIT distances of a hop-count matrix."""
    return tuple(tuple(SLIT_BY_HOPS[h] for h in row) for row in hops)


@dataclasses.dataclass(frozen=True)
class LowerTier:
    """A CPU-less memory node below the CPU nodes: a CXL memory expander.

    It hangs off the root port of ``attached_node``'s socket: an access
    from that node pays the node's local latency plus ``added_ns``, an
    access from another node the hops to ``attached_node`` as well (it
    crosses the interconnect to that socket first). Its bandwidth is
    ``bandwidth_share`` of one CPU node's memory controller.
    """

    attached_node: int
    memory_mb: int
    added_ns: float = constants.LOWER_TIER_ADDED_NS
    bandwidth_share: float = constants.LOWER_TIER_BANDWIDTH_SHARE


@dataclasses.dataclass(frozen=True, kw_only=True)
class SimHost(shape.NumaShape):
    """A NUMA machine and its performance; immutable, shared by a run.

    Its distances are those of its hop counts (:func:`slit`), so the two
    cannot disagree; a host the derivations refuse (remote memory nearer
    than local) may still be built, to be refused.
    """

    distances: tuple = dataclasses.field(init=False, default=())
    hops: tuple  # N x N hop counts
    llc_mb: float  # last-level cache per node
    freq_ghz: float
    mc_gbps: float  # memory controller bandwidth per node
    port_gbps: float  # interconnect bandwidth into/out of a node
    # None: every node has CPUs and DRAM, one tier. The distances, the
    # CPUs and the contract's HostTopology describe the CPU nodes only.
    lower_tier: LowerTier | None = None

    def __post_init__(self):
        object.__setattr__(self, 'distances', slit(self.hops))

    def hop_matrix(self):
        return np.asarray(self.hops, dtype=int)

    @property
    def memory_nodes(self):
        """Nodes holding memory: the CPU nodes, then the lower tier's."""
        return self.n_nodes + (self.lower_tier is not None)

    @property
    def tier_node(self):
        """The lower tier's node number, None without one."""
        return None if self.lower_tier is None else self.n_nodes

    def memory_ports(self):
        """Per memory node, the CPU node whose port its traffic crosses.

        A CPU node's memory is behind its own port; the lower tier's is
        behind its socket's: an access to it from that socket loads no
        interconnect port, one from another socket loads that one's.
        """
        ports = list(range(self.n_nodes))
        if self.lower_tier is not None:
            ports.append(self.lower_tier.attached_node)
        return np.asarray(ports, int)

    def latency_matrix(self):
        """Uncontended latency in cycles from CPU node (row) to memory.

        One column per memory node (:attr:`memory_nodes`).
        """
        lat = np.asarray(constants.LATENCY_BY_HOPS, float)[self.hop_matrix()]
        if self.lower_tier is None:
            return lat
        tier = self.lower_tier
        added = tier.added_ns * self.freq_ghz  # ns to cycles
        return np.hstack([lat, lat[:, [tier.attached_node]] + added])

    def memory_gbps(self):
        """Bandwidth of each memory node's controller, GB/s."""
        gbps = np.full(self.memory_nodes, float(self.mc_gbps))
        if self.lower_tier is not None:
            gbps[-1] = self.mc_gbps * self.lower_tier.bandwidth_share
        return gbps

    def memory_mb_by_node(self):
        """MB of memory on each memory node."""
        mb = [self.memory_mb_per_node] * self.n_nodes
        if self.lower_tier is not None:
            mb.append(self.lower_tier.memory_mb)
        return np.asarray(mb, float)


def _amd48_hops():
    # Four sockets of two nodes each, at most two hops (seed 000 §5.1): a
    # node reaches its sibling and the same-parity node of every other
    # socket directly, the rest through one intermediate node.
    hops = []
    for i in range(8):
        row = []
        for j in range(8):
            if i == j:
                row.append(0)
            elif i // 2 == j // 2 or i % 2 == j % 2:
                row.append(1)
            else:
                row.append(2)
        hops.append(tuple(row))
    return tuple(hops)


def amd48():
    """Seed 000 §5.1: 8 nodes x 6 CPUs, 16 GiB, 13 GB/s MC, 6 GB/s links.

    Each node has four direct links, so its port carries 4 x 6 GB/s. Node 0
    holds the PCI bus with the NIC.
    """
    return SimHost(name='amd48', cpus_per_node=6, memory_mb_per_node=16384,
                   hops=_amd48_hops(), llc_mb=5.0, freq_ghz=2.2,
                   mc_gbps=13.0, port_gbps=24.0,
                   nics=(shape.Nic('eth0', 0, 10000),))


def ivybridge4():
    """Seed 002 §6.1: 4 sockets x 8 cores, 32 GB, 16 MB LLC, NIC on node 0.

    Sockets form a ring (seed 002 Table 1: nodes 1 and 3 are one hop from
    node 0, node 2 two hops); two QPI links of 7.2 GT/s per socket.
    """
    ring = tuple(tuple(min((i - j) % 4, (j - i) % 4) for j in range(4))
                 for i in range(4))
    return SimHost(name='ivybridge4', cpus_per_node=8,
                   memory_mb_per_node=32768, hops=ring, llc_mb=16.0,
                   freq_ghz=2.3, mc_gbps=40.0, port_gbps=14.4,
                   nics=(shape.Nic('ens1', 0, 40000),))


def xeon2():
    """Seed 001 Table 1: two quad-core Xeon E5620, 12 MB LLC per socket."""
    return SimHost(name='xeon2', cpus_per_node=4, memory_mb_per_node=12288,
                   hops=((0, 1), (1, 0)), llc_mb=12.0, freq_ghz=2.4,
                   mc_gbps=25.6, port_gbps=11.7,
                   nics=(shape.Nic('eth0', 0, 10000),))


def with_lower_tier(host, memory_mb, attached_node=0, **figures):
    """``host`` with a CXL memory expander of ``memory_mb`` MB.

    ``figures``: ``added_ns`` and ``bandwidth_share`` of
    :class:`LowerTier`, the cited values of ``constants.py`` by default.
    """
    if not 0 <= attached_node < host.n_nodes:
        raise ValueError(f'no CPU node {attached_node} to attach the '
                         f'lower tier to')
    return dataclasses.replace(
        host, name=f'{host.name}+cxl',
        lower_tier=LowerTier(attached_node, memory_mb, **figures))


def xeon2_cxl():
    """xeon2 with a 48 GiB expander on socket 0: twice its DRAM.

    The size is the scenario's choice (``sim/tiers.py``), not a measured
    machine's: enough for every guest of the ``tiers`` scenario.
    """
    return with_lower_tier(xeon2(), memory_mb=49152, attached_node=0)


PRESETS = {'amd48': amd48, 'ivybridge4': ivybridge4, 'xeon2': xeon2}
