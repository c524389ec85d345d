"""The libvirt backend's actions on guests and on the host's interrupts.

Pins (vCPUs, the emulator and QEMU's I/O threads), a running guest's
nodeset, page moves through the page mover, IRQ steering and vhost
worker pinning through the steering daemon, and the record of a
handled arrival. Each libvirt error is turned into one of
:mod:`nova_numa_policy.contracts.errors`; a guest shut off between
observation and action is gone
(:class:`~nova_numa_policy.contracts.errors.DomainGone`).
"""

import functools

import libvirt
from oslo_log import log as logging

from nova_numa_policy.contracts import errors
from nova_numa_policy.decisions import enforcement

from agent.backend import calls

LOG = logging.getLogger(__name__)

NO_STEERING = ('no steering daemon configured ([numa_policy_agent] '
               'io_path_steering)')


class GuestActions:
    """Acts through ``connection`` on what ``host`` and ``guests`` observed.

    ``host``: :class:`agent.backend.hostview.HostObserver`; ``guests``:
    :class:`agent.backend.guestview.GuestObserver`; ``page_mover``:
    :class:`agent.backend.pagemoves.PageMover`, or None.
    """

    def __init__(self, connection, host, guests, page_mover):
        self._connection = connection
        self._host = host
        self._guests = guests
        self._page_mover = page_mover

    def page_migration_supported(self):
        """A page mover is configured and the kernel has move_pages(2)."""
        return self._page_mover is not None and self._kernel_moves_pages

    @functools.cached_property
    def _kernel_moves_pages(self):
        # Asked once: the kernel does not change while the agent runs.
        return self._page_mover.supported()

    def _act(self, dom, what, func, *args):
        try:
            return func(*args)
        except libvirt.libvirtError as exc:
            error = calls.translate(self._connection, exc, what)
            if (isinstance(error, errors.NotEnforceable)
                    and not calls.active(dom)):
                # Shut off between observe and act: nothing to enforce on.
                error = errors.DomainGone(f'{what}: domain is not running')
            raise error

    def _domain(self, instance_uuid):
        conn = self._connection.get()
        return calls.call(self._connection, f'lookup {instance_uuid}',
                          conn.lookupByUUIDString, instance_uuid)

    def _cpumap(self, cpus):
        return calls.cpumap(cpus, self._host.cpumap_size())

    def pin_vcpu(self, instance_uuid, vcpu, cpus):
        dom = self._domain(instance_uuid)
        # pinVcpu affects the running guest only: its persistent definition
        # stays nova's, which regenerates it on hard reboot anyway.
        self._act(dom, f'pin vCPU {vcpu} of {instance_uuid}', dom.pinVcpu,
                  vcpu, self._cpumap(cpus))

    def pin_emulator(self, instance_uuid, cpus):
        """Pin the emulator's threads, QEMU's I/O threads among them.

        nova pins a guest's ``<iothreadpin>`` with its ``<emulatorpin>``
        where it pins at all; a guest whose emulator moved while its I/O
        thread stayed would run part of its emulation on the old node.
        """
        dom = self._domain(instance_uuid)
        cpumap = self._cpumap(cpus)
        self._act(dom, f'pin emulator of {instance_uuid}', dom.pinEmulator,
                  cpumap, libvirt.VIR_DOMAIN_AFFECT_LIVE)
        for iothread, _ in self._act(dom, f'I/O threads of {instance_uuid}',
                                     calls.io_threads, dom):
            self._act(dom, f'pin I/O thread {iothread} of {instance_uuid}',
                      dom.pinIOThread, iothread, cpumap,
                      libvirt.VIR_DOMAIN_AFFECT_LIVE)

    def set_nodeset(self, instance_uuid, nodes):
        dom = self._domain(instance_uuid)
        facts = calls.call(self._connection, 'set nodeset',
                           self._guests.facts, dom)
        if not enforcement.live_nodeset_allowed(facts.memory_mode):
            raise errors.NotEnforceable(
                f'{instance_uuid}: libvirt cannot change the nodeset of a '
                f'running guest in {facts.memory_mode} mode')
        self._act(dom, f'set nodeset of {instance_uuid}',
                  dom.setNumaParameters,
                  {libvirt.VIR_DOMAIN_NUMA_NODESET:
                   ','.join(str(n) for n in sorted(nodes))},
                  libvirt.VIR_DOMAIN_AFFECT_LIVE)

    def arrival_handled(self, instance_uuid):
        """Keep, in the state directory, that the guest's arrival is done.

        Keyed by its domain id: a later start of the same definition is
        another arrival.
        """
        dom = self._domain(instance_uuid)
        dom_id = calls.call(self._connection, f'id of {instance_uuid}',
                            dom.ID)
        self._guests.arrivals.keep(instance_uuid, dom_id,
                                   self._guests.running | {instance_uuid})

    def move_pages(self, instance_uuid, source_node, target_node, pages):
        if not self.page_migration_supported():
            raise errors.PageMigrationUnavailable(
                'page migration is not available: no page mover configured '
                'or no move_pages(2) in this kernel')
        pid = self._running_pid(instance_uuid, 'move pages')
        try:
            result = self._page_mover.move(pid, source_node, target_node,
                                           pages)
        finally:
            # Moved or half moved: the loops and the report need the
            # guest's memory as it is now, whatever the read budget.
            self._guests.memory.moved(pid)
        if result.failed:
            LOG.info('%s: %d pages could not be moved to node %d',
                     instance_uuid, result.failed, target_node)
        if result.skipped:
            LOG.info('%s: %d pages not moved now: the kernel\'s NUMA '
                     'balancing has marked them for a hinting fault '
                     '(kernel.numa_balancing); they move once the guest '
                     'touches them again', instance_uuid, result.skipped)
        return result.moved

    def tier_pages(self, instance_uuid, source_node, target_node, pages,
                   pick):
        """Move up to ``pages`` pages of temperature ``pick``, by the census.

        :class:`agent.backend.pagetemps.PageTemperature` chooses them from
        the last period's census of what the guest wrote.
        """
        temperature = self._guests.temperature
        if not self.page_migration_supported() or temperature is None:
            raise errors.PageMigrationUnavailable(
                'page migration is not available: no page mover configured '
                'or no move_pages(2) in this kernel')
        pid = self._running_pid(instance_uuid, 'move pages between tiers')
        try:
            return temperature.move(instance_uuid, pid, source_node,
                                    target_node, pages, pick)
        finally:
            self._guests.memory.moved(pid)

    def steer_irq(self, irq, nic, cpus):
        """Route ``irq`` of uplink ``nic`` to ``cpus``; its affinity after.

        The affinity found before the first steer is recorded first
        (:class:`agent.backend.iopath.FoundRecord`); writing it back
        gives the IRQ back to irqbalance, if one runs.
        """
        io_path = self._guests.io_path
        if not io_path.configured:
            raise errors.NotEnforceable(
                f'IRQ steering is not available: {NO_STEERING}')
        if self._host.irq_hands_off:
            raise errors.NotEnforceable(
                f'NIC interrupts are left alone: {self._host.irq_hands_off}')
        if nic not in {uplink.name for uplink in self._host.topology().nics}:
            raise errors.NotEnforceable(f'{nic} is not an uplink of this '
                                        f'host')
        return io_path.steer(irq, nic, cpus)

    def pin_io_threads(self, instance_uuid, cpus):
        """Restrict the guest's vhost workers to ``cpus``."""
        if not self._guests.io_path.configured:
            raise errors.NotEnforceable(
                f'vhost worker pinning is not available: {NO_STEERING}')
        pid = self._running_pid(instance_uuid, 'pin I/O threads',
                                learn=True)
        return self._guests.io_path.pin(instance_uuid, pid, cpus)

    def _running_pid(self, instance_uuid, what, learn=False):
        """The QEMU pid of a running guest, for ``what`` to act on.

        ``learn``: read the domain's facts first (its uplinks and
        threads), for a guest the agent may not have observed yet.
        """
        dom = self._domain(instance_uuid)
        try:
            if learn:
                self._guests.facts(dom)
            pid = self._guests.pid(dom, instance_uuid)
        except libvirt.libvirtError as exc:
            raise calls.translate(self._connection, exc, what)
        if pid is None:
            if not calls.active(dom):
                raise errors.DomainGone(f'{instance_uuid}: not running')
            raise errors.NotEnforceable(
                f'{instance_uuid}: no qemu process found (pidfile in '
                f'{self._guests.pid_dir} missing or not its process)')
        return pid
