"""Factories for hand-written snapshots (a 2-node and a 4-node host)."""

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality
from tests import topology_factory


def topology(nodes=2, cpus=4, nic_node=0):
    return topology_factory.host_topology(
        nodes, cpus, 16384, remote=20,
        nics=(backend.NicInfo(name='eth0', numa_node=nic_node),))


def instance(uuid='vm', cpus=(0,), mem=None, acc=None, policy='auto',
             io_rate=0.0, penalty=None, hands_off=None, affinity=None,
             cputime_s=0, signal=None):
    """A guest; ``cputime_s`` is each vCPU's CPU time (a reboot lowers it)."""
    everything = frozenset(range(64))
    return backend.InstanceState(
        uuid=uuid, requested_policy=policy, hands_off_reason=hands_off,
        memory_mb_per_node=mem or {}, vcpu_cpus=tuple(cpus),
        vcpu_affinity=affinity or tuple(everything for _ in cpus),
        io_rate=io_rate, accesses_per_node=acc, vcpu_penalty=penalty,
        access_signal=signal if signal or acc is None
        else locality.SIGNAL_COUNTERS,
        vcpu_time_ns=tuple(int(cputime_s * 1e9) for _ in cpus))


def snapshot(instances, topo=None):
    topo = topo or topology()
    usage = tuple(backend.NodeUsage(node_id=n.id, cpu_load=0.0,
                                    memory_free_mb=8192) for n in topo.nodes)
    return backend.HostSnapshot(topology=topo, usage=usage,
                                instances=tuple(instances), taken_at=0.0)
