"""Which guests the agent may touch, and where: pure rules.

First do no harm. The agent manages a guest only when someone asked it
to: a nova instance whose flavor (or ``[numa_policy] default_policy`` at
boot) gave it a ``hw:numa_policy``. A guest without one, a domain nova
did not define and a guest with a passthrough device (PCI hostdev,
SR-IOV VF, vDPA: its device's NUMA node is fixed by the hardware) are
left alone unless an option of ``[numa_policy_agent]`` says otherwise.

Where it does act, every CPU set it writes stays inside the CPUs nova
allows that guest (``<vcpu cpuset>`` as nova defined it: its
``cpu_shared_set`` or ``vcpu_pin_set``), and inside the CPUs nova's
configuration gives such guests on the host now, so a guest nova
confined to shared CPUs, or one defined before the host's CPUs were
partitioned, is never moved onto CPUs nova dedicates to pinned guests.
"""

import dataclasses

NO_POLICY = 'no hw:numa_policy asked for this guest'
NOT_NOVA = 'not a nova instance'
PASSTHROUGH = ('has a passthrough device (PCI, SR-IOV VF or vDPA) whose '
               'NUMA node the host fixes')


@dataclasses.dataclass(frozen=True)
class Scope:
    """What the agent may manage beyond the guests that asked for it.

    Every choice defaults to leaving the guest alone.
    """

    guests_without_policy: bool = False
    foreign_domains: bool = False
    passthrough_guests: bool = False

    @classmethod
    def from_conf(cls, group):
        """The scope ``[numa_policy_agent]`` sets."""
        return cls(guests_without_policy=group.manage_guests_without_policy,
                   foreign_domains=group.manage_foreign_domains,
                   passthrough_guests=group.manage_passthrough_guests)


@dataclasses.dataclass(frozen=True)
class CpuPartition:
    """nova's CPU options on this host; empty sets are options not set.

    ``shared`` is ``[compute] cpu_shared_set``, ``dedicated``
    ``[compute] cpu_dedicated_set`` and ``pin_set`` the deprecated
    ``[DEFAULT] vcpu_pin_set``.
    """

    shared: frozenset = frozenset()
    dedicated: frozenset = frozenset()
    pin_set: frozenset = frozenset()

    def floating(self, host_cpus):
        """The CPUs guests without dedicated CPUs may run on; empty: all.

        nova's own order (its libvirt driver's ``_get_vcpu_available``):
        the legacy pin set, which nova still prefers when both are set;
        else the shared set. With dedicated CPUs alone nova gives such
        guests no CPU and placement no VCPU inventory, so none is placed
        here; a guest defined before the host was partitioned is then
        bounded to every CPU not dedicated to pinned guests, never onto
        theirs (:meth:`floating_by_node` reports no capacity).
        """
        if self.pin_set:
            return self.pin_set
        if self.shared:
            return self.shared
        if self.dedicated:
            return frozenset(host_cpus) - self.dedicated
        return frozenset()

    def floating_by_node(self, nodes):
        """{node id: the node's CPUs guests without dedicated CPUs may use}.

        ``nodes`` are the host's (anything with ``id`` and ``cpus``). A
        node whose CPUs are all dedicated to pinned guests, or outside a
        shared set elsewhere, gets an empty set, and so does every node of
        a host with dedicated CPUs and no shared set (nova places no
        floating guest there); without a partition each
        node gets all of its CPUs. nova's ``[DEFAULT] reserved_host_cpus``
        plays no part: it is a count placement takes off the host's VCPU
        inventory, not a set of CPU ids, so it belongs to no node (and
        nova refuses it beside ``cpu_shared_set`` or
        ``cpu_dedicated_set``, whose unlisted CPUs are the host's).
        """
        nodes = tuple(nodes)
        if self.dedicated and not (self.shared or self.pin_set):
            # nova's capacity for floating guests here is none: no VCPU
            # inventory in placement.
            return {node.id: frozenset() for node in nodes}
        host = self.floating(cpu for node in nodes for cpu in node.cpus)
        return {node.id: allowed(node.cpus, host) for node in nodes}


def bound(guest_cpus, host_cpus):
    """The CPUs a guest may use; empty: no bound.

    ``guest_cpus`` is the bound nova gave the guest when it was defined,
    ``host_cpus`` the one nova's configuration gives such guests now
    (:meth:`CpuPartition.floating`). A guest defined before the host's
    CPUs were partitioned keeps only what both allow; one whose whole
    bound is now dedicated to pinned guests gets the host's, where nova
    itself would put it at its next hard reboot.
    """
    guest_cpus, host_cpus = frozenset(guest_cpus), frozenset(host_cpus)
    if not host_cpus:
        return guest_cpus
    return (guest_cpus & host_cpus) or host_cpus


def unmanaged_reason(scope, *, requested, nova_defined=True,
                     passthrough=False):
    """Why a guest is out of the agent's scope, or None when it is in.

    ``requested`` is its ``hw:numa_policy`` (None: none asked),
    ``nova_defined`` whether nova (or the driver extension) defined the
    domain, ``passthrough`` whether it has a passthrough device.
    """
    if not nova_defined and not scope.foreign_domains:
        return NOT_NOVA
    if passthrough and not scope.passthrough_guests:
        return PASSTHROUGH
    if requested is None and not scope.guests_without_policy:
        return NO_POLICY
    return None


def allowed(cpus, allowed_cpus):
    """``cpus`` cut to the CPUs nova allows a guest.

    ``allowed_cpus`` empty means nova set no bound: every host CPU.
    """
    cpus = frozenset(cpus)
    return cpus & frozenset(allowed_cpus) if allowed_cpus else cpus


def leaves_allowed(cpus, allowed_cpus):
    """Whether writing ``cpus`` would let a guest run outside nova's set."""
    return bool(allowed_cpus) and not frozenset(cpus) <= frozenset(
        allowed_cpus)
