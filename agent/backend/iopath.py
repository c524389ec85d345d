"""The guests' I/O path as the libvirt backend reads and steers it.

What is read: each uplink's interrupt vectors and their affinity
(:mod:`agent.sensors.irqs`), whether irqbalance runs and answers
(:mod:`agent.sensors.irqbalance`), each guest's uplinks from its domain
XML and its vhost workers' CPUs (:mod:`agent.sensors.vhost`). What is
written goes through the steering daemon (:mod:`agent.privsep.irqs`),
whose answers :class:`Steering` turns into the agent's errors.

The affinity an IRQ had before the agent first steered it is kept in a
small JSON file (:class:`FoundRecord`), so that an agent restarted
between a steer and its undo still knows what to write back; an entry
goes once the IRQ is given back what was found.
"""

import errno
import json
import os
import tempfile

from oslo_log import log as logging

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import errors

from agent import privsep
from agent.sensors import guestio
from agent.sensors import irqbalance
from agent.sensors import irqs as irq_sensor
from agent.sensors import sysfs
from agent.sensors import vfstats
from agent.sensors import vhost

LOG = logging.getLogger(__name__)

RECORD_NAME = 'irq-affinity.json'
RECORD_VERSION = 1
# Seconds between two scans of /proc for an irqbalance process: one read
# per process on the host. The daemon checks again before each steer,
# so an irqbalance started meanwhile is never steered against.
BALANCER_RESCAN = 60.0


def _steering_daemon():
    # Imported at the first call: see agent.privsep.entry_points.
    return privsep.entry_points('irqs')


class IrqGone(errors.NotEnforceable):
    """The interrupt vector is gone (its driver unbound, the NIC reset)."""


class SteeringUnavailable(errors.NotEnforceable):
    """The steering daemon did not start (sudo or rootwrap not set up)."""


def _refused(what, exc):
    if isinstance(exc, FileNotFoundError):
        return IrqGone(f'{what}: {exc}')
    if isinstance(exc, OSError) and exc.errno == errno.EIO:
        # The kernel manages this vector's affinity itself (managed
        # interrupts of multiqueue drivers): no one may write it.
        return errors.NotEnforceable(f'{what}: the kernel manages this '
                                     f'interrupt\'s affinity')
    return errors.NotEnforceable(f'{what}: {exc}')


class Steering:
    """The backend's side of the steering daemon: every call goes there."""

    def steer(self, nic, irq, cpus, banned):
        """(affinity, effective, whether irqbalance had banned it before)."""
        what = f'steer IRQ {irq} of {nic}'
        try:
            affinity, effective, was_banned = _steering_daemon().steer(
                nic, irq, sorted(cpus), banned)
        except privsep.DAEMON_ERRORS as exc:
            raise SteeringUnavailable(
                f'{what}: the steering daemon is unavailable: {exc}') from exc
        except (OSError, ValueError, TypeError) as exc:
            raise _refused(what, exc) from exc
        return frozenset(affinity), frozenset(effective), was_banned

    def balancer_state(self):
        """Why irqbalance cannot be told to leave IRQs alone, or None."""
        try:
            return _steering_daemon().balancer_state()
        except privsep.DAEMON_ERRORS + (OSError,) as exc:
            return f'the steering daemon cannot ask irqbalance: {exc}'

    def pin_threads(self, uuid, pid, tids, cpus):
        what = f'pin the vhost workers of {uuid}'
        try:
            return _steering_daemon().pin_threads(pid, sorted(tids),
                                                  sorted(cpus))
        except privsep.DAEMON_ERRORS as exc:
            raise SteeringUnavailable(
                f'{what}: the steering daemon is unavailable: {exc}') from exc
        except ProcessLookupError as exc:
            raise errors.DomainGone(f'{what}: {exc}') from exc
        except (OSError, ValueError, TypeError) as exc:
            raise errors.NotEnforceable(f'{what}: {exc}') from exc


class Found:
    """What the agent found of an IRQ before it first steered it."""

    def __init__(self, nic, affinity, banned_before=False):
        self.nic = nic
        self.affinity = frozenset(affinity)
        # irqbalance had banned it already (an operator's --banirq): the
        # agent must not give it back to irqbalance when done.
        self.banned_before = banned_before

    def __eq__(self, other):
        return vars(self) == vars(other)


