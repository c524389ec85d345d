"""What arrives: applications, the guests running them, and their boot.

An :class:`App` is a flavor plus the workload inside it; a :class:`Guest`
is one instance of it in a stream. :func:`boot` turns a placement decision
(CPUs, memory mode, nodes) into a simulated guest, the way libvirt and the
kernel would start it.
"""

import dataclasses
import math
import uuid as uuid_mod

import numpy as np

from nova_numa_policy.contracts import policy as numa_policy
from numa_policy_lab.sim import state as st
from numa_policy_lab.sim import workload as wl


@dataclasses.dataclass(frozen=True)
class App:
    """A flavor and the application its guests run."""

    name: str
    profile: str  # a key of sim.workload.PROFILES
    vcpus: int
    memory_mb: int
    # What the operator puts in the flavor for our plugins (seed 000's
    # best policy for the application class, seed 002's I/O hints).
    policy: str | None = None
    nic_locality: str | None = None
    io_intensity: str | None = None
    # Network-bound: the static vSwitch configuration affines these to
    # the NIC's node.
    io_bound: bool = False

    def extra_specs(self):
        specs = {numa_policy.POLICY_KEY: self.policy,
                 numa_policy.NIC_LOCALITY_KEY: self.nic_locality,
                 numa_policy.IO_INTENSITY_KEY: self.io_intensity}
        return {k: v for k, v in specs.items() if v is not None}

    def nodes_needed(self, cpus_per_node):
        """The smallest guest NUMA topology a static config would give."""
        return math.ceil(self.vcpus / cpus_per_node)


@dataclasses.dataclass(frozen=True)
class Guest:
    """One instance in a stream: when it comes, when it goes, what it runs.

    ``phases`` switch the running application at given periods, for
    workloads whose behaviour changes after the scheduler saw them.
    """

    uuid: str
    name: str
    app: App
    arrive: int
    depart: int | None = None
    phases: tuple = ()  # (period, profile name) pairs

    def alive(self, period):
        return self.arrive <= period and (self.depart is None
                                          or period < self.depart)


def guest_uuid(scenario, index):
    """A stable, valid UUID (reports refuse anything else) per guest."""
    return str(uuid_mod.uuid5(uuid_mod.NAMESPACE_URL,
                              f'nova-numa-policy/cluster/{scenario}/{index}'))


@dataclasses.dataclass(frozen=True)
class Boot:
    """Where a guest starts on its host.

    ``mode`` is the memory policy the guest boots with (sim.state values);
    ``nodes`` its memory nodes; ``affinity`` the CPUs each vCPU may use.
    ``kernel_balanced``: libvirt set no memory policy (none, or
    cpuset.mems alone), so the kernel's NUMA balancing scans and moves
    the guest's memory where it runs.
    """

    cpus: tuple
    affinity: tuple
    mode: str = st.FIRST_TOUCH
    nodes: frozenset = frozenset()
    kernel_balanced: bool = True


def boot(host, guest, placement, nic=None, requested=None):
    """The simulated guest that ``placement`` starts on ``host``.

    ``requested`` is the hw:numa_policy the agent sees, None for guests
    booted without our flavor keys.
    """
    app = guest.app
    profile = wl.PROFILES[app.profile]
    nodes = placement.nodes or frozenset(range(host.n_nodes))
    vcpu_nodes = [host.node_of_cpu(int(c)) for c in placement.cpus]
    seg = st.initial_placement(host.n_nodes, profile, app.memory_mb,
                               vcpu_nodes, placement.mode, nodes)
    return st.SimVm(uuid=guest.uuid, profile=profile,
                    memory_mb=app.memory_mb,
                    vcpu_cpus=np.asarray(placement.cpus, int),
                    vcpu_affinity=list(placement.affinity), seg_mb=seg,
                    nodeset=frozenset(nodes), requested_policy=requested,
                    nic=nic, kernel_balanced=placement.kernel_balanced)
