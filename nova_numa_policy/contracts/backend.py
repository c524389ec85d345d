"""The one interface between the agent's loops and a host.

Decisions are pure functions from a :class:`HostSnapshot` to a list of
:class:`Action` values; a :class:`Backend` observes the host and carries the
actions out. Two backends implement it: the real one (libvirt and Linux,
in ``agent/``) and the simulated NUMA host (in ``nova_numa_policy``). The
same loops run unchanged on both.
"""

import abc
import dataclasses

from nova_numa_policy.contracts import tiers

# What a backend may be able to do; a loop whose action needs a capability
# the backend lacks is not started.
# A guest's memory mode (libvirt's <numatune><memory mode=...>), as
# InstanceState.memory_mode and SetNodeset carry it.
MODE_STRICT = 'strict'
MODE_INTERLEAVE = 'interleave'
MODE_PREFERRED = 'preferred'
MODE_RESTRICTIVE = 'restrictive'
# libvirt's qemu driver changes a running guest's nodeset (by rewriting
# the cpuset.mems of its cgroups) only when the memory mode is one of
# these, or when the guest has no <numatune> at all (doc/source/agent.rst).
LIVE_NODESET_MODES = (None, MODE_RESTRICTIVE)

CAP_VCPU_PINNING = 'vcpu-pinning'
CAP_EMULATOR_PINNING = 'emulator-pinning'
CAP_LIVE_NODESET = 'live-nodeset'
CAP_PAGE_MIGRATION = 'page-migration'
# Memory accesses per node are measured, by counters or by sampling
# (Backend.locality_signal says which).
CAP_ACCESS_COUNTERS = 'access-counters'
# The host can route a NIC's interrupt vectors to chosen CPUs, and
# restrict a guest's vhost workers (the kernel threads that copy a virtio
# NIC's packets) to chosen CPUs.
CAP_IRQ_STEERING = 'irq-steering'
CAP_IO_THREAD_PINNING = 'io-thread-pinning'
CAPABILITIES = (CAP_VCPU_PINNING, CAP_EMULATOR_PINNING, CAP_LIVE_NODESET,
                CAP_PAGE_MIGRATION, CAP_ACCESS_COUNTERS, CAP_IRQ_STEERING,
                CAP_IO_THREAD_PINNING)

# What a backend may measure of its guests besides memory locality (the
# locality signals are nova_numa_policy.contracts.locality.SIGNALS): the vCPUs'
# run-queue delay, and network traffic in bytes and packets.
MEASURE_CPU_WAIT = 'cpu-wait'
MEASURE_INTERFACE_TRAFFIC = 'interface-traffic'


@dataclasses.dataclass(frozen=True)
class NodeInfo:
    """A host NUMA node as discovered; only its tier changes while running."""

    id: int
    cpus: tuple[int, ...]
    memory_total_mb: int
    # This node's row of the distance matrix, in HostTopology.nodes order.
    distances: tuple[int, ...]
    # The rank of the memory tier holding the node's memory
    # (MemoryTiers.rank): 0 the top tier, which every node is in where
    # the kernel says nothing of tiers. Unlike the rest, it may change
    # while the host runs (memory onlined by dax/kmem joins a tier).
    memory_tier: int = 0


@dataclasses.dataclass(frozen=True)
class NicInfo:
    """A network uplink and where its device sits."""

    name: str
    numa_node: int | None
    speed_mbps: int | None = None
    physnet: str | None = None
    bridge: str | None = None


@dataclasses.dataclass(frozen=True)
class HostTopology:
    nodes: tuple[NodeInfo, ...]
    nics: tuple[NicInfo, ...] = ()
    # CPUs no interrupt and no I/O thread is ever steered to: those nova
    # dedicates to pinned guests ([compute] cpu_dedicated_set) and those
    # the kernel isolates from the host (/sys/devices/system/cpu/isolated).
    reserved_cpus: frozenset = frozenset()

    def node(self, node_id):
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def distance(self, from_id, to_id):
        """The SLIT distance between two nodes named by their ids.

        Rows are in ``nodes`` order, which is not id order on hosts with
        sparse node ids (0, 1, 8, 9): never index a row with an id.
        """
        row = self.node(from_id).distances
        for position, node in enumerate(self.nodes):
            if node.id == to_id:
                return row[position]
        raise KeyError(to_id)

    def node_of_cpu(self, cpu):
        for node in self.nodes:
            if cpu in node.cpus:
                return node.id
        return None


