"""The real backend: libvirt for guests, sysfs and /proc for the host.

It observes and acts; it decides nothing. Every libvirt error is turned
into one of :mod:`nova_numa_policy.contracts.errors`
(:mod:`agent.backend.calls`). It is made of three parts, each given only
the settings it uses (:mod:`agent.backend.settings`):

* observing the host (:class:`agent.backend.hostview.HostObserver`): its
  topology, each node's load, its memory tiers, the uplinks' interrupts;
* observing the guests (:class:`agent.backend.guestview.GuestObserver`):
  each guest's domain, qemu process, memory per node within the
  numa_maps budget, vCPU threads, locality signal, traffic and I/O path;
* acting (:class:`agent.backend.actions.GuestActions`): pins, nodesets,
  page moves, IRQ steering, vhost worker pinning, handled arrivals.

This class holds them together as the one
:class:`nova_numa_policy.contracts.backend.Backend` the loops call.
"""

from nova_numa_policy.contracts import backend

from agent.backend import actions
from agent.backend import guestview
from agent.backend import hostview
from agent.backend import settings


class LibvirtBackend(backend.Backend):
    """The backend of ``connection``; each setting is a default if None.

    ``paths``, ``timing``, ``share``, ``helpers``: a
    :class:`~agent.backend.settings.HostPaths`,
    :class:`~agent.backend.settings.Timing`,
    :class:`~agent.backend.settings.HostShare`,
    :class:`~agent.backend.settings.Helpers`.
    """

    name = 'libvirt'

    def __init__(self, connection, paths=None, timing=None, share=None,
                 helpers=None):
        paths = paths or settings.HostPaths()
        share = share or settings.HostShare()
        helpers = helpers or settings.Helpers()
        self._timing = timing or settings.Timing()
        self._connection = connection
        self.guests = guestview.GuestObserver(connection, paths, self._timing,
                                              share, helpers)
        self.host = hostview.HostObserver(connection, paths.root,
                                          self._timing, share,
                                          self.guests.io_path)
        self.actions = actions.GuestActions(connection, self.host,
                                            self.guests, helpers.page_mover)

    def close(self):
        """The agent stops: nothing it started watches the guests on."""
        self.guests.close()

    @property
    def numa_maps_bound(self):
        """Which guests' numa_maps a round reads (a benchmark swaps it)."""
        return self.guests.memory.bound

    @numa_maps_bound.setter
    def numa_maps_bound(self, bound):
        self.guests.memory.bound = bound

    # -- what the host can do and measure ----------------------------

    def capabilities(self):
        caps = {backend.CAP_VCPU_PINNING, backend.CAP_EMULATOR_PINNING}
        if self.live_nodeset_supported():
            caps.add(backend.CAP_LIVE_NODESET)
        if self.page_migration_supported():
            caps.add(backend.CAP_PAGE_MIGRATION)
        if self.locality_signal():
            caps.add(backend.CAP_ACCESS_COUNTERS)
        if self.guests.io_path.configured:
            caps.update((backend.CAP_IRQ_STEERING,
                         backend.CAP_IO_THREAD_PINNING))
        return frozenset(caps)

    def locality_signal(self):
        """The host's signal, or None (:meth:`LocalitySignal.choose`)."""
        return self.guests.signal.choose(self.topology())

    def samples_missing(self):
        """Why the guests' memory accesses are not sampled here, or None."""
        return self.guests.signal.samples_missing()

    def bandwidth_missing(self):
        """Why memory bandwidth per guest is not read here, or None."""
        return self.guests.signal.bandwidth_missing(self.topology())

    def measurements(self):
        """The locality signal, run-queue delay, interface traffic."""
        found = set(super().measurements())
        found.add(backend.MEASURE_INTERFACE_TRAFFIC)
        if self.cpu_wait_measured():
            found.add(backend.MEASURE_CPU_WAIT)
        return frozenset(found)

    def cpu_wait_measured(self):
        """Whether the kernel keeps each thread's run-queue delay."""
        return self.guests.threads.cpu_wait_measured()

    def page_migration_supported(self):
        """A page mover is configured and the kernel has move_pages(2)."""
        return self.actions.page_migration_supported()

    def live_nodeset_supported(self):
        """Whether this hypervisor can change a running guest's nodeset."""
        return self.host.live_nodeset_supported()

    # -- observing -----------------------------------------------------

    def topology(self):
        return self.host.topology()

    def hostname(self):
        return self.host.hostname()

    def _start_rate_windows(self, domains):
        """Take every rate's first sample, then wait one window.

        The first observation would otherwise report every node idle and
        every guest silent: a one-shot run (``--once``) prints nothing
        else, and a daemon's first report reaches the schedulers.
        """
        self.host.start_load_window()
        self.guests.start_rate_windows(domains)
        self._timing.sleep(self._timing.rate_window)

    def observe(self):
        # Read first: the guests are observed on the topology their
        # decisions see, each node with its tier rank of this period.
        memory_tiers = self.host.memory_tiers()
        topology = self.host.ranked(self.topology(), memory_tiers)
        domains = self.host.active_domains()
        if not self.host.load_measured:
            self._start_rate_windows(domains)
        instances, signal = self.guests.observe(
            domains, topology, self.host.guest_cpus(topology),
            self.locality_signal())
        irq_states, hands_off = self.host.interrupts(topology)
        return backend.HostSnapshot(
            topology=topology, usage=self.host.usage(topology),
            instances=instances, taken_at=self._timing.clock(),
            locality_signal=signal, irqs=irq_states,
            irq_hands_off=hands_off, memory_tiers=memory_tiers)

    # -- acting ----------------------------------------------------------

    def pin_vcpu(self, instance_uuid, vcpu, cpus):
        self.actions.pin_vcpu(instance_uuid, vcpu, cpus)

    def pin_emulator(self, instance_uuid, cpus):
        self.actions.pin_emulator(instance_uuid, cpus)

    def set_nodeset(self, instance_uuid, nodes):
        self.actions.set_nodeset(instance_uuid, nodes)

    def arrival_handled(self, instance_uuid):
        self.actions.arrival_handled(instance_uuid)

    def move_pages(self, instance_uuid, source_node, target_node, pages):
        return self.actions.move_pages(instance_uuid, source_node,
                                       target_node, pages)

    def tier_pages(self, instance_uuid, source_node, target_node, pages,
                   pick):
        return self.actions.tier_pages(instance_uuid, source_node,
                                       target_node, pages, pick)

    def steer_irq(self, irq, nic, cpus):
        return self.actions.steer_irq(irq, nic, cpus)

    def pin_io_threads(self, instance_uuid, cpus):
        return self.actions.pin_io_threads(instance_uuid, cpus)