class FoundRecord:
    """``{irq: Found}``, kept in a JSON file.

    Written before the first steer of an IRQ, so a crash after the
    write still leaves what to restore. A file that cannot be read is
    said once and treated as empty: the agent then records afresh.
    """

    def __init__(self, path):
        self.path = path
        self._entries = None

    def _load(self):
        try:
            with open(self.path) as f:
                data = json.load(f)
            entries = {int(irq): Found(entry['nic'], entry['found'],
                                       bool(entry.get('banned_before')))
                       for irq, entry in data['irqs'].items()}
        except FileNotFoundError:
            entries = {}
        except (OSError, ValueError, KeyError, TypeError,
                AttributeError) as exc:
            LOG.warning('Ignoring the IRQ affinity record %s: %s',
                        self.path, exc)
            entries = {}
        return entries

    def entries(self):
        if self._entries is None:
            self._entries = self._load()
        return self._entries

    def get(self, irq):
        return self.entries().get(irq)

    def found(self, irq):
        entry = self.get(irq)
        return None if entry is None else entry.affinity

    def keep(self, irq, found):
        entries = dict(self.entries())
        entries[irq] = found
        self._write(entries)

    def drop(self, irq):
        if irq in self.entries():
            entries = dict(self.entries())
            del entries[irq]
            self._write(entries)

    def _write(self, entries):
        data = {'version': RECORD_VERSION, 'irqs': {
            str(irq): {'nic': found.nic, 'found': sorted(found.affinity),
                       'banned_before': found.banned_before}
            for irq, found in sorted(entries.items())}}
        directory = os.path.dirname(self.path)
        try:
            os.makedirs(directory, mode=0o750, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=directory, prefix='.irq-')
            with os.fdopen(fd, 'w') as f:
                json.dump(data, f, indent=1)
                f.flush()
                os.fsync(f.fileno())
            # Atomic: a reader (or a crash) sees the old record or the new.
            os.replace(temporary, self.path)
        except OSError as exc:
            raise errors.NotEnforceable(
                f'cannot keep the IRQ affinity record {self.path}: {exc}'
            ) from exc
        self._entries = entries


def uplinks_of(root, name, nic_names, _seen=()):
    """The uplinks (of ``nic_names``) the interface ``name`` goes through.

    Itself if it is one, else those its lower interfaces (a bridge's
    ports, a bond's members, a VLAN's parent) go through.
    """
    if name in nic_names:
        return {name}
    if name in _seen:
        return set()
    found = set()
    for lower in sysfs._lower_interfaces(root, name):
        found |= uplinks_of(root, lower, nic_names, _seen + (name,))
    return found


class _Links:
    """What a guest's domain XML says of its I/O path."""

    def __init__(self, sources, pfs, has_vhost):
        self.sources = sources
        self.pfs = pfs
        self.has_vhost = has_vhost
        # (topology, uplinks): found again when the topology is read
        # again, not each period (a bridge's ports are listed).
        self.nics = (None, frozenset())


