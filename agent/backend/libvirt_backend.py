"""The real backend: libvirt for guests, sysfs and /proc for the host.

It observes and acts; it decides nothing. Every libvirt error is turned
into one of :mod:`nova_numa_policy.contracts.errors` so the loop can
tell "try again later" (ConnectionLost), "forget it" (DomainGone) and
"cannot here" (NotEnforceable) apart.

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
VFs, from their PF (:mod:`agent.sensors.vfstats`).
"""

import logging
import time

import libvirt

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import errors
from nova_numa_policy.contracts import locality
from nova_numa_policy.contracts import scope
from nova_numa_policy.decisions import enforcement

from agent.backend import bandwidth
from agent.backend import connection as connection_mod
from agent.backend import domxml
from agent.backend import observation
from agent.sensors import discovery
from agent.sensors import guestio
from agent.sensors import guestproc
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


def _translate(connection, exc, what):
    code = exc.get_error_code()
    if code == libvirt.VIR_ERR_NO_DOMAIN:
        return errors.DomainGone(f'{what}: domain is gone')
    if connection_mod.is_connection_error(exc):
        connection.lost(exc)
        return errors.ConnectionLost(f'{what}: {exc}')
    # Anything else is the host refusing this call: an invalid or
    # unsupported operation, or EPERM/EACCES arriving as a system error.
    # Retrying the same call next period would fail the same way.
    return errors.NotEnforceable(f'{what}: {exc}')


def _active(dom):
    try:
        return dom.isActive() == 1
    except libvirt.libvirtError:
        return False


def cpumap(cpus, size):
    return tuple(cpu in cpus for cpu in range(size))


def cpus_from_map(bits):
    return frozenset(i for i, on in enumerate(bits) if on)


