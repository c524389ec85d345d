"""The guests as the libvirt backend observes them, one InstanceState each.

Per guest: its domain XML (parsed once while unchanged), its qemu
process (found by :mod:`agent.sensors.guestproc`), its memory per node
(:mod:`agent.backend.guestmemory`), its vCPU threads' faults and waits
(:mod:`agent.backend.vcputhreads`), its locality signal
(:mod:`agent.backend.signals`), its network rate
(:mod:`agent.backend.traffic`), its I/O path (:mod:`agent.backend.iopath`)
and whether its arrival by live migration was handled
(:mod:`agent.backend.arrivals`).
"""

import functools

import libvirt
from oslo_log import log as logging

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import errors
from nova_numa_policy.contracts import scope
from nova_numa_policy.contracts import tiers
from nova_numa_policy.decisions import toptier

from agent.backend import arrivals
from agent.backend import calls
from agent.backend import domxml
from agent.backend import guestmemory
from agent.backend import hostview
from agent.backend import iopath
from agent.backend import pagetemps
from agent.backend import signals
from agent.backend import traffic
from agent.backend import vcputhreads
from agent.sensors import guestproc

LOG = logging.getLogger(__name__)


def _temperature(page_mover, access_monitor=None):
    """A PageTemperature where pages move and the kernel tracks writes."""
    if page_mover is None:
        return None
    if not pagetemps.kernel_tracks_writes():
        LOG.info('This kernel keeps no soft-dirty bits (CONFIG_MEM_SOFT_'
                 'DIRTY): tiered guests\' written pages are not measured, '
                 'and the tiering loop holds their floor only')
        return None
    return pagetemps.PageTemperature(page_mover, access_monitor)


