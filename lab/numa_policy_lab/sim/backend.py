"""SimulatedBackend: the project's Backend interface on a simulated host.

``observe()`` reports what the real backend would see after a period;
``advance()`` runs one period of the performance model and records each
guest's normalized throughput, so experiments can compare loops.
"""

import numpy as np

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality
from nova_numa_policy.contracts import scope
from numa_policy_lab.sim import model
from numa_policy_lab.sim import signals
from numa_policy_lab.sim import state as st
from numa_policy_lab.sim import workload as wl

# Cost of migrating one 4 KiB page to the guest (copy, TLB shootdown,
# fault on next touch): an order of magnitude of Linux move_pages(2), not a
# seed number. It keeps needless page moves from being free.
MIGRATION_US_PER_PAGE = 4.0
# Cache refill after a vCPU changes node, seconds of lost work.
VCPU_MOVE_COST_S = 0.002


# The stream of hardware samples' draws, beside the host's seed.
SAMPLE_STREAM = 1
# The number of a host's first modelled interrupt vector; Linux numbers a
# PCI device's MSI-X vectors above the legacy ones, and only uniqueness
# matters here.
FIRST_IRQ = 64


class Vector:
    """One modelled interrupt vector of a NIC: where it goes, as found."""

    def __init__(self, nic, affinity):
        self.nic = nic
        self.affinity = frozenset(affinity)
        # What the host found before the agent's first steer; None until
        # then, and again once it is written back.
        self.found = None

    def effective(self):
        """The CPU the kernel delivers it to: one of its affinity.

        x86 delivers a vector to a single CPU of its mask; the lowest is
        the simulated kernel's pick, deterministic.
        """
        return min(self.affinity)

    def steer(self, cpus):
        cpus = frozenset(cpus)
        if self.found is None:
            self.found = self.affinity
        elif cpus == self.found:
            self.found = None  # written back: nothing left to restore
        self.affinity = cpus


def _used_mb(vm):
    """MB of ``vm`` on each node, each summed as ``seg_mb[:, node].sum()``.

    Summing the rows of the transposed copy adds the same numbers in the
    same order as summing each column alone: the same bits.
    """
    return np.add.reduce(np.ascontiguousarray(vm.seg_mb.T), axis=1)