@dataclasses.dataclass(frozen=True)
class NodeUsage:
    """A node's measured load over the last period."""

    node_id: int
    cpu_load: float  # busy fraction of the node's CPUs, 0.0 to 1.0
    memory_free_mb: int
    # The node's CPUs guests without dedicated CPUs may use, as nova's
    # CPU options give them (scope.CpuPartition.floating_by_node): empty
    # where all are dedicated to pinned guests; None when the backend
    # does not tell them apart, which means all of the node's CPUs.
    floating_cpus: frozenset | None = None
    # The busy fraction of those CPUs, 0.0 to 1.0; None when there are
    # none, or with floating_cpus None (cpu_load is theirs then).
    floating_load: float | None = None


@dataclasses.dataclass(frozen=True)
class InstanceState:
    """One guest as observed in one period."""

    uuid: str
    requested_policy: str | None
    # Why the agent must leave the guest alone, if it must: nova owns its
    # NUMA topology, its memory is locked, it has PCI passthrough devices.
    hands_off_reason: str | None = None
    memory_mb_per_node: dict = dataclasses.field(default_factory=dict)
    # The host CPU each vCPU last ran on (index = vCPU number).
    vcpu_cpus: tuple[int, ...] = ()
    # The host CPUs each vCPU may run on (index = vCPU number).
    vcpu_affinity: tuple[frozenset, ...] = ()
    # Cumulative CPU time of each vCPU thread, nanoseconds.
    vcpu_time_ns: tuple[int, ...] = ()
    # The share of its vCPU threads' time over the last period spent
    # runnable but waiting for a host CPU (run-queue delay), 0.0 to 1.0;
    # None when not measured (or the vCPUs neither ran nor waited).
    cpu_wait: float | None = None
    # Network requests (or packets) per second over the last period.
    io_rate: float = 0.0
    # The guest's hw:numa_io_intensity: 'high' or 'low' says whether it
    # is network-bound whatever its rate; 'auto' (or None) leaves it to
    # the measured rate.
    io_intensity: str | None = None
    # Memory accesses per node over the last period when the host
    # measures them ({node id: count}); None when it does not.
    accesses_per_node: dict | None = None
    # Which signal (nova_numa_policy.contracts.locality.SIGNALS) those accesses
    # come from: counts, or samples whose distribution alone is meant.
    access_signal: str | None = None
    # Uncore penalty of each vCPU (stall time per unit of work, seed 001
    # §3) over the last period when the host measures it; None when not,
    # or None for a vCPU the signal did not sample.
    vcpu_penalty: tuple | None = None
    # The guest's configured memory size.
    memory_mb: int = 0
    # The running domain's memory policy as libvirt applies it: the
    # <numatune><memory> mode ('strict', 'interleave', 'preferred',
    # 'restrictive') or None when the domain has none (kernel default),
    # and its nodeset. The mode of a running guest cannot change.
    memory_mode: str | None = None
    memory_nodes: frozenset = frozenset()
    # The host CPUs the guest's emulator threads may run on.
    emulator_affinity: frozenset = frozenset()
    # The host CPUs nova allows the guest (its <vcpu cpuset> as nova
    # defined it); empty when nova set no bound. Nothing the agent
    # writes may leave it (nova_numa_policy.contracts.scope).
    allowed_cpus: frozenset = frozenset()
    # The host uplinks (NicInfo.name) its network interfaces go through:
    # the NIC under the bridge it is plugged into, the NIC a macvtap
    # interface sits on, the PF of an SR-IOV VF it holds.
    nics: frozenset = frozenset()
    # The host CPUs its vhost workers may run on (the union over them);
    # empty when it has none (no vhost-net interface).
    io_thread_cpus: frozenset = frozenset()
    # The guest's hw:numa_nic_locality ('none', 'preferred', 'required'),
    # None when it asked for no policy: what a home decision taken again
    # at run time weighs its NIC's node by.
    nic_locality: str | None = None
    # True while the guest runs on the placement a live migration's
    # source chose for this host blind to its load (the record's
    # chosen-by) and its arrival here has not been handled yet.
    blind_arrival: bool = False
    # Which memory tiers the guest asked to hold its memory
    # (hw:numa_memory_tiers, a contracts.tiers.MemoryTiers): ANY, the
    # kernel's own behaviour, also when it asked for no policy.
    requested_tiers: tiers.MemoryTiers = tiers.ANY
    # Of its memory per node ({node id: MB}), what it wrote over the last
    # period (the kernel's soft-dirty bits), and what it read where DAMON
    # watches it: its hot memory, as far as this host can tell. None when
    # not measured (only ``tiered`` guests
    # are, on a host with a lower tier and a page mover).
    written_mb_per_node: dict | None = None


