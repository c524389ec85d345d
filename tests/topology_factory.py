"""The one builder of HostTopology for tests: a host in a line or two.

Node ``k`` holds CPUs ``k * cpus`` to ``(k + 1) * cpus - 1``, so a test
that names a CPU knows its node. Tests of a topology the agent reads
(sysfs, libvirt's capabilities) build theirs from what it read.
"""

from nova_numa_policy.contracts import backend

# SLIT distances: a node to itself, and to another node by default.
LOCAL = 10
REMOTE = 21


def host_topology(nodes=2, cpus=4, memory_mb=8192, ids=None, remote=REMOTE,
                  distance=None, nics=()):
    """A host of ``nodes`` NUMA nodes of ``cpus`` CPUs and ``memory_mb``.

    ``ids``: the nodes' ids in order where they are not 0, 1, ...
    (sparse ids, as on some two-socket hosts: 0, 1, 8, 9); ``nodes`` is
    then their count. ``distance(a, b)``: the distance between two node
    ids where it is not LOCAL to itself and ``remote`` to every other.
    ``nics``: backend.NicInfo.
    """
    ids = tuple(range(nodes)) if ids is None else tuple(ids)

    def uniform(a, b):
        return LOCAL if a == b else remote

    distance = distance or uniform
    return backend.HostTopology(
        nodes=tuple(
            backend.NodeInfo(
                id=node_id, cpus=tuple(range(k * cpus, (k + 1) * cpus)),
                memory_total_mb=memory_mb,
                distances=tuple(distance(node_id, other) for other in ids))
            for k, node_id in enumerate(ids)),
        nics=tuple(nics))
