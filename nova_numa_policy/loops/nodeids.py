"""Sparse NUMA node ids, seen by the strategies as positions 0..n-1.

Linux numbers a host's nodes as its firmware does, and a host may have
nodes 0, 1, 8 and 9. The strategies and the guard index arrays by node,
so the runner hands them a snapshot whose nodes are numbered by their
position in the topology and maps the node ids of the actions admitted
back. On the usual host, ids 0..n-1 in order, both directions are the
identity and cost nothing.

Pure: snapshots and actions in, snapshots and actions out.
"""

import dataclasses

from nova_numa_policy.contracts import backend


def dense(snapshot):
    """``(snapshot numbered by position, ids)``.

    ``ids`` is the node id of each position, or None when the snapshot
    already numbers its nodes by position (it is then returned as is).
    """
    ids = tuple(node.id for node in snapshot.topology.nodes)
    if ids == tuple(range(len(ids))):
        return snapshot, None
    position = {node_id: k for k, node_id in enumerate(ids)}
    return dataclasses.replace(
        snapshot, topology=_topology(snapshot.topology, position),
        usage=tuple(dataclasses.replace(u, node_id=position[u.node_id])
                    for u in snapshot.usage if u.node_id in position),
        instances=tuple(_instance(i, position)
                        for i in snapshot.instances)), ids


def to_ids(action, ids):
    """``action`` with the positions it names turned back into node ids."""
    if ids is None:
        return action
    if isinstance(action, backend.MovePages):
        return dataclasses.replace(action, source_node=ids[action.source_node],
                                   target_node=ids[action.target_node])
    if isinstance(action, backend.SetNodeset):
        return dataclasses.replace(
            action, nodes=frozenset(ids[n] for n in action.nodes))
    return action  # pins name CPUs, which keep their numbers


def _topology(topology, position):
    nodes = tuple(dataclasses.replace(n, id=position[n.id])
                  for n in topology.nodes)
    nics = tuple(dataclasses.replace(nic, numa_node=position.get(
        nic.numa_node)) if nic.numa_node is not None else nic
        for nic in topology.nics)
    return dataclasses.replace(topology, nodes=nodes, nics=nics)


def _keyed(per_node, position):
    return {position[node]: value for node, value in per_node.items()
            if node in position}


def _instance(inst, position):
    accesses = inst.accesses_per_node
    written = inst.written_mb_per_node
    return dataclasses.replace(
        inst, memory_mb_per_node=_keyed(inst.memory_mb_per_node, position),
        accesses_per_node=(None if accesses is None
                           else _keyed(accesses, position)),
        written_mb_per_node=(None if written is None
                             else _keyed(written, position)),
        memory_nodes=frozenset(position[n] for n in inst.memory_nodes
                               if n in position))
