"""The real backend: libvirt for guests, sysfs and /proc for the host.

It observes and acts; it decides nothing. Every libvirt error is turned
into one of :mod:`nova_numa_policy.contracts.errors`
(:mod:`agent.backend.calls`). It composes the backend's concerns: the
host's locality signal and each guest's measure of it
(:mod:`agent.backend.signals`), each guest's network rate
(:mod:`agent.backend.traffic`) and its ``numa_maps`` reads within a
budget (:mod:`agent.backend.observation`); what stays here is the host
(topology, load), the guests' reading and the actions on them.

Per guest it also reads its qemu process (found by
:mod:`agent.sensors.guestproc`): memory per node from ``numa_maps``, the
kernel's sampled accesses of its vCPU threads where NUMA balancing runs
(:mod:`agent.sensors.numafaults`) or, where it does not, the CPU's
samples of their memory accesses (:mod:`agent.backend.samples`) or,
where the CPU monitors memory bandwidth, the bytes those threads moved
per node (:mod:`agent.backend.bandwidth`), how long those threads wait
for a CPU (:mod:`agent.sensors.schedstat`) and, with a page mover
(:class:`agent.backend.pagemoves.PageMover`), moves its pages. Its
network traffic comes from libvirt's interface counters and, for SR-IOV
VFs, from their PF (:mod:`agent.sensors.vfstats`). Its I/O path (its
uplinks, its vhost workers, the uplinks' interrupts) is read and, with
the steering daemon, steered by :mod:`agent.backend.iopath`.
"""

import dataclasses
import logging
import time

import libvirt

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import errors
from nova_numa_policy.contracts import scope
from nova_numa_policy.decisions import enforcement

from agent.backend import arrivals
from agent.backend import calls
from agent.backend import domxml
from agent.backend import iopath
from agent.backend import observation
from agent.backend import signals
from agent.backend import traffic
from agent.sensors import discovery
from agent.sensors import guestio
from agent.sensors import guestproc
from agent.sensors import irqs
from agent.sensors import numafaults
from agent.sensors import numamaps
from agent.sensors import schedstat
from agent.sensors import sysfs
from agent.sensors import vfstats

LOG = logging.getLogger(__name__)

# Rates (node CPU load, guest request rate, vCPU wait) are measured over
# at least this long; observations closer together reuse the last ones. See
# guestio.windowed.
MIN_RATE_WINDOW = 1.0
# Where the agent keeps what must outlive it ([numa_policy_agent]
# state_dir): the affinity of each IRQ it steered, as it found it.
STATE_DIR = '/var/lib/nova/numa-policy'