@dataclasses.dataclass(frozen=True)
class IrqState:
    """One interrupt vector of a NIC, as the kernel routes it now."""

    irq: int
    # The NicInfo.name whose device raises it.
    nic: str
    # The CPUs it may be delivered to (/proc/irq/N/smp_affinity_list).
    affinity: frozenset
    # The CPUs it is delivered to (effective_affinity_list); empty when
    # the kernel does not say.
    effective: frozenset = frozenset()
    # Its affinity before the agent first steered it, kept by the host
    # across agent restarts; None while the agent has not steered it.
    found: frozenset | None = None


@dataclasses.dataclass(frozen=True)
class MemoryTiers:
    """What the kernel says of its memory tiers (Linux 6.1 and later).

    ``ranks``: {node id: the rank of the tier holding the node's memory},
    0 the fastest tier present, 1 the next, and so on; a node in no tier
    (one without memory) is absent. None when the host does not say (a
    kernel before tiers, tiers that list no node, or what it says cannot
    be read): every node is then in the top tier (:meth:`rank`).
    ``demotion``: whether the
    kernel demotes pages to a lower tier during reclaim, None when it
    does not say. ``promotion``: whether it promotes pages it finds hot
    on a lower tier (``kernel.numa_balancing``'s memory tiering bit),
    None when it does not say.
    """

    ranks: dict | None = None
    demotion: bool | None = None
    promotion: bool | None = None

    @property
    def kernel_tiers(self):
        """Whether the kernel itself moves pages between tiers."""
        return bool(self.demotion or self.promotion)

    def rank(self, node_id):
        """The node's tier rank; 0, the top tier, where nothing is said."""
        if self.ranks is None:
            return 0
        return self.ranks.get(node_id, 0)


@dataclasses.dataclass(frozen=True)
class HostSnapshot:
    """Everything one period's decisions may look at."""

    topology: HostTopology
    usage: tuple[NodeUsage, ...]
    instances: tuple[InstanceState, ...]
    # Monotonic seconds when the snapshot was taken.
    taken_at: float
    # The host's locality signal when observed (Backend.locality_signal):
    # a host fact, known before the kernel has sampled any one guest.
    locality_signal: str | None = None
    # The uplinks' interrupt vectors (empty when the host cannot steer
    # them), and why the agent must leave them alone, if it must (an
    # interrupt balancer steers them and cannot be told to stop).
    irqs: tuple[IrqState, ...] = ()
    irq_hands_off: str | None = None
    # The kernel's memory tiers and whether it demotes between them, as
    # observed: both change at run time (a device's memory onlined by
    # dax/kmem joins a lower tier; an operator turns demotion on).
    memory_tiers: MemoryTiers = MemoryTiers()


@dataclasses.dataclass(frozen=True)
class Action:
    """Something a decision asks a backend to do, and why."""

    instance_uuid: str
    reason: str


@dataclasses.dataclass(frozen=True)
class PinVcpu(Action):
    vcpu: int = 0
    cpus: frozenset = frozenset()


@dataclasses.dataclass(frozen=True)
class PinEmulator(Action):
    cpus: frozenset = frozenset()


@dataclasses.dataclass(frozen=True)
class SetNodeset(Action):
    nodes: frozenset = frozenset()


@dataclasses.dataclass(frozen=True)
class MovePages(Action):
    source_node: int = 0
    target_node: int = 0
    pages: int = 0


# Which pages of a node a TierPages takes: those the guest did not write
# over the last period, those it did, or those it did first and then any.
PICK_COLD = 'cold'
PICK_HOT = 'hot'
PICK_HOT_FIRST = 'hot-first'
PICKS = (PICK_COLD, PICK_HOT, PICK_HOT_FIRST)


@dataclasses.dataclass(frozen=True)
class TierPages(MovePages):
    """Move up to ``pages`` pages between tiers, chosen by ``pick``.

    A MovePages for every rule that counts pages (the budget, the
    guard); the backend takes only pages of the temperature asked.
    """

    pick: str = PICK_COLD


@dataclasses.dataclass(frozen=True)
class PinIoThreads(Action):
    """Restrict a running guest's vhost workers to ``cpus``."""

    cpus: frozenset = frozenset()


def nic_subject(name):
    """The ``instance_uuid`` of a host action on the NIC ``name``."""
    return f'nic:{name}'