class GuestObserver:
    """Reads the running guests of ``connection`` and what they hold.

    ``paths``, ``timing``, ``share``, ``helpers``: the values of
    :mod:`agent.backend.settings`.
    """

    def __init__(self, connection, paths, timing, share, helpers):
        self._connection = connection
        self._root = paths.root
        self.pid_dir = paths.pid_dir
        self._scope = share.agent_scope
        # Parsed domain XML per uuid, reused while the XML is unchanged:
        # parsing is the largest cost of a period with many guests.
        self._facts = {}
        self._running = frozenset()
        self.memory = guestmemory.GuestMemory(paths.root, helpers.page_mover,
                                              timing)
        # What tiered guests wrote, with the page mover only.
        self.temperature = _temperature(helpers.page_mover,
                                        helpers.access_monitor)
        self._temperature_warned = False
        self.threads = vcputhreads.VcpuThreads(paths.root, timing)
        self.traffic = traffic.GuestTraffic(
            paths.root, timing.clock, timing.rate_window, helpers.vf_traffic)
        # Memory bandwidth with the monitoring daemon's client, hardware
        # samples with the sampling daemon's: each only when given.
        self.signal = signals.LocalitySignal(
            paths.root, timing.clock, timing.rate_window,
            helpers.monitor_groups, helpers.guest_samples)
        # The guests' uplinks always; their vhost workers and the
        # uplinks' interrupts with the steering daemon only.
        self.io_path = iopath.IoPath(
            paths.root, paths.state_dir, timing.clock, helpers.steering,
            functools.partial(hostview.network_bridge, connection))
        # Live-migrated guests whose arrival was handled.
        self.arrivals = arrivals.ArrivalRecord(paths.state_dir)

    def close(self):
        """What watches the guests on the agent's behalf stops."""
        if self.temperature is not None:
            self.temperature.close()

    @property
    def running(self):
        """The uuids of the guests seen at the last observation."""
        return self._running

    def facts(self, dom):
        """The guest's :class:`agent.backend.domxml` facts, parsed once."""
        uuid = dom.UUIDString()
        xml = dom.XMLDesc(0)
        cached = self._facts.get(uuid)
        if cached is not None and cached[0] == xml:
            return cached[1]
        facts = domxml.parse(xml, self._scope)
        self._facts[uuid] = (xml, facts)
        self.traffic.learn(uuid, xml)
        self.io_path.learn(uuid, xml)
        return facts

    def pid(self, dom, uuid):
        """The pid of the guest's qemu process, or None."""
        return guestproc.qemu_pid(self._root, dom.name(), uuid,
                                  self.pid_dir)

    def start_rate_windows(self, domains):
        """Take each guest's first traffic and vCPU-wait sample."""
        self.traffic.new_observation()
        for dom in domains:
            try:
                uuid = self.facts(dom).uuid
                self.traffic.start(dom, uuid)
                self.threads.cpu_wait(self.pid(dom, uuid), uuid,
                                      len(dom.vcpus()[0]))
            except libvirt.libvirtError as exc:
                # Gone or changing: the observation itself decides.
                LOG.debug('No first rate sample of a domain: %s', exc)

    def observe(self, domains, topology, host_cpus, signal):
        """(InstanceStates of ``domains``, the signal that measured them).

        ``signal``: the host's locality signal, or None.
        """
        self.traffic.new_observation()
        self.io_path.new_observation()
        signal = self.signal.collect(signal, self.threads.listed())
        instances = []
        for dom in domains:
            try:
                instances.append(self._instance(dom, host_cpus, topology,
                                                signal))
            except libvirt.libvirtError as exc:
                error = calls.translate(self._connection, exc, 'observe')
                if isinstance(error, errors.ConnectionLost):
                    raise error
                # Gone or shut off since the listing: not ours to report.
                LOG.debug('Skipping a domain that changed while observed: '
                          '%s', exc)
        live = {i.uuid for i in instances}
        self._running = frozenset(live)
        self._forget_all_but(live)
        self.signal.sweep(live, signal)
        return tuple(instances), signal

    def _forget_all_but(self, live):
        """Drop what is kept per guest for guests no longer running."""
        for uuid in set(self._facts) - live:
            del self._facts[uuid]
        self.threads.forget_all_but(live)
        self.traffic.forget_all_but(live)
        self.io_path.forget_all_but(live)
        if self.temperature is not None:
            self.temperature.forget_all_but(live)

    def _memory(self, pid, uuid):
        # A change of its live definition forces a read.
        definition = self._facts.get(uuid, (None,))[0]
        return self.memory.per_node(pid, uuid, definition)

    def _written(self, facts, pid, topology):
        """{node: MB} a ``tiered`` guest wrote over the period, or None.

        Measured only where the tiering loop can use it: a tiered guest,
        a host with a lower tier, a page mover.
        """
        requested = facts.requested.memory_tiers if facts.requested else None
        if (self.temperature is None or pid is None or requested is None
                or requested.mode != tiers.TierMode.TIERED
                or not toptier.has_lower_tier(topology)):
            return None
        try:
            return self.temperature.census(facts.uuid, pid)
        except (OSError, errors.HostError) as exc:
            # The report and the floor do without it; said once loudly.
            log = LOG.debug if self._temperature_warned else LOG.warning
            self._temperature_warned = True
            log('No census of the pages %s (pid %s) writes: %s',
                facts.uuid, pid, exc)
            return None

    def _instance(self, dom, host_cpus, topology, signal):
        facts = self.facts(dom)
        infos, maps = dom.vcpus()
        emulator = calls.emulator_affinity(dom)
        pid = self.pid(dom, facts.uuid)
        memory = self._memory(pid, facts.uuid)
        vcpu_cpus = tuple(info[3] for info in infos)
        accesses, penalties = self.signal.measure(signal, self._threads(
            facts, pid, topology, vcpu_cpus, memory))
        io_rate = self.traffic.rate(dom, facts.uuid)
        cpu_wait = self.threads.cpu_wait(pid, facts.uuid, len(vcpu_cpus))
        io_threads = (self.io_path.io_thread_cpus(
            facts.uuid, pid, self.threads.files.read_text)
            if self.io_path.configured else frozenset())
        return backend.InstanceState(
            uuid=facts.uuid,
            requested_policy=facts.requested.value if facts.requested
            else None,
            io_intensity=(facts.requested.io_intensity.value
                          if facts.requested else None),
            hands_off_reason=facts.hands_off_reason,
            vcpu_cpus=vcpu_cpus,
            vcpu_affinity=tuple(calls.cpus_from_map(m) for m in maps),
            vcpu_time_ns=tuple(info[2] for info in infos),
            cpu_wait=cpu_wait,
            memory_mb_per_node=memory,
            io_rate=io_rate,
            accesses_per_node=accesses,
            access_signal=signal if accesses is not None else None,
            vcpu_penalty=penalties,
            memory_mb=facts.memory_mb,
            memory_mode=facts.memory_mode,
            memory_nodes=facts.memory_nodes,
            emulator_affinity=emulator,
            allowed_cpus=scope.bound(facts.allowed_cpus, host_cpus),
            nics=self.io_path.nics(facts.uuid, topology),
            io_thread_cpus=io_threads,
            nic_locality=(facts.requested.nic_locality.value
                          if facts.requested else None),
            requested_tiers=(facts.requested.memory_tiers
                             if facts.requested else tiers.ANY),
            written_mb_per_node=self._written(facts, pid, topology),
            blind_arrival=(facts.chosen_by_source
                           and not self.arrivals.handled(facts.uuid,
                                                         dom.ID())))

    def _threads(self, facts, pid, topology, vcpu_cpus, memory):
        """The guest as its locality signal measures it."""
        uuid, count = facts.uuid, len(vcpu_cpus)
        return signals.GuestThreads(
            uuid=uuid, pid=pid, topology=topology, vcpu_cpus=vcpu_cpus,
            memory=memory, memory_mode=facts.memory_mode,
            tids=lambda: (self.threads.ids(pid, uuid, count)
                          if pid is not None else {}),
            faults=lambda: self.threads.faults(pid, uuid, count))