class LibvirtBackend(backend.Backend):
    name = 'libvirt'

    def __init__(self, connection, root='/', uplinks=None,
                 clock=time.monotonic, page_mover=None,
                 pid_dir=guestproc.PID_DIR, rate_window=MIN_RATE_WINDOW,
                 sleep=time.sleep, agent_scope=scope.Scope(),
                 cpu_partition=scope.CpuPartition(),
                 vf_traffic=vfstats.query,
                 monitor_groups=None, guest_samples=None,
                 numa_maps_bound=None, read_timer=time.perf_counter,
                 steering=None, state_dir=STATE_DIR):
        self._connection = connection
        # Which guests are ours to manage (nova_numa_policy.contracts.scope),
        # and the CPUs nova's configuration gives them on this host.
        self._scope = agent_scope
        self._cpu_partition = cpu_partition
        # How the host's uplinks are found (agent.sensors.discovery).
        self._uplinks = uplinks or discovery.Uplinks()
        self._root = root
        self._clock = clock
        self._sleep = sleep
        self._topology = None
        self._topology_generation = None
        self._rate_window = rate_window
        # ((time, per-CPU times), (node loads, loads of the nodes' floating
        # CPUs)) of the last measured window.
        self._cpu_window = None
        # Parsed domain XML per uuid, reused while the XML is unchanged:
        # parsing is the largest cost of a period with many guests.
        self._facts = {}
        self._traffic = traffic.GuestTraffic(root, clock, rate_window,
                                             vf_traffic)
        # -- numa_maps reads, bounded (agent/backend/observation.py) ---
        # Which guests' numa_maps an observation reads, within a budget
        # of 1 % of one core at the default period unless told otherwise,
        # and each guest's last reading; a guest whose pages move_pages
        # moved is read next. Reads are timed in wall time: the privsep
        # daemon reads in its own process, whose CPU time is not ours to
        # see (wall >= CPU for the kernel's page walk).
        self.numa_maps_bound = (numa_maps_bound
                                or observation.NumaMapsBound())
        self._read_timer = read_timer
        # -- end of numa_maps reads ------------------------------------
        self._page_mover = page_mover
        self._pid_dir = pid_dir
        self._can_move_pages = None
        self._numa_maps_warned = False
        # (pid, {tid: vCPU}) per uuid: a guest's vCPU threads, listed
        # again when its process or its vCPU count changes.
        self._vcpu_threads = {}
        # ((time, (ran ns, waited ns)), wait share) of each guest's vCPU
        # threads' last measured window.
        self._waits = {}
        self._has_schedstat = None
        # Memory bandwidth with the monitoring daemon's client, hardware
        # samples with the sampling daemon's: each only when given.
        self._signal = signals.LocalitySignal(
            root, clock, rate_window, monitor_groups, guest_samples)
        # The vCPU threads' sched and schedstat files, kept open.
        self._thread_files = guestproc.OpenFiles()
        # The guests' uplinks always; their vhost workers and the
        # uplinks' interrupts with the steering daemon only.
        self._io_path = iopath.IoPath(root, state_dir, clock, steering,
                                      self._network_bridge)
        self._irq_hands_off = None
        # Live-migrated guests whose arrival was handled (arrivals.py).
        self._arrivals = arrivals.ArrivalRecord(state_dir)
        self._running = frozenset()

    def _conn(self):
        return self._connection.get()

    def _call(self, what, func, *args):
        try:
            return func(*args)
        except libvirt.libvirtError as exc:
            raise calls.translate(self._connection, exc, what)

    def capabilities(self):
        caps = {backend.CAP_VCPU_PINNING, backend.CAP_EMULATOR_PINNING}
        if self.live_nodeset_supported():
            caps.add(backend.CAP_LIVE_NODESET)
        if self.page_migration_supported():
            caps.add(backend.CAP_PAGE_MIGRATION)
        if self.locality_signal():
            caps.add(backend.CAP_ACCESS_COUNTERS)
        if self._io_path.configured:
            caps.update((backend.CAP_IRQ_STEERING,
                         backend.CAP_IO_THREAD_PINNING))
        return frozenset(caps)

    def locality_signal(self):
        """The host's signal, or None (:meth:`LocalitySignal.choose`)."""
        return self._signal.choose(self.topology())

    def samples_missing(self):
        """Why the guests' memory accesses are not sampled here, or None."""
        return self._signal.samples_missing()

    def bandwidth_missing(self):
        """Why memory bandwidth per guest is not read here, or None."""
        return self._signal.bandwidth_missing(self.topology())

    def measurements(self):
        """The locality signal, run-queue delay, interface traffic."""
        found = set(super().measurements())
        found.add(backend.MEASURE_INTERFACE_TRAFFIC)
        if self.cpu_wait_measured():
            found.add(backend.MEASURE_CPU_WAIT)
        return frozenset(found)

    def page_migration_supported(self):
        """A page mover is configured and the kernel has move_pages(2)."""
        if self._page_mover is None:
            return False
        if self._can_move_pages is None:
            # The kernel does not change while the agent runs.
            self._can_move_pages = self._page_mover.supported()
        return self._can_move_pages

    def live_nodeset_supported(self):
        """Whether this hypervisor can change a running guest's nodeset.

        libvirt's qemu driver can only on a privileged (system) connection
        with the cpuset cgroup controller; the test driver always can.
        """
        conn = self._conn()
        kind = self._call('getType', conn.getType)
        if kind == 'TEST':
            return True
        return kind == 'QEMU' and '/session' not in self._connection.uri

    def topology(self):
        conn = self._conn()
        if (self._topology is None
                or self._topology_generation != self._connection.generation):
            caps = self._call('getCapabilities', conn.getCapabilities)
            self._topology = self._reserving(
                self._uplinks.discover(caps, self._root))
            self._topology_generation = self._connection.generation
        return self._topology

    def _reserving(self, topology):
        """``topology`` with the CPUs no I/O may be steered to.

        Those the kernel isolates (a boot option) and those nova
        dedicates to pinned guests: neither changes while the agent runs.
        """
        return dataclasses.replace(topology, reserved_cpus=(
            irqs.isolated_cpus(self._root)
            | self._cpu_partition.dedicated))

    def _network_bridge(self, name):
        """The bridge of libvirt network ``name``, or None if it has none."""
        try:
            return self._conn().networkLookupByName(name).bridgeName()
        except libvirt.libvirtError as exc:
            # A network of macvtaps or VFs has no bridge; a network gone
            # leaves the guest's interface without an uplink here.
            LOG.debug('No bridge for network %s: %s', name, exc)
            return None

    def hostname(self):
        conn = self._conn()
        return self._call('getHostname', conn.getHostname)

    def _usage(self, topology):
        # What guests without dedicated CPUs may use of each node, and
        # how busy that is: the scheduler's capacity for them.
        floating = self._cpu_partition.floating_by_node(topology.nodes)

        def loads(before, now):
            before = now if before is None else before
            return (discovery.node_loads(before[1], now[1], topology.nodes),
                    discovery.floating_loads(before[1], now[1], floating))

        sample = (self._clock(), discovery.read_cpu_times(self._root))
        self._cpu_window = guestio.windowed(self._cpu_window, sample, loads,
                                            self._rate_window)
        node_loads, loads_of_floating = self._cpu_window[1]
        return discovery.usage(topology.nodes, node_loads,
                               sysfs.node_free_memory_mb(self._root),
                               floating, loads_of_floating)

    def _domain_facts(self, dom):
        uuid = dom.UUIDString()
        xml = dom.XMLDesc(0)
        cached = self._facts.get(uuid)
        if cached is not None and cached[0] == xml:
            return cached[1]
        facts = domxml.parse(xml, self._scope)
        self._facts[uuid] = (xml, facts)
        self._traffic.learn(uuid, xml)
        self._io_path.learn(uuid, xml)
        return facts

    def _pid(self, dom, uuid):
        return guestproc.qemu_pid(self._root, dom.name(), uuid,
                                  self._pid_dir)

    def _numa_maps(self, pid):
        if self._page_mover is not None:
            # qemu runs as its own user: only the privsep daemon may read.
            return self._page_mover.numa_maps(pid)
        return numamaps.read(self._root, pid)

    def _memory_per_node(self, pid, uuid):
        if pid is None:
            return {}
        # Read only when the bound says so (agent/backend/observation.py): a
        # guest not read this round keeps its last reading, reported as
        # it was. A change of its live definition forces a read.
        bound = self.numa_maps_bound
        definition = self._facts.get(uuid, (None,))[0]
        if not bound.due(uuid, pid, definition):
            return bound.last(uuid)
        start = self._read_timer()
        try:
            text = self._numa_maps(pid)
        except (OSError, errors.HostError) as exc:
            bound.failed(uuid)
            # Not this period's business to fail for: the report just
            # lacks the guest's memory placement. Said once loudly (a
            # deployment problem: privsep, users), then quietly.
            log = LOG.debug if self._numa_maps_warned else LOG.warning
            self._numa_maps_warned = True
            log('No numa_maps for %s (pid %s): %s', uuid, pid, exc)
            return {}
        memory = numamaps.memory_mb_from_text(text)
        if text is None:
            bound.failed(uuid)
        else:
            bound.read(uuid, pid, memory, self._read_timer() - start,
                       definition)
        return memory

    def _vcpu_thread_ids(self, pid, uuid, vcpu_count):
        """``{tid: vCPU}`` of the guest's vCPU threads, listed once."""
        cached = self._vcpu_threads.get(uuid)
        if cached is None or cached[0] != pid or len(cached[1]) != vcpu_count:
            cached = (pid, numafaults.vcpu_threads(self._root, pid))
            self._vcpu_threads[uuid] = cached
        return cached[1]

    def _vcpu_faults(self, pid, uuid, vcpu_count):
        """The sampled faults (ThreadFaults) of the guest's vCPU threads."""
        if pid is None:
            return []
        tids = self._vcpu_thread_ids(pid, uuid, vcpu_count)
        threads = numafaults.read(self._root, pid, tids,
                                  self._thread_files.read_text)
        if len(threads) != len(tids):
            # A thread went (vCPU unplug, process restart): list again.
            self._vcpu_threads.pop(uuid, None)
        return threads

    def cpu_wait_measured(self):
        """Whether the kernel keeps each thread's run-queue delay."""
        if self._has_schedstat is None:
            # A kernel build option: it does not change while we run.
            self._has_schedstat = schedstat.available(self._root)
        return self._has_schedstat

    def _vcpu_times(self, pid, uuid, vcpu_count):
        """(time, (ran ns, waited ns)) of the guest's vCPU threads."""
        if pid is None or not self.cpu_wait_measured():
            return None
        tids = self._vcpu_thread_ids(pid, uuid, vcpu_count)
        times = (schedstat.read(self._root, pid, tids,
                                self._thread_files.read_text)
                 if tids else None)
        if times is None:
            self._vcpu_threads.pop(uuid, None)
            return None
        return self._clock(), times

    def _cpu_wait(self, pid, uuid, vcpu_count):
        """The vCPUs' share of time waiting for a CPU, or None."""
        sample = self._vcpu_times(pid, uuid, vcpu_count)
        if sample is None:
            # Unreadable now: the next readable sample starts afresh.
            self._waits.pop(uuid, None)
            return None
        window = guestio.windowed(
            self._waits.get(uuid), sample,
            lambda before, now: schedstat.wait_share(
                before and before[1], now[1]),
            self._rate_window)
        self._waits[uuid] = window
        return window[1]

    def _start_rate_windows(self, domains):
        """Take every rate's first sample, then wait one window.

        The first observation would otherwise report every node idle and
        every guest silent: a one-shot run (``--once``) prints nothing
        else, and a daemon's first report reaches the schedulers.
        """
        self._cpu_window = ((self._clock(),
                             discovery.read_cpu_times(self._root)), ({}, {}))
        self._traffic.new_observation()
        for dom in domains:
            try:
                uuid = self._domain_facts(dom).uuid
                self._traffic.start(dom, uuid)
                self._cpu_wait(self._pid(dom, uuid), uuid,
                               len(dom.vcpus()[0]))
            except libvirt.libvirtError as exc:
                # Gone or changing: the observation itself decides.
                LOG.debug('No first rate sample of a domain: %s', exc)
        self._sleep(self._rate_window)

    def _instance(self, dom, host_cpus, topology, signal):
        facts = self._domain_facts(dom)
        infos, maps = dom.vcpus()
        emulator = calls.emulator_affinity(dom)
        pid = self._pid(dom, facts.uuid)
        memory = self._memory_per_node(pid, facts.uuid)
        vcpu_cpus = tuple(info[3] for info in infos)
        accesses, penalties = self._signal.measure(signal, self._threads(
            facts, pid, topology, vcpu_cpus, memory))
        io_rate = self._traffic.rate(dom, facts.uuid)
        cpu_wait = self._cpu_wait(pid, facts.uuid, len(vcpu_cpus))
        io_threads = (self._io_path.io_thread_cpus(
            facts.uuid, pid, self._thread_files.read_text)
            if self._io_path.configured else frozenset())
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
            nics=self._io_path.nics(facts.uuid, topology),
            io_thread_cpus=io_threads,
            nic_locality=(facts.requested.nic_locality.value
                          if facts.requested else None),
            blind_arrival=(facts.chosen_by_source
                           and not self._arrivals.handled(facts.uuid,
                                                          dom.ID())))

    def _threads(self, facts, pid, topology, vcpu_cpus, memory):
        """The guest as its locality signal measures it."""
        uuid, count = facts.uuid, len(vcpu_cpus)
        return signals.GuestThreads(
            uuid=uuid, pid=pid, topology=topology, vcpu_cpus=vcpu_cpus,
            memory=memory, memory_mode=facts.memory_mode,
            tids=lambda: (self._vcpu_thread_ids(pid, uuid, count)
                          if pid is not None else {}),
            faults=lambda: self._vcpu_faults(pid, uuid, count))

    def observe(self):
        topology = self.topology()
        conn = self._conn()
        domains = self._call(
            'listAllDomains', conn.listAllDomains,
            libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE)
        if self._cpu_window is None:
            self._start_rate_windows(domains)
        self._traffic.new_observation()
        self._io_path.new_observation()
        host_cpus = self._cpu_partition.floating(
            cpu for node in topology.nodes for cpu in node.cpus)
        signal = self._signal.collect(self.locality_signal(),
                                      dict(self._vcpu_threads))
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
        self._signal.sweep(live, signal)
        irq_states, hands_off = self._interrupts(topology)
        return backend.HostSnapshot(
            topology=topology, usage=self._usage(topology),
            instances=tuple(instances), taken_at=self._clock(),
            locality_signal=signal, irqs=irq_states,
            irq_hands_off=hands_off)

    def _interrupts(self, topology):
        """(the uplinks' IrqStates, why they are not ours) or ((), None).

        Nothing is read without the steering daemon or without uplinks.
        """
        if not self._io_path.configured or not topology.nics:
            self._irq_hands_off = None
            return (), None
        self._irq_hands_off = self._io_path.hands_off()
        return self._io_path.irqs(topology.nics), self._irq_hands_off

    def _forget_all_but(self, live):
        """Drop what is kept per guest for guests no longer running."""
        for kept in (self._facts, self._vcpu_threads, self._waits):
            for uuid in set(kept) - live:
                del kept[uuid]
        self._traffic.forget_all_but(live)
        self._io_path.forget_all_but(live)
        self._thread_files.sweep()

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
        conn = self._conn()
        return self._call(f'lookup {instance_uuid}',
                          conn.lookupByUUIDString, instance_uuid)

    def _cpumap_size(self):
        return max(max(n.cpus, default=-1) for n in self.topology().nodes) + 1

    def pin_vcpu(self, instance_uuid, vcpu, cpus):
        dom = self._domain(instance_uuid)
        # pinVcpu affects the running guest only: its persistent definition
        # stays nova's, which regenerates it on hard reboot anyway.
        self._act(dom, f'pin vCPU {vcpu} of {instance_uuid}', dom.pinVcpu,
                  vcpu, calls.cpumap(cpus, self._cpumap_size()))

    def pin_emulator(self, instance_uuid, cpus):
        """Pin the emulator's threads, QEMU's I/O threads among them.

        nova pins a guest's ``<iothreadpin>`` with its ``<emulatorpin>``
        where it pins at all; a guest whose emulator moved while its I/O
        thread stayed would run part of its emulation on the old node.
        """
        dom = self._domain(instance_uuid)
        cpumap = calls.cpumap(cpus, self._cpumap_size())
        self._act(dom, f'pin emulator of {instance_uuid}', dom.pinEmulator,
                  cpumap, libvirt.VIR_DOMAIN_AFFECT_LIVE)
        for iothread, _ in self._act(dom, f'I/O threads of {instance_uuid}',
                                     calls.io_threads, dom):
            self._act(dom, f'pin I/O thread {iothread} of {instance_uuid}',
                      dom.pinIOThread, iothread, cpumap,
                      libvirt.VIR_DOMAIN_AFFECT_LIVE)

    def set_nodeset(self, instance_uuid, nodes):
        dom = self._domain(instance_uuid)
        try:
            facts = self._domain_facts(dom)
        except libvirt.libvirtError as exc:
            raise calls.translate(self._connection, exc, 'set nodeset')
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
        dom_id = self._call(f'id of {instance_uuid}', dom.ID)
        self._arrivals.keep(instance_uuid, dom_id,
                            self._running | {instance_uuid})

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
            self.numa_maps_bound.moved(pid)
        if result.failed:
            LOG.info('%s: %d pages could not be moved to node %d',
                     instance_uuid, result.failed, target_node)
        if result.skipped:
            LOG.info('%s: %d pages not moved now: the kernel\'s NUMA '
                     'balancing has marked them for a hinting fault '
                     '(kernel.numa_balancing); they move once the guest '
                     'touches them again', instance_uuid, result.skipped)
        return result.moved

    def steer_irq(self, irq, nic, cpus):
        """Route ``irq`` of uplink ``nic`` to ``cpus``; its affinity after.

        The affinity found before the first steer is recorded first
        (:class:`agent.backend.iopath.FoundRecord`); writing it back
        gives the IRQ back to irqbalance, if one runs.
        """
        if not self._io_path.configured:
            raise errors.NotEnforceable(
                'IRQ steering is not available: no steering daemon '
                'configured ([numa_policy_agent] io_path_steering)')
        if self._irq_hands_off:
            raise errors.NotEnforceable(
                f'NIC interrupts are left alone: {self._irq_hands_off}')
        if nic not in {uplink.name for uplink in self.topology().nics}:
            raise errors.NotEnforceable(f'{nic} is not an uplink of this '
                                        f'host')
        return self._io_path.steer(irq, nic, cpus)

    def pin_io_threads(self, instance_uuid, cpus):
        """Restrict the guest's vhost workers to ``cpus``."""
        if not self._io_path.configured:
            raise errors.NotEnforceable(
                'vhost worker pinning is not available: no steering daemon '
                'configured ([numa_policy_agent] io_path_steering)')
        pid = self._running_pid(instance_uuid, 'pin I/O threads',
                                learn=True)
        return self._io_path.pin(instance_uuid, pid, cpus)

    def _running_pid(self, instance_uuid, what, learn=False):
        """The QEMU pid of a running guest, for ``what`` to act on.

        ``learn``: read the domain's facts first (its uplinks and
        threads), for a guest the agent may not have observed yet.
        """
        dom = self._domain(instance_uuid)
        try:
            if learn:
                self._domain_facts(dom)
            pid = self._pid(dom, instance_uuid)
        except libvirt.libvirtError as exc:
            raise calls.translate(self._connection, exc, what)
        if pid is None:
            if not calls.active(dom):
                raise errors.DomainGone(f'{instance_uuid}: not running')
            raise errors.NotEnforceable(
                f'{instance_uuid}: no qemu process found (pidfile in '
                f'{self._pid_dir} missing or not its process)')
        return pid
