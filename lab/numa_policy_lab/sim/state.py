"""The mutable part of a simulated host: where each guest runs and lives."""

import dataclasses

import numpy as np

from numa_policy_lab.sim import workload as wl

PAGES_PER_MB = 256  # 4 KiB pages

FIRST_TOUCH = 'first-touch'
INTERLEAVE = 'interleave'
HOME = 'home'


@dataclasses.dataclass
class SimVm:
    """One guest: its profile, vCPU placement and memory placement."""

    uuid: str
    profile: wl.Profile
    memory_mb: int
    vcpu_cpus: np.ndarray  # host CPU each vCPU runs on
    vcpu_affinity: list  # frozenset of allowed CPUs per vCPU
    seg_mb: np.ndarray  # segments x nodes, MB
    nodeset: frozenset
    requested_policy: str | None = None
    hands_off_reason: str | None = None
    nic: str | None = None
    vcpu_time_ns: np.ndarray = None
    emulator_cpus: frozenset = frozenset()
    # The CPUs its vhost workers (the kernel threads copying its virtio
    # NIC's packets) may run on; None where the scenario does not model
    # them: the model then handles its packets by its buffers.
    io_thread_cpus: frozenset | None = None
    # The CPUs nova allows the guest (its <vcpu cpuset>); empty: all.
    allowed_cpus: frozenset = frozenset()
    pages_moved: int = 0
    vcpu_moves: int = 0
    # Booted under the kernel's default memory policy (alone or bounded
    # by cpuset.mems): Linux's NUMA balancing scans and moves its memory.
    kernel_balanced: bool = True
    # Pages the kernel's NUMA balancing moved (not the loops).
    kernel_pages_moved: int = 0
    pending_migration_pages: int = 0

    @property
    def n_vcpus(self):
        return len(self.vcpu_cpus)

    def memory_per_node_mb(self):
        return self.seg_mb.sum(axis=0)


def segment_sizes(profile, n_vcpus, memory_mb):
    """MB of each segment; the cold segment takes what the rest leaves."""
    hot = [profile.shared_mb if profile.shared_fraction else 0.0,
           profile.io_buffer_mb if profile.io_fraction else 0.0]
    hot += [profile.working_set_mb] * n_vcpus
    cold = max(0.0, memory_mb - sum(hot))
    return np.asarray(hot + [cold], float)


def _spread(n_nodes, nodes):
    row = np.zeros(n_nodes)
    row[sorted(nodes)] = 1.0 / len(nodes)
    return row


def initial_placement(n_nodes, profile, memory_mb, vcpu_nodes, policy,
                      nodeset):
    """Where a freshly booted guest's segments land under ``policy``.

    first-touch: each private segment on its vCPU's node; shared data on
    the allocating vCPU's node (vCPU 0) for master-slave work, on the
    vCPUs' nodes for parallel initialisation otherwise; buffers and cold
    memory near vCPU 0. interleave: every segment spread page by page over
    the nodeset. home: everything on the first node of the nodeset.
    """
    sizes = segment_sizes(profile, len(vcpu_nodes), memory_mb)
    n_seg = len(sizes)
    dist = np.zeros((n_seg, n_nodes))
    nodeset = sorted(nodeset)
    if policy == INTERLEAVE:
        dist[:] = _spread(n_nodes, nodeset)
    elif policy == HOME:
        dist[:, nodeset[0]] = 1.0
    else:
        master = vcpu_nodes[0]
        for i, node in enumerate(vcpu_nodes):
            dist[wl.FIRST_PRIVATE + i, node] = 1.0
        if profile.pattern == wl.PATTERN_SHARED:
            dist[wl.SEG_SHARED] = _spread(n_nodes, set(vcpu_nodes))
        else:
            dist[wl.SEG_SHARED, master] = 1.0
        dist[wl.SEG_IO, master] = 1.0
        dist[-1, master] = 1.0
    return dist * sizes[:, None]
