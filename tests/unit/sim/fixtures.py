"""Factories for simulated guests placed exactly where a test says."""

import numpy as np

from numa_policy_lab.sim import state
from numa_policy_lab.sim import workload


def vm_at(host, profile, cpus, mem_node, memory_mb=1024, nic=None,
          uuid='vm'):
    """A guest on ``cpus`` with every segment on ``mem_node``."""
    if isinstance(profile, str):
        profile = workload.PROFILES[profile]
    sizes = state.segment_sizes(profile, len(cpus), memory_mb)
    seg = np.zeros((len(sizes), host.n_nodes))
    seg[:, mem_node] = sizes
    return state.SimVm(uuid=uuid, profile=profile, memory_mb=memory_mb,
                       vcpu_cpus=np.array(cpus, int),
                       vcpu_affinity=[frozenset()] * len(cpus), seg_mb=seg,
                       nodeset=frozenset(range(host.n_nodes)), nic=nic)