@dataclasses.dataclass(frozen=True)
class HostAction(Action):
    """An action on the host rather than on one guest.

    Its ``instance_uuid`` names its subject (:func:`nic_subject`), never a
    guest: the runner and the executor treat each subject as a plan of
    its own, with no guest to roll back onto.
    """


@dataclasses.dataclass(frozen=True)
class SteerIrq(HostAction):
    """Route one interrupt vector of a NIC to ``cpus``.

    ``previous`` is its affinity before, what an undo writes back.
    """

    irq: int = 0
    nic: str = ''
    cpus: frozenset = frozenset()
    previous: frozenset = frozenset()


class Backend(abc.ABC):
    """A host the agent can observe and act on."""

    name = None

    @abc.abstractmethod
    def capabilities(self):
        """Return the frozenset of CAP_* values this backend supports."""

    def locality_signal(self):
        """The memory-locality signal this host measures, or None.

        One of :data:`nova_numa_policy.contracts.locality.SIGNALS`; a backend
        that has one also has ``CAP_ACCESS_COUNTERS``.
        """
        return None

    def measurements(self):
        """What this host measures of its guests, a frozenset of names.

        Its locality signal, if it has one, and any of the ``MEASURE_*``
        values; reports carry them so that an operator (``numa explain``)
        sees what each host's decisions rest on.
        """
        signal = self.locality_signal()
        return frozenset({signal} if signal else ())

    @abc.abstractmethod
    def topology(self):
        """Return the host's :class:`HostTopology`."""

    @abc.abstractmethod
    def observe(self):
        """Return a :class:`HostSnapshot` of the host now."""

    @abc.abstractmethod
    def pin_vcpu(self, instance_uuid, vcpu, cpus):
        """Restrict one vCPU of a running guest to ``cpus``."""

    @abc.abstractmethod
    def pin_emulator(self, instance_uuid, cpus):
        """Restrict a running guest's emulator threads to ``cpus``."""

    @abc.abstractmethod
    def set_nodeset(self, instance_uuid, nodes):
        """Change the nodes a running guest's memory may come from."""

    @abc.abstractmethod
    def move_pages(self, instance_uuid, source_node, target_node, pages):
        """Move up to ``pages`` pages; return how many were moved."""

    def tier_pages(self, instance_uuid, source_node, target_node, pages,
                   pick):
        """Move up to ``pages`` pages of temperature ``pick`` (PICKS).

        Only on a backend that measures what guests write
        (:attr:`InstanceState.written_mb_per_node`); returns how many
        were moved.
        """
        raise NotImplementedError(f'{self.name} cannot tell hot pages from '
                                  f'cold')

    def steer_irq(self, irq, nic, cpus):
        """Route interrupt ``irq`` of ``nic`` to ``cpus``.

        Needs ``CAP_IRQ_STEERING``; the host keeps the affinity it found
        (``IrqState.found``) until it is written back.
        """
        raise NotImplementedError(f'{self.name} cannot steer interrupts')

    def pin_io_threads(self, instance_uuid, cpus):
        """Restrict a running guest's vhost workers to ``cpus``."""
        raise NotImplementedError(f'{self.name} cannot pin I/O threads')

    def arrival_handled(self, instance_uuid):
        """Remember that the guest's arrival was handled, while it runs.

        Its :attr:`InstanceState.blind_arrival` is False from then on.
        Nothing to remember on a backend whose guests never arrive by
        live migration (the simulators).
        """

    def apply(self, action):
        """Carry out one :class:`Action`; return what the call returned."""
        if isinstance(action, PinVcpu):
            return self.pin_vcpu(action.instance_uuid, action.vcpu,
                                 action.cpus)
        if isinstance(action, PinEmulator):
            return self.pin_emulator(action.instance_uuid, action.cpus)
        if isinstance(action, SetNodeset):
            return self.set_nodeset(action.instance_uuid, action.nodes)
        if isinstance(action, TierPages):
            return self.tier_pages(action.instance_uuid, action.source_node,
                                   action.target_node, action.pages,
                                   action.pick)
        if isinstance(action, MovePages):
            return self.move_pages(action.instance_uuid, action.source_node,
                                   action.target_node, action.pages)
        if isinstance(action, SteerIrq):
            return self.steer_irq(action.irq, action.nic, action.cpus)
        if isinstance(action, PinIoThreads):
            return self.pin_io_threads(action.instance_uuid, action.cpus)
        raise TypeError(f'unknown action {action!r}')