class LibvirtBackend(backend.Backend):
    name = 'libvirt'

    def __init__(self, connection, root='/', physnet_interfaces=None,
                 bridge_interfaces=None, physnet_numa_nodes=None,
                 clock=time.monotonic, page_mover=None,
                 pid_dir=guestproc.PID_DIR, rate_window=MIN_RATE_WINDOW,
                 sleep=time.sleep, agent_scope=scope.Scope(),
                 cpu_partition=scope.CpuPartition(), uplinks_file=None,
                 find_uplinks=None, vf_traffic=vfstats.query,
                 monitor_groups=None, guest_samples=None,
                 numa_maps_bound=None, read_timer=time.perf_counter):
        self._connection = connection
        # Which guests are ours to manage (nova_numa_policy.contracts.scope),
        # and the CPUs nova's configuration gives them on this host.
        self._scope = agent_scope
        self._cpu_partition = cpu_partition
        # Where the driver extension reads the uplinks found here.
        self._uplinks_file = uplinks_file
        # Uplinks found beyond the operator's: (physnet, interface) pairs
        # from nova's SR-IOV device specs and OVSDB, asked at each read.
        self._find_uplinks = find_uplinks or (lambda: ())
        self._root = root
        self._physnet_interfaces = physnet_interfaces or {}
        self._bridge_interfaces = bridge_interfaces or {}
        self._physnet_numa_nodes = physnet_numa_nodes or {}
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
        # Interface devices per uuid, parsed with the facts.
        self._devices = {}
        # (PF interface, VF index) of each SR-IOV VF interface per uuid,
        # found with the facts; each PF's {VF: (bytes, packets)} is asked
        # of the kernel once per observation (vfstats.query).
        self._vfs = {}
        self._vf_traffic = vf_traffic
        self._pf_counters = {}
        self._pf_warned = set()
        # ((time, (bytes, packets)), request rate) of each guest's last
        # measured window.
        self._traffic = {}
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
        # Memory bandwidth per guest (agent.backend.bandwidth), read only with
        # the monitoring daemon's client; the last signal said, and why.
        self._bandwidth_reader = (
            bandwidth.GuestBandwidth(root, monitor_groups)
            if monitor_groups is not None else None)
        # Hardware samples per guest (agent.backend.samples.GuestSamples), with
        # the sampling daemon.
        self._samples = guest_samples
        self._samples_drained_at = None
        # (time, (accesses, penalties)) of each guest's last bandwidth
        # reading: one within a rate window of it is not read anew.
        self._bandwidth_read = {}
        self._signal_said = ()
        # The vCPU threads' sched and schedstat files, kept open.
        self._thread_files = guestproc.OpenFiles()

    def _conn(self):
        return self._connection.get()

    def _call(self, what, func, *args):
        try:
            return func(*args)
        except libvirt.libvirtError as exc:
            raise _translate(self._connection, exc, what)

    def capabilities(self):
        caps = {backend.CAP_VCPU_PINNING, backend.CAP_EMULATOR_PINNING}
        if self.live_nodeset_supported():
            caps.add(backend.CAP_LIVE_NODESET)
        if self.page_migration_supported():
            caps.add(backend.CAP_PAGE_MIGRATION)
        if self.locality_signal():
            caps.add(backend.CAP_ACCESS_COUNTERS)
        return frozenset(caps)

    def locality_signal(self):
        """The host's signal, or None.

        While the kernel's NUMA balancing runs it moves pages itself and
        its samples are the signal: the loops bound where it may move
        them rather than fight it. Without it, the loops own page
        placement, on what the CPU measures where it is turned on: its
        samples of memory accesses first (each names the node that served
        it), then memory bandwidth (where remote bytes went is inferred on
        more than two nodes). Read at each call: an operator may turn
        ``kernel.numa_balancing`` on or off, or mount resctrl, while the
        agent runs. A host of one node has nothing to measure.
        """
        if len(self.topology().nodes) < 2:
            return None
        mode = numafaults.balancing_mode(self._root)
        if numafaults.samples_locality(mode):
            signal, why = locality.SIGNAL_HINTING_FAULTS, None
        else:
            signal, why = self._measured_by_cpu()
        self._say_signal(signal, why)
        return signal

    def _measured_by_cpu(self):
        """(hardware samples or memory bandwidth or None, why neither)."""
        no_samples = self.samples_missing()
        if no_samples is None:
            return locality.SIGNAL_SAMPLES, None
        no_bandwidth = self.bandwidth_missing()
        if no_bandwidth is None:
            return locality.SIGNAL_BANDWIDTH, None
        return None, (f'hardware sampling: {no_samples}; memory bandwidth: '
                      f'{no_bandwidth}')

    def _say_signal(self, signal, why):
        """Log the signal when it changes, and why there is none."""
        if (signal, why) == self._signal_said:
            return
        self._signal_said = (signal, why)
        if signal:
            LOG.info('Locality signal: %s', signal)
        else:
            LOG.warning('No locality signal: the kernel\'s NUMA balancing '
                        'is off, and neither hardware samples nor memory '
                        'bandwidth are read (%s); the loops fall back to '
                        'memory per node', why)

    def samples_missing(self):
        """Why the guests' memory accesses are not sampled here, or None."""
        if self._samples is None:
            return ('hardware sampling is off ([numa_policy_agent] '
                    'hardware_sampling)')
        return self._samples.missing()

    def bandwidth_missing(self):
        """Why memory bandwidth per guest is not read here, or None."""
        if self._bandwidth_reader is None:
            return ('bandwidth monitoring is off ([numa_policy_agent] '
                    'bandwidth_monitoring)')
        return self._bandwidth_reader.missing(self.topology())

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
            self._topology = discovery.discover(
                caps, self._root, self._physnet_interfaces,
                self._bridge_interfaces, self._physnet_numa_nodes,
                self._find_uplinks())
            self._topology_generation = self._connection.generation
            if self._uplinks_file:
                discovery.write_uplinks(self._uplinks_file,
                                        self._topology.nics)
        return self._topology

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
        self._devices[uuid] = guestio.interface_devices(xml)
        self._vfs[uuid] = [vf for vf in (
            vfstats.vf_of(self._root, address)
            for address in vfstats.vf_addresses(xml)) if vf is not None]
        return facts

    def _pf_traffic(self, pf):
        """{VF index: (bytes, packets)} of a PF, asked once per period."""
        if pf not in self._pf_counters:
            try:
                self._pf_counters[pf] = self._vf_traffic(pf)
            except OSError as exc:
                # Said once per PF: the guests on its VFs read as silent.
                log = LOG.debug if pf in self._pf_warned else LOG.warning
                self._pf_warned.add(pf)
                log('No VF counters from %s: %s', pf, exc)
                self._pf_counters[pf] = {}
        return self._pf_counters[pf]

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

    def _sampled(self, pid, uuid, topology, vcpu_cpus):
        """The guest's accesses per node and vCPU penalties, sampled."""
        threads = self._vcpu_faults(pid, uuid, len(vcpu_cpus))
        known = {n.id for n in topology.nodes}
        accesses = {node: count for node, count in
                    numafaults.add(threads).items() if node in known}
        if not accesses:
            # Nothing sampled: the kernel does not scan memory under an
            # explicit policy, and an idle guest faults on nothing. Not
            # measured, rather than zero.
            return None, None
        return accesses, locality.vcpu_penalties(
            topology, vcpu_cpus, {t.vcpu: t.per_node for t in threads})

    def _bandwidth(self, pid, uuid, topology, vcpu_cpus, memory,
                   memory_mode=None):
        """The guest's accesses per node and vCPU penalties, from bytes.

        Read again only a rate window after the last reading: an
        observation right after it (the one after an action, for the
        report) would count milliseconds of bytes as a period's.
        """
        now = self._clock()
        last = self._bandwidth_read.get(uuid)
        if last is not None and now - last[0] < self._rate_window:
            return last[1]
        tids = (self._vcpu_thread_ids(pid, uuid, len(vcpu_cpus))
                if pid is not None else {})
        measured = self._bandwidth_reader.measure(
            pid, uuid, tids, topology, vcpu_cpus, memory, memory_mode)
        self._bandwidth_read[uuid] = (now, measured)
        return measured

    def _hardware_samples(self, pid, uuid, topology, vcpu_cpus):
        """The guest's accesses per node and vCPU penalties, sampled."""
        tids = (self._vcpu_thread_ids(pid, uuid, len(vcpu_cpus))
                if pid is not None else {})
        return self._samples.measure(uuid, tids, topology, vcpu_cpus)

    def _collect_samples(self, signal):
        """Drain the period's samples of the guests whose threads we know.

        A guest met for the first time has its threads listed while it is
        observed: it is measured from the next period on. An observation
        within a rate window of the last drain (the one after an action,
        for the report) keeps the last samples, as rates do: draining
        then would read milliseconds as a period.
        """
        if self._samples is None:
            return signal
        if signal != locality.SIGNAL_SAMPLES:
            self._samples.idle()
            self._samples_drained_at = None
            return signal
        now = self._clock()
        if (self._samples_drained_at is not None
                and now - self._samples_drained_at < self._rate_window):
            return signal
        if self._samples.collect(dict(self._vcpu_threads)):
            self._samples_drained_at = now
            return signal
        # The daemon failed: no signal this period; the next one says why.
        self._signal_said = ()
        return None

    def _traffic_now(self, dom, uuid):
        """(bytes, packets) the guest's interfaces received and sent."""
        totals = []
        for dev in self._devices.get(uuid, ()):
            try:
                totals.append(guestio.traffic(dom.interfaceStats(dev)))
            except libvirt.libvirtError as exc:
                if connection_mod.is_connection_error(exc):
                    raise
                # An interface being unplugged: counted from next period.
                LOG.debug('No stats for %s of %s: %s', dev, uuid, exc)
        for pf, vf in self._vfs.get(uuid, ()):
            totals.append(self._pf_traffic(pf).get(vf, (0, 0)))
        return guestio.add(totals)

    def _io_rate(self, dom, uuid):
        window = guestio.windowed(
            self._traffic.get(uuid),
            (self._clock(), self._traffic_now(dom, uuid)),
            guestio.request_rate, self._rate_window)
        self._traffic[uuid] = window
        return window[1]

    def _start_rate_windows(self, domains):
        """Take every rate's first sample, then wait one window.

        The first observation would otherwise report every node idle and
        every guest silent: a one-shot run (``--once``) prints nothing
        else, and a daemon's first report reaches the schedulers.
        """
        self._cpu_window = ((self._clock(),
                             discovery.read_cpu_times(self._root)), ({}, {}))
        self._pf_counters = {}
        for dom in domains:
            try:
                uuid = self._domain_facts(dom).uuid
                self._traffic[uuid] = (
                    (self._clock(), self._traffic_now(dom, uuid)), 0.0)
                self._cpu_wait(self._pid(dom, uuid), uuid,
                               len(dom.vcpus()[0]))
            except libvirt.libvirtError as exc:
                # Gone or changing: the observation itself decides.
                LOG.debug('No first rate sample of a domain: %s', exc)
        self._sleep(self._rate_window)

    def _instance(self, dom, host_cpus, topology, signal):
        facts = self._domain_facts(dom)
        infos, maps = dom.vcpus()
        emulator = cpus_from_map(dom.emulatorPinInfo(
            libvirt.VIR_DOMAIN_AFFECT_LIVE) or ())
        pid = self._pid(dom, facts.uuid)
        memory = self._memory_per_node(pid, facts.uuid)
        vcpu_cpus = tuple(info[3] for info in infos)
        accesses = penalties = None
        if signal == locality.SIGNAL_HINTING_FAULTS:
            accesses, penalties = self._sampled(pid, facts.uuid, topology,
                                                vcpu_cpus)
        elif signal == locality.SIGNAL_SAMPLES:
            accesses, penalties = self._hardware_samples(
                pid, facts.uuid, topology, vcpu_cpus)
        elif signal == locality.SIGNAL_BANDWIDTH:
            accesses, penalties = self._bandwidth(pid, facts.uuid, topology,
                                                  vcpu_cpus, memory,
                                                  facts.memory_mode)
        io_rate = self._io_rate(dom, facts.uuid)
        cpu_wait = self._cpu_wait(pid, facts.uuid, len(vcpu_cpus))
        return backend.InstanceState(
            uuid=facts.uuid,
            requested_policy=facts.requested.value if facts.requested
            else None,
            io_intensity=(facts.requested.io_intensity.value
                          if facts.requested else None),
            hands_off_reason=facts.hands_off_reason,
            vcpu_cpus=vcpu_cpus,
            vcpu_affinity=tuple(cpus_from_map(m) for m in maps),
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
            allowed_cpus=scope.bound(facts.allowed_cpus, host_cpus))

    def observe(self):
        topology = self.topology()
        conn = self._conn()
        domains = self._call(
            'listAllDomains', conn.listAllDomains,
            libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE)
        if self._cpu_window is None:
            self._start_rate_windows(domains)
        self._pf_counters = {}
        host_cpus = self._cpu_partition.floating(
            cpu for node in topology.nodes for cpu in node.cpus)
        signal = self._collect_samples(self.locality_signal())
        instances = []
        for dom in domains:
            try:
                instances.append(self._instance(dom, host_cpus, topology,
                                                signal))
            except libvirt.libvirtError as exc:
                error = _translate(self._connection, exc, 'observe')
                if isinstance(error, errors.ConnectionLost):
                    raise error
                # Gone or shut off since the listing: not ours to report.
                LOG.debug('Skipping a domain that changed while observed: '
                          '%s', exc)
        live = {i.uuid for i in instances}
        self._forget_all_but(live)
        if self._bandwidth_reader is not None:
            self._bandwidth_reader.sweep(
                live if signal == locality.SIGNAL_BANDWIDTH else set())
        return backend.HostSnapshot(
            topology=topology, usage=self._usage(topology),
            instances=tuple(instances), taken_at=self._clock(),
            locality_signal=signal)

    def _forget_all_but(self, live):
        """Drop what is kept per guest for guests no longer running."""
        for kept in (self._facts, self._devices, self._vfs, self._traffic,
                     self._vcpu_threads, self._waits, self._bandwidth_read):
            for uuid in set(kept) - live:
                del kept[uuid]
        if self._bandwidth_reader is not None:
            self._bandwidth_reader.forget_all_but(live)
        self._thread_files.sweep()

    def _act(self, dom, what, func, *args):
        try:
            return func(*args)
        except libvirt.libvirtError as exc:
            error = _translate(self._connection, exc, what)
            if isinstance(error, errors.NotEnforceable) and not _active(dom):
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
                  vcpu, cpumap(cpus, self._cpumap_size()))

    def pin_emulator(self, instance_uuid, cpus):
        dom = self._domain(instance_uuid)
        self._act(dom, f'pin emulator of {instance_uuid}', dom.pinEmulator,
                  cpumap(cpus, self._cpumap_size()),
                  libvirt.VIR_DOMAIN_AFFECT_LIVE)

    def set_nodeset(self, instance_uuid, nodes):
        dom = self._domain(instance_uuid)
        try:
            facts = self._domain_facts(dom)
        except libvirt.libvirtError as exc:
            raise _translate(self._connection, exc, 'set nodeset')
        if not enforcement.live_nodeset_allowed(facts.memory_mode):
            raise errors.NotEnforceable(
                f'{instance_uuid}: libvirt cannot change the nodeset of a '
                f'running guest in {facts.memory_mode} mode')
        self._act(dom, f'set nodeset of {instance_uuid}',
                  dom.setNumaParameters,
                  {libvirt.VIR_DOMAIN_NUMA_NODESET:
                   ','.join(str(n) for n in sorted(nodes))},
                  libvirt.VIR_DOMAIN_AFFECT_LIVE)

    def move_pages(self, instance_uuid, source_node, target_node, pages):
        if not self.page_migration_supported():
            raise errors.PageMigrationUnavailable(
                'page migration is not available: no page mover configured '
                'or no move_pages(2) in this kernel')
        dom = self._domain(instance_uuid)
        try:
            pid = self._pid(dom, instance_uuid)
        except libvirt.libvirtError as exc:
            raise _translate(self._connection, exc, 'move pages')
        if pid is None:
            if not _active(dom):
                raise errors.DomainGone(f'{instance_uuid}: not running')
            raise errors.NotEnforceable(
                f'{instance_uuid}: no qemu process found (pidfile in '
                f'{self._pid_dir} missing or not its process)')
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
