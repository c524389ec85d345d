"""A NUMA host's shape: one model for the simulator and the lab host.

Nodes of equal CPUs and memory, numbered as Linux numbers them (node
``n``'s CPUs follow node ``n - 1``'s), a SLIT distance matrix as the
firmware writes it and ``/sys/devices/system/node/node*/distance``
reports it, and NICs on nodes. The simulator's hosts
(:class:`numa_policy_lab.sim.topology.SimHost`) add what it models
of their performance; the lab host (``tests/labhost/topology.py``) makes
a QEMU machine of one. Either reports it to the agent's side as the
contract's ``HostTopology``, the same way.
"""

import dataclasses
import functools

from nova_numa_policy.contracts import backend

# A node's distance to itself in a SLIT; every other is above it.
LOCAL_DISTANCE = 10
MAX_DISTANCE = 255


@dataclasses.dataclass(frozen=True)
class Nic:
    name: str
    node: int
    speed_mbps: int = 40000


def distance_problems(distances, nodes):
    """What makes ``distances`` an invalid SLIT for ``nodes`` nodes."""
    if len(distances) != nodes or any(len(row) != nodes
                                      for row in distances):
        return [f'distances must be {nodes}x{nodes}']
    problems = []
    for i in range(nodes):
        if distances[i][i] != LOCAL_DISTANCE:
            problems.append(f'distance {i}->{i} must be {LOCAL_DISTANCE}')
        for j in range(nodes):
            if i != j and not (LOCAL_DISTANCE < distances[i][j]
                               <= MAX_DISTANCE):
                problems.append(f'distance {i}->{j} must be in '
                                f'{LOCAL_DISTANCE + 1}..{MAX_DISTANCE}')
            if distances[i][j] != distances[j][i]:
                problems.append(f'distances {i}<->{j} differ')
    return problems


@dataclasses.dataclass(frozen=True, kw_only=True)
class NumaShape:
    """``cpus_per_node`` CPUs and ``memory_mb_per_node`` MB on each node."""

    name: str
    cpus_per_node: int
    memory_mb_per_node: int
    # Row i, column j: the SLIT distance from node i to node j.
    distances: tuple
    nics: tuple = ()  # Nic

    def problems(self):
        """Why this shape is no machine a firmware would describe."""
        problems = distance_problems(self.distances, self.n_nodes)
        return problems + [f'NIC {nic.name} on node {nic.node}, which does '
                           f'not exist' for nic in self.nics
                           if not 0 <= nic.node < self.n_nodes]

    @property
    def n_nodes(self):
        return len(self.distances)

    @property
    def n_cpus(self):
        return self.n_nodes * self.cpus_per_node

    @property
    def memory_mb(self):
        return self.n_nodes * self.memory_mb_per_node

    def node_cpus(self, node):
        first = node * self.cpus_per_node
        return tuple(range(first, first + self.cpus_per_node))

    def node_of_cpu(self, cpu):
        return cpu // self.cpus_per_node

    def nic(self, name):
        """The NIC ``name``; KeyError if the host has none."""
        return {nic.name: nic for nic in self.nics}[name]

    def to_topology(self):
        """The contract's ``HostTopology`` of this shape.

        Built once per shape: both are immutable, and handing out the same
        object every period lets what the loops derive from a topology
        (:func:`nova_numa_policy.contracts.topology.per_topology`) be
        reused.
        """
        return _topology(self)


@functools.lru_cache(maxsize=16)
def _topology(shape):
    nodes = tuple(
        backend.NodeInfo(id=node, cpus=shape.node_cpus(node),
                         memory_total_mb=shape.memory_mb_per_node,
                         distances=tuple(shape.distances[node]))
        for node in range(shape.n_nodes))
    nics = tuple(backend.NicInfo(name=nic.name, numa_node=nic.node,
                                 speed_mbps=nic.speed_mbps)
                 for nic in shape.nics)
    return backend.HostTopology(nodes=nodes, nics=nics)
