"""Simulated hosts: nodes, CPUs, memory, hop matrix, capacities and NICs.

Three presets follow the machines the seeds measured on; the latencies of
every preset come from seed 000 Table 3 (the only latency table in the
seeds), indexed by hop count.
"""

import dataclasses
import functools

import numpy as np

from nova_numa_policy.contracts import backend
from nova_numa_policy.lab.sim import constants

# ACPI SLIT-style distances by hop count, what Linux reports in
# /sys/devices/system/node/node*/distance.
SLIT_BY_HOPS = (10, 16, 22)


@dataclasses.dataclass(frozen=True)
class SimNic:
    name: str
    node: int
    speed_mbps: int = 40000


@dataclasses.dataclass(frozen=True)
class SimHost:
    """A NUMA machine; immutable, shared by every period of a run."""

    name: str
    cpus_per_node: int
    memory_mb_per_node: int
    hops: tuple  # N x N hop counts
    llc_mb: float  # last-level cache per node
    freq_ghz: float
    mc_gbps: float  # memory controller bandwidth per node
    port_gbps: float  # interconnect bandwidth into/out of a node
    nics: tuple = ()

    @property
    def n_nodes(self):
        return len(self.hops)

    @property
    def n_cpus(self):
        return self.n_nodes * self.cpus_per_node

    def node_cpus(self, node):
        first = node * self.cpus_per_node
        return tuple(range(first, first + self.cpus_per_node))

    def node_of_cpu(self, cpu):
        return cpu // self.cpus_per_node

    def hop_matrix(self):
        return np.asarray(self.hops, dtype=int)

    def latency_matrix(self):
        """Uncontended latency in cycles from CPU node (row) to memory."""
        return np.asarray(constants.LATENCY_BY_HOPS, float)[self.hop_matrix()]

    def nic(self, name):
        """The NIC ``name``; KeyError if the host has none."""
        return {nic.name: nic for nic in self.nics}[name]

    def to_topology(self):
        """The ``HostTopology`` (contracts.backend) it reports.

        Built once per host: both are immutable, and handing out the same
        object every period lets what the loops derive from a topology
        (:func:`nova_numa_policy.contracts.topology.per_topology`) be
        reused.
        """
        return _topology(self)


@functools.lru_cache(maxsize=16)
def _topology(host):
    nodes = tuple(
        backend.NodeInfo(
            id=node, cpus=host.node_cpus(node),
            memory_total_mb=host.memory_mb_per_node,
            distances=tuple(SLIT_BY_HOPS[h] for h in host.hops[node]))
        for node in range(host.n_nodes))
    nics = tuple(backend.NicInfo(name=nic.name, numa_node=nic.node,
                                 speed_mbps=nic.speed_mbps)
                 for nic in host.nics)
    return backend.HostTopology(nodes=nodes, nics=nics)


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
                   nics=(SimNic('eth0', 0, 10000),))


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
                   nics=(SimNic('ens1', 0, 40000),))


def xeon2():
    """Seed 001 Table 1: two quad-core Xeon E5620, 12 MB LLC per socket."""
    return SimHost(name='xeon2', cpus_per_node=4, memory_mb_per_node=12288,
                   hops=((0, 1), (1, 0)), llc_mb=12.0, freq_ghz=2.4,
                   mc_gbps=25.6, port_gbps=11.7,
                   nics=(SimNic('eth0', 0, 10000),))


PRESETS = {'amd48': amd48, 'ivybridge4': ivybridge4, 'xeon2': xeon2}