class SimulatedBackend(backend.Backend):
    name = 'simulated'

    def __init__(self, host, vms, period_s=5.0, seed=0,
                 signal=locality.SIGNAL_COUNTERS, noise=0.01,
                 hostname='sim-host', numatune=None, irqs=None):
        """A host running ``vms``.

        ``signal``: what the host measures of locality (:mod:`.signals`):
        perfect counters, the kernel's hinting faults (its NUMA balancing
        on, moving pages too), memory bandwidth per cache domain, or
        None. ``numatune``: {uuid: (memory mode
        or None, nodes)} written at boot, as libvirt's
        ``<numatune><memory>``; a guest absent from it booted without one
        (the kernel's default, first-touch). ``irqs``: {NIC name: the
        affinity of each of its interrupt vectors} where the scenario
        models them; a NIC absent from it has its packets handled by
        their buffers (the model's zero, seed 002's tuned affinity).
        """
        if signal is not None and signal not in locality.SIGNALS:
            raise ValueError(f'unknown locality signal {signal!r}')
        if getattr(host, 'lower_tier', None) is not None:
            # Its signals, kernel balancing and loops know CPU nodes only;
            # a lower tier is modelled by sim/tiers.py, placements alone.
            raise ValueError(f'host {host.name} has a lower memory tier, '
                             f'which the simulated backend does not run')
        self.host = host
        self._hostname = hostname
        self.vms = list(vms)
        self.numatune = {uuid: (mode, frozenset(nodes))
                         for uuid, (mode, nodes) in (numatune or {}).items()}
        for vm in self.vms:
            vm.kernel_balanced = locality.kernel_balances_memory(
                self.numatune.get(vm.uuid, (None,))[0])
        self.period_s = period_s
        self.rng = np.random.default_rng(seed)
        # Hardware samples draw from a stream of their own: their noise
        # must not change the host's other draws (where a rebooted guest
        # lands), or a run on samples would differ from one on counters
        # by more than what the samples say.
        self.sample_rng = np.random.default_rng([seed, SAMPLE_STREAM])
        self.signal = signal
        self.noise = noise
        self.now = 0.0
        self._result = None
        self.vectors = {}
        for nic, masks in (irqs or {}).items():
            for mask in masks:
                self.vectors[FIRST_IRQ + len(self.vectors)] = Vector(nic,
                                                                     mask)
        self._moved_pages = {vm.uuid: 0 for vm in self.vms}
        self._moved_vcpus = {vm.uuid: 0 for vm in self.vms}
        # Hinting faults of the last period per guest (vCPUs x nodes) and
        # the kernel's scan period for each.
        self._faults = {}
        self._scan_period = {}
        # A test's stand-in for a host that fails: called with each action
        # before it is carried out, it returns the exception to raise (one
        # of nova_numa_policy.contracts.errors) or None.
        self.failure = None
        for vm in self.vms:
            if vm.vcpu_time_ns is None:
                vm.vcpu_time_ns = np.zeros(vm.n_vcpus, dtype=np.int64)

    def add_vm(self, vm, memory_mode=None, memory_nodes=frozenset()):
        """A guest booted now, with the ``<numatune>`` it was booted with."""
        if vm.vcpu_time_ns is None:
            vm.vcpu_time_ns = np.zeros(vm.n_vcpus, dtype=np.int64)
        self.vms.append(vm)
        self._moved_pages[vm.uuid] = 0
        self._moved_vcpus[vm.uuid] = 0
        self.numatune[vm.uuid] = (memory_mode, frozenset(memory_nodes))
        vm.kernel_balanced = locality.kernel_balances_memory(memory_mode)
        self._result = None

    # -- the Backend interface ------------------------------------------
    def hostname(self):
        return self._hostname

    def capabilities(self):
        caps = {backend.CAP_VCPU_PINNING, backend.CAP_EMULATOR_PINNING,
                backend.CAP_LIVE_NODESET, backend.CAP_PAGE_MIGRATION,
                backend.CAP_IRQ_STEERING, backend.CAP_IO_THREAD_PINNING}
        if self.signal is not None:
            caps.add(backend.CAP_ACCESS_COUNTERS)
        return frozenset(caps)

    def locality_signal(self):
        return self.signal

    def measurements(self):
        # Each guest's request rate and its vCPUs' share of their CPUs are
        # simulated, as a Linux host reads them.
        return super().measurements() | {backend.MEASURE_INTERFACE_TRAFFIC,
                                         backend.MEASURE_CPU_WAIT}

    def topology(self):
        return self.host.to_topology()

    def observe(self):
        result = self.result()
        free = self._free_mbs()
        usage = tuple(
            backend.NodeUsage(node_id=n, cpu_load=float(result.cpu_load[n]),
                              memory_free_mb=int(free[n]))
            for n in range(self.host.n_nodes))
        instances = []
        first = 0
        for i, vm in enumerate(self.vms):
            last = first + vm.n_vcpus
            instances.append(self._instance(vm, result, i, first, last))
            first = last
        return backend.HostSnapshot(topology=self.topology(), usage=usage,
                                    instances=tuple(instances),
                                    taken_at=self.now,
                                    locality_signal=self.signal,
                                    irqs=self._irq_states())

    def _irq_states(self):
        return tuple(
            backend.IrqState(irq=irq, nic=v.nic, affinity=v.affinity,
                             effective=frozenset({v.effective()}),
                             found=v.found)
            for irq, v in sorted(self.vectors.items()))

    def irq_nodes(self):
        """{NIC: the share of its vectors delivered to each node}.

        A guest's flows hash evenly over its NIC's receive queues (RSS),
        so each node handles that share of its packets' interrupts.
        """
        per_nic = {}
        for v in self.vectors.values():
            per_nic.setdefault(v.nic, []).append(
                self.host.node_of_cpu(v.effective()))
        return {nic: tuple((np.bincount(nodes, minlength=self.host.n_nodes)
                            / len(nodes)).tolist())
                for nic, nodes in per_nic.items()}

    def apply(self, action):
        failure = self.failure(action) if self.failure else None
        if failure is not None:
            raise failure
        return super().apply(action)

    def pin_vcpu(self, instance_uuid, vcpu, cpus):
        vm = self.vm(instance_uuid)
        cpus = frozenset(cpus)
        vm.vcpu_affinity[vcpu] = cpus
        if int(vm.vcpu_cpus[vcpu]) not in cpus:
            old = self.host.node_of_cpu(int(vm.vcpu_cpus[vcpu]))
            vm.vcpu_cpus[vcpu] = self._least_busy_cpu(cpus)
            if self.host.node_of_cpu(int(vm.vcpu_cpus[vcpu])) != old:
                vm.vcpu_moves += 1
                self._moved_vcpus[vm.uuid] += 1
        self._result = None

    def pin_emulator(self, instance_uuid, cpus):
        vm = self.vm(instance_uuid)
        vm.emulator_cpus = frozenset(cpus)
        if vm.io_thread_cpus is not None:
            # libvirt starts the vhost workers in the emulator's cgroup:
            # its emulator pinning moves them too.
            vm.io_thread_cpus = vm.emulator_cpus
            self._result = None

    def pin_io_threads(self, instance_uuid, cpus):
        vm = self.vm(instance_uuid)
        if vm.io_thread_cpus is None:
            raise ValueError(f'{instance_uuid} has no vhost workers')
        vm.io_thread_cpus = frozenset(cpus)
        self._result = None

    def steer_irq(self, irq, nic, cpus):
        vector = self.vectors.get(irq)
        if vector is None or vector.nic != nic:
            raise KeyError(f'{nic} has no interrupt vector {irq}')
        vector.steer(cpus)
        self._result = None

    def set_nodeset(self, instance_uuid, nodes):
        vm = self.vm(instance_uuid)
        vm.nodeset = frozenset(nodes)
        # libvirt binds a domain without <numatune> strictly; a running
        # guest's mode itself never changes.
        mode = self.numatune.get(instance_uuid, (None,))[0]
        self.numatune[instance_uuid] = (mode or backend.MODE_STRICT,
                                        vm.nodeset)
        # A live nodeset change migrates memory off the nodes left out.
        targets = sorted(vm.nodeset)
        per_node = vm.memory_per_node_mb()
        for node in range(self.host.n_nodes):
            if node not in vm.nodeset and per_node[node] > 0:
                pages = int(per_node[node] * st.PAGES_PER_MB)
                for target in targets:
                    self.move_pages(instance_uuid, node, target,
                                    pages // len(targets) + 1)

    def move_pages(self, instance_uuid, source_node, target_node, pages):
        vm = self.vm(instance_uuid)
        want = min(pages / st.PAGES_PER_MB, self._free_mb(target_node))
        moved = 0.0
        for seg in self._segments_to_move(vm, target_node):
            if moved >= want:
                break
            take = min(vm.seg_mb[seg, source_node], want - moved)
            vm.seg_mb[seg, source_node] -= take
            vm.seg_mb[seg, target_node] += take
            moved += take
        count = int(round(moved * st.PAGES_PER_MB))
        vm.pages_moved += count
        self._moved_pages[vm.uuid] += count
        self._result = None
        return count

    def _measured(self, vm, result, index, first, last):
        """The guest's accesses per node and vCPU penalties, as measured."""
        if self.signal == locality.SIGNAL_COUNTERS:
            counts = result.vm_accesses[index] * self.host.freq_ghz * 1e9 \
                * self.period_s
            counts = counts * (1.0 + self.noise * self.rng.standard_normal(
                len(counts)))
            # tolist(): the same numbers as Python floats, read at once.
            accesses = {n: int(max(0.0, count))
                        for n, count in enumerate(counts.tolist())}
            return accesses, tuple(result.vcpu_penalty[first:last].tolist())
        if self.signal == locality.SIGNAL_BANDWIDTH:
            return self._bandwidth_measured(vm, result, first, last)
        if self.signal == locality.SIGNAL_SAMPLES:
            return self._samples_measured(vm, result, first, last)
        faults = self._faults.get(vm.uuid)
        if faults is None or not faults.sum():
            # No signal, a guest the kernel does not scan, or one that
            # touched nothing scanned: not measured, as on a real host.
            return None, None
        # Integer counts: summed at once or node by node, the same.
        accesses = dict(enumerate(faults.sum(axis=0).tolist()))
        rows = faults.tolist()
        return accesses, locality.vcpu_penalties(
            self.topology(), tuple(vm.vcpu_cpus.tolist()),
            {v: dict(enumerate(rows[v])) for v in range(vm.n_vcpus)})

    def _samples_measured(self, vm, result, first, last):
        """Accesses and penalties as the agent derives them from samples."""
        samples = signals.hardware_samples(
            self.sample_rng, result.vcpu_accesses[first:last]
            * self.host.freq_ghz * 1e9 * self.period_s,
            signals.ACCESSES_PER_SAMPLE)
        if not samples.sum():
            return None, None
        accesses = {n: int(count * signals.ACCESSES_PER_SAMPLE)
                    for n, count in enumerate(samples.sum(axis=0).tolist())}
        rows = samples.tolist()
        return accesses, locality.vcpu_penalties(
            self.topology(), tuple(vm.vcpu_cpus.tolist()),
            {v: dict(enumerate(rows[v])) for v in range(vm.n_vcpus)})

    def _bandwidth_measured(self, vm, result, first, last):
        """Accesses and penalties as the agent derives them from MBM."""
        vcpu_nodes = vm.vcpu_cpus // self.host.cpus_per_node
        per_period = (self.host.freq_ghz * 1e9 * self.period_s
                      * locality.LINE_BYTES)
        domains = signals.bandwidth(
            self.rng, result.vcpu_accesses[first:last], vcpu_nodes,
            per_period)
        return locality.measured_from_bandwidth(
            self.topology(), tuple(vm.vcpu_cpus.tolist()), domains,
            dict(enumerate(vm.memory_per_node_mb().tolist())),
            self.numatune.get(vm.uuid, (None,))[0])

    def _kernel_balancing(self):
        """One period of Linux's NUMA balancing: samples, then its moves.

        The samples describe the placement the period ran on; the pages
        the kernel moved cost the next period, as the loops' moves do.
        """
        used = [_used_mb(vm) for vm in self.vms]
        for i, vm in enumerate(self.vms):
            if not vm.kernel_balanced:
                self._faults.pop(vm.uuid, None)
                continue
            period = self._scan_period.get(vm.uuid,
                                           signals.SCAN_PERIOD_MIN_S)
            scanned = signals.coverage(vm.memory_mb, self.period_s, period)
            vcpu_nodes = vm.vcpu_cpus // self.host.cpus_per_node
            faults = signals.hinting_faults(self.rng, vm.profile, vm.seg_mb,
                                            scanned)
            self._faults[vm.uuid] = faults
            self._scan_period[vm.uuid] = signals.next_scan_period(
                period, faults, vcpu_nodes)
            by_node = np.bincount(vcpu_nodes, weights=faults.sum(axis=1),
                                  minlength=self.host.n_nodes)
            moves = signals.kernel_moves(vm.profile, vm.seg_mb, vcpu_nodes,
                                         vm.nodeset, scanned, by_node)
            free = self._free_mbs(used)
            vm.seg_mb, moved_mb = signals.apply_moves(vm.seg_mb, moves, free)
            used[i] = _used_mb(vm)
            pages = int(round(moved_mb * st.PAGES_PER_MB))
            vm.kernel_pages_moved += pages
            self._moved_pages[vm.uuid] += pages
        self._result = None

    # -- simulation --------------------------------------------------------
    def vm(self, uuid):
        """The guest ``uuid``; KeyError if the host has none."""
        return {vm.uuid: vm for vm in self.vms}[uuid]

    def result(self):
        if self._result is None:
            self._result = model.evaluate(self.host, self.vms,
                                          self.irq_nodes())
        return self._result

    def advance(self):
        """Run one period; return each guest's throughput in it."""
        result = self.result()
        tp = result.vm_throughput.copy()
        for i, vm in enumerate(self.vms):
            lost = (self._moved_pages[vm.uuid] * MIGRATION_US_PER_PAGE * 1e-6
                    + self._moved_vcpus[vm.uuid] * VCPU_MOVE_COST_S)
            tp[i] *= max(0.0, 1.0 - lost / (self.period_s * vm.n_vcpus))
            vm.vcpu_time_ns += int(self.period_s * 1e9)
            self._moved_pages[vm.uuid] = 0
            self._moved_vcpus[vm.uuid] = 0
        self.now += self.period_s
        if locality.kernel_balances(self.signal):
            self._kernel_balancing()
        return tp

    def reboot(self, uuid, policy=st.FIRST_TOUCH):
        """Seed 002 §2.2: a guest reboot lets the host scatter it again."""
        vm = self.vm(uuid)
        everything = frozenset(range(self.host.n_cpus))
        vm.vcpu_cpus[:] = -1  # its old threads are gone
        vm.vcpu_time_ns[:] = 0  # and the new ones start counting afresh
        nodes = []
        for v in range(vm.n_vcpus):
            vm.vcpu_affinity[v] = everything
            cpu = self._wakeup_cpu()
            vm.vcpu_cpus[v] = cpu
            nodes.append(self.host.node_of_cpu(cpu))
        vm.nodeset = frozenset(range(self.host.n_nodes))
        vm.seg_mb = st.initial_placement(self.host.n_nodes, vm.profile,
                                         vm.memory_mb, nodes, policy,
                                         vm.nodeset)
        # A new QEMU process: the kernel's samples and scan start afresh.
        vm.kernel_balanced = policy == st.FIRST_TOUCH
        self._forget_samples(uuid)
        self._result = None

    def _forget_samples(self, uuid):
        """The kernel's samples and scan pace of a guest gone or rebooted."""
        self._faults.pop(uuid, None)
        self._scan_period.pop(uuid, None)

    # -- helpers -------------------------------------------------------------
    def _free_mb(self, node):
        used = sum(vm.seg_mb[:, node].sum() for vm in self.vms)
        return max(0.0, self.host.memory_mb_per_node - used)

    def _free_mbs(self, used=None):
        """:meth:`_free_mb` of every node at once, the same numbers.

        ``used``: :func:`_used_mb` of each guest, when the caller keeps
        them.
        """
        if used is None:
            used = [_used_mb(vm) for vm in self.vms]
        total = sum(used)  # guest by guest, as _free_mb adds them
        return [max(0.0, self.host.memory_mb_per_node
                    - (total[n] if used else 0))
                for n in range(self.host.n_nodes)]

    def _wakeup_cpu(self):
        """Where the host starts a new vCPU thread: a random idle CPU.

        Blind to memory and to NUMA (the scatter of seed 002 §2.2), but,
        like Linux's wake-up path, it prefers an idle CPU to a busy one;
        only on a full host does it stack threads.
        """
        counts = np.zeros(self.host.n_cpus)
        for vm in self.vms:
            busy = vm.vcpu_cpus[vm.vcpu_cpus >= 0]
            np.add.at(counts, busy, 1)
        idle = np.flatnonzero(counts == counts.min())
        return int(idle[self.rng.integers(len(idle))])

    def _least_busy_cpu(self, cpus):
        counts = np.zeros(self.host.n_cpus)
        for vm in self.vms:
            np.add.at(counts, vm.vcpu_cpus, 1)
        return min(sorted(cpus), key=lambda cpu: counts[cpu])

    def _segments_to_move(self, vm, target_node):
        """Hot pages first, those the target node's vCPUs use most first.

        The interface moves a count of pages; a real mover picks them from
        access samples, so the simulated one picks the hottest.
        """
        p = vm.profile
        nodes = vm.vcpu_cpus // self.host.cpus_per_node
        on_target = float((nodes == target_node).sum())
        private = 1.0 - p.shared_fraction - p.io_fraction
        sizes = np.maximum(vm.seg_mb.sum(axis=1), 1e-9)
        heat = np.zeros(len(sizes))
        heat[wl.SEG_SHARED] = p.shared_fraction * vm.n_vcpus
        heat[wl.SEG_IO] = p.io_fraction * vm.n_vcpus
        near = np.zeros(len(sizes))
        near[wl.SEG_SHARED] = p.shared_fraction * on_target
        near[wl.SEG_IO] = p.io_fraction * on_target
        for i in range(vm.n_vcpus):
            heat[wl.FIRST_PRIVATE + i] = private
            near[wl.FIRST_PRIVATE + i] = private * (nodes[i] == target_node)
        order = np.lexsort((-heat / sizes, -near / sizes))
        return [int(s) for s in order]

    def _instance(self, vm, result, index, first, last):
        per_node = vm.memory_per_node_mb().tolist()
        accesses, penalty = self._measured(vm, result, index, first, last)
        mode, nodes = self.numatune.get(vm.uuid, (None, frozenset()))
        return backend.InstanceState(
            uuid=vm.uuid, requested_policy=vm.requested_policy,
            # As the real backend: a guest that asked for nothing is not
            # ours to manage.
            hands_off_reason=vm.hands_off_reason or scope.unmanaged_reason(
                scope.Scope(), requested=vm.requested_policy),
            memory_mb_per_node={n: int(round(mb))
                                for n, mb in enumerate(per_node)
                                if mb >= 0.5},
            vcpu_cpus=tuple(vm.vcpu_cpus.tolist()),
            vcpu_affinity=tuple(vm.vcpu_affinity),
            vcpu_time_ns=tuple(vm.vcpu_time_ns.tolist()),
            io_rate=float(result.vm_io_rate[index]),
            cpu_wait=float(result.vm_cpu_wait[index]),
            accesses_per_node=accesses, vcpu_penalty=penalty,
            access_signal=self.signal if accesses is not None else None,
            memory_mb=vm.memory_mb, memory_mode=mode,
            memory_nodes=nodes or vm.nodeset,
            emulator_affinity=vm.emulator_cpus,
            allowed_cpus=vm.allowed_cpus,
            nics=frozenset({vm.nic} if vm.nic else ()),
            io_thread_cpus=vm.io_thread_cpus or frozenset())