class IoPath:
    """The uplinks' IRQs, the guests' uplinks and vhost workers."""

    def __init__(self, root, state_dir, clock, steering=None,
                 network_bridge=None):
        self._root = root
        self._clock = clock
        self._steering = steering
        self._network_bridge = network_bridge or (lambda name: None)
        self.record = FoundRecord(os.path.join(state_dir, RECORD_NAME))
        self._links = {}  # uuid: _Links
        # uuid: (pid, tids) of its vhost workers, listed again when its
        # process changes or one of them ends.
        self._workers = {}
        self._kernel_workers = None
        # (time of the last scan, irqbalance pids), and the reason asked
        # of the daemon for those pids.
        self._balancers = (None, ())
        self._hands_off = ((), None)
        self._said = None

    @property
    def configured(self):
        return self._steering is not None

    # -- the uplinks' interrupts -------------------------------------

    def irqs(self, nics):
        """An IrqState for each vector of each uplink."""
        found = []
        for nic in nics:
            for irq in irq_sensor.nic_irqs(self._root, nic.name):
                routed = irq_sensor.affinity(self._root, irq)
                if routed is None:
                    continue  # gone since the listing
                found.append(backend.IrqState(
                    irq=irq, nic=nic.name, affinity=routed[0],
                    effective=routed[1], found=self.record.found(irq)))
        return tuple(found)

    def hands_off(self):
        """Why the uplinks' interrupts are not the agent's, or None.

        irqbalance's pids are looked for every BALANCER_RESCAN seconds;
        the daemon is asked whether they answer when they change.
        """
        now = self._clock()
        last, pids = self._balancers
        if (last is None or now - last >= BALANCER_RESCAN
                or not all(irqbalance.alive(self._root, p) for p in pids)):
            pids = irqbalance.running(self._root)
            self._balancers = (now, pids)
        if self._hands_off[0] != pids:
            reason = self._steering.balancer_state() if pids else None
            self._hands_off = (pids, reason)
        reason = self._hands_off[1]
        if reason != self._said:
            if reason:
                LOG.warning('Leaving the NICs\' interrupts alone: %s',
                            reason)
            elif self._said:
                LOG.info('irqbalance answers again: NIC interrupts may be '
                         'steered')
            self._said = reason
        return reason

    def steer(self, irq, nic, cpus):
        """Route ``irq`` to ``cpus``, keeping what was found first."""
        now = irq_sensor.affinity(self._root, irq)
        if now is None:
            raise IrqGone(f'IRQ {irq} of {nic} is gone')
        cpus = frozenset(cpus)
        found = self.record.get(irq)
        first = found is None
        if first:
            # Even to where it is already (a claim): from now on it is
            # the agent's, banned in irqbalance, until given back.
            found = Found(nic, now[0])
            self.record.keep(irq, found)
        elif cpus == found.affinity:
            return self._give_back(irq, nic, found)
        affinity, _, was_banned = self._steering.steer(nic, irq, cpus,
                                                       banned=True)
        if first and was_banned:
            # irqbalance had it banned before the agent (an operator's
            # --banirq): it stays banned when the agent gives it back.
            self.record.keep(irq, Found(nic, found.affinity,
                                        banned_before=True))
        return affinity

    def _give_back(self, irq, nic, found):
        """Write back what was found; irqbalance may balance it again."""
        affinity, _, _ = self._steering.steer(
            nic, irq, found.affinity,
            banned=None if found.banned_before else False)
        self.record.drop(irq)
        return affinity

    # -- the guests' links and vhost workers -------------------------

    def learn(self, uuid, xml):
        """Read the guest's interfaces from its (new) domain XML."""
        sources = []
        for kind, name in guestio.interface_sources(xml):
            if kind == 'network':
                # Its bridge, asked of libvirt once per definition; a
                # network of macvtaps or VFs has none and is skipped.
                name = self._network_bridge(name)
            if name is not None:
                sources.append(name)
        pfs = [vf[0] for vf in (vfstats.vf_of(self._root, address)
                                for address in vfstats.vf_addresses(xml))
               if vf is not None]
        self._links[uuid] = _Links(sources, pfs, guestio.uses_vhost(xml))
        self._workers.pop(uuid, None)

    def nics(self, uuid, topology):
        """The uplinks (NicInfo names) the guest's interfaces go through."""
        links = self._links.get(uuid)
        if links is None or not topology.nics:
            return frozenset()
        if links.nics[0] is not topology:
            links.nics = (topology, self._uplinks(links, topology.nics))
        return links.nics[1]

    def _uplinks(self, links, nics):
        names = {nic.name for nic in nics}
        found = {pf for pf in links.pfs if pf in names}
        for source in links.sources:
            by_bridge = {nic.name for nic in nics if nic.bridge == source}
            found |= by_bridge or uplinks_of(self._root, source, names)
        return frozenset(found)

    def new_observation(self):
        """Kernel threads are scanned again, at most once, from now on."""
        self._kernel_workers = None

    def _kernel_table(self):
        if self._kernel_workers is None:
            self._kernel_workers = vhost.kernel_workers(self._root)
        return self._kernel_workers

    def workers(self, uuid, pid):
        """The tids of the guest's vhost workers, listed once per process."""
        links = self._links.get(uuid)
        if pid is None or links is None or not links.has_vhost:
            return ()
        cached = self._workers.get(uuid)
        if cached is None or cached[0] != pid:
            cached = (pid, vhost.workers(self._root, pid, self._kernel_table))
            self._workers[uuid] = cached
        return cached[1]

    def io_thread_cpus(self, uuid, pid, read_text):
        """The union of the CPUs the guest's vhost workers may run on."""
        for attempt in (1, 2):
            tids = self.workers(uuid, pid)
            allowed = [vhost.allowed_cpus(self._root, tid, read_text)
                       for tid in tids]
            if None not in allowed:
                return frozenset().union(*allowed)
            # A worker ended (an interface unplugged): list them again.
            self._workers.pop(uuid, None)
        return frozenset()

    def pin(self, uuid, pid, cpus):
        tids = self.workers(uuid, pid)
        if not tids:
            raise errors.NotEnforceable(f'{uuid} has no vhost worker')
        try:
            return self._steering.pin_threads(uuid, pid, tids, cpus)
        except errors.HostError:
            # Its workers may have changed: list them again next time.
            self._workers.pop(uuid, None)
            raise

    def forget_all_but(self, live):
        for kept in (self._links, self._workers):
            for uuid in set(kept) - live:
                del kept[uuid]
