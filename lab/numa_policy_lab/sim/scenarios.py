"""Named experiments: a host, its guests and what happens during the run.

Every builder takes a seed; the seed decides where the host's scheduler
first puts each vCPU (as Linux's load balancer would, blind to memory),
so runs differ the way repeated runs on a real host do.
"""

import dataclasses

import numpy as np

from numa_policy_lab.sim import state as st
from numa_policy_lab.sim import topology
from numa_policy_lab.sim import workload as wl


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    build: object  # seed -> (SimHost, [SimVm])
    target_loops: tuple = ()
    # (period, guest name prefix) pairs: reboot those guests then.
    reboots: tuple = ()
    # SimHost -> {NIC name: each interrupt vector's affinity}, for a
    # scenario that says where the host handles the packets; None: by
    # their buffers, the model's zero (SimulatedBackend's ``irqs``).
    irqs: object = None

    def periods(self, wanted):
        """Periods to run: ``wanted``, or more after a late reboot.

        Enough that the measured (second) half of the run all follows
        the last reboot.
        """
        last = max((p for p, _ in self.reboots), default=-1)
        return max(wanted, 2 * (last + 1))


def make_vm(host, uuid, profile, cpus, memory_mb=1024, policy=st.FIRST_TOUCH,
            requested=None, nic=None, pinned=False, hands_off=None):
    """A guest booted on ``cpus`` whose memory follows ``policy``."""
    prof = wl.PROFILES[profile]
    cpus = np.asarray(cpus, int)
    nodes = [host.node_of_cpu(int(c)) for c in cpus]
    everything = frozenset(range(host.n_cpus))
    affinity = [frozenset(host.node_cpus(n)) if pinned else everything
                for n in nodes]
    nodeset = frozenset(range(host.n_nodes))
    if policy == st.HOME:
        nodeset = frozenset({nodes[0]})
    seg = st.initial_placement(host.n_nodes, prof, memory_mb, nodes, policy,
                               nodeset)
    return st.SimVm(uuid=uuid, profile=prof, memory_mb=memory_mb,
                    vcpu_cpus=cpus, vcpu_affinity=affinity, seg_mb=seg,
                    nodeset=frozenset(range(host.n_nodes)),
                    requested_policy=requested, nic=nic,
                    hands_off_reason=hands_off)


def _master_slave(seed):
    # Seed 000 "high" class: two 24-vCPU guests, 3 vCPUs of each on every
    # node; first-touch puts all shared data on each master's node.
    host = topology.amd48()
    rng = np.random.default_rng(seed)
    vms = []
    for k in range(2):
        cpus = [node * 6 + 3 * k + j for node in range(8) for j in range(3)]
        cpus = list(rng.permutation(cpus))
        vms.append(make_vm(host, f'master-slave-{k}', 'master-slave', cpus,
                           memory_mb=8192,
                           requested='first-touch+carrefour'))
    return host, vms


def _low(seed):
    # Seed 000 "low" class, well placed: one 6-vCPU guest per node, memory
    # first-touched locally. No loop may cost it more than 2 %.
    host = topology.amd48()
    rng = np.random.default_rng(seed)
    order = rng.permutation(8)
    vms = [make_vm(host, f'low-{k}', 'private-stream',
                   list(host.node_cpus(int(order[k]))), memory_mb=4096,
                   requested='auto')
           for k in range(8)]
    return host, vms


def _shared_contention(seed):
    # Seed 001 §2.2: two guests whose threads share data; the load balancer
    # split each across the sockets.
    host = topology.xeon2()
    rng = np.random.default_rng(seed)
    free0 = list(rng.permutation(host.node_cpus(0)))
    free1 = list(rng.permutation(host.node_cpus(1)))
    a = [free0.pop(), free0.pop(), free1.pop()]
    b = [free1.pop(), free1.pop(), free0.pop()]
    vms = [make_vm(host, 'shared-a', 'shared-sync', a, 2048,
                   requested='first-touch'),
           make_vm(host, 'shared-b', 'shared-sync', b, 2048,
                   requested='first-touch')]
    return host, vms


def _io_mix(seed):
    # Seed 002 §6.2.2: four each of netperf, memcached and YCSB guests, one
    # vCPU and 1 GB each, placed by a NUMA-blind default (numad-like).
    # Memory is first-touched where each guest booted; the load balancer
    # then moved its vCPU (seed 002 §2.2), so memory and vCPU often part.
    host = topology.ivybridge4()
    rng = np.random.default_rng(seed)
    booted = list(rng.choice(host.n_cpus, size=12, replace=False))
    running = list(rng.choice(host.n_cpus, size=12, replace=False))
    vms = []
    for k, name in enumerate(('netperf', 'memcached', 'ycsb') * 4):
        vm = make_vm(host, f'{name}-{k // 3}', name, [int(booted[k])],
                     1024, requested='first-touch', nic='ens1')
        vm.vcpu_cpus[0] = int(running[k])
        vms.append(vm)
    return host, vms


def _auto_mix(seed):
    # One guest of each seed 000 Table 1 class, 16 vCPUs spread two per
    # node, all asking for ``auto``.
    host = topology.amd48()
    rng = np.random.default_rng(seed)
    vms = []
    for k, name in enumerate(('private-stream', 'moderate',
                              'master-slave')):
        cpus = [node * 6 + 2 * k + j for node in range(8) for j in range(2)]
        vms.append(make_vm(host, f'{name}-auto', name,
                           list(rng.permutation(cpus)), 8192,
                           requested='auto'))
    return host, vms


def _dense(seed, count=100):
    # Benchmark host: 100 two-vCPU guests of every class on AMD48.
    host = topology.amd48()
    rng = np.random.default_rng(seed)
    names = ('private-stream', 'moderate', 'master-slave', 'shared-sync',
             'netperf', 'memcached', 'ycsb', 'cpu-bound')
    policies = ('auto', 'first-touch+carrefour', 'interleave+carrefour',
                'first-touch')
    vms = []
    for k in range(count):
        cpus = [int(c) for c in rng.choice(host.n_cpus, 2, replace=False)]
        vms.append(make_vm(host, f'vm-{k:03d}', names[k % len(names)], cpus,
                           1024, requested=policies[k % len(policies)],
                           nic='eth0'))
    return host, vms


IRQ_VECTORS = 8  # receive queues of the scenario NIC, one vector each


def spread_vectors(host, count=IRQ_VECTORS):
    """Each vector's affinity as the kernel spreads a multi-queue NIC's.

    Linux's managed interrupt affinity gives a device's vectors disjoint
    groups of CPUs covering every node (``irq_create_affinity_masks``),
    blind to the device's own node: here ``count`` equal groups in CPU
    order, so each node gets ``count / nodes`` of them.
    """
    size = host.n_cpus // count
    return [frozenset(range(k * size, (k + 1) * size)) for k in range(count)]


def _io_steering(seed):
    # Four netperf guests homed on the NIC's node (vCPU and memory there,
    # where vNUIOA puts them), two memcached guests (memory-intensive,
    # under 500 req/s) on node 1, all through the same NIC. Booted with
    # no emulator pinning: the emulator threads, and the vhost workers
    # libvirt starts in their cgroup, may run on every CPU; the NIC's
    # vectors are spread over every node (spread_vectors).
    host = topology.ivybridge4()
    rng = np.random.default_rng(seed)
    everything = frozenset(range(host.n_cpus))
    near = list(rng.permutation(host.node_cpus(0)))
    far = list(rng.permutation(host.node_cpus(1)))
    vms = []
    for k, (name, cpu) in enumerate(
            [('netperf', near.pop()) for _ in range(4)]
            + [('memcached', far.pop()) for _ in range(2)]):
        vm = make_vm(host, f'{name}-{k}', name, [int(cpu)], 1024,
                     requested='first-touch', nic='ens1')
        vm.emulator_cpus = everything
        vm.io_thread_cpus = everything
        vms.append(vm)
    return host, vms


SCENARIOS = {s.name: s for s in (
    Scenario('master-slave', 'Two 24-vCPU master-slave guests (seed 000 '
             'high imbalance) under first-touch on AMD48.', _master_slave,
             ('carrefour',)),
    Scenario('low', 'Eight well-placed private-data guests (seed 000 low '
             'imbalance) on AMD48.', _low, ()),
    Scenario('shared-contention', 'Two 3-vCPU guests sharing data, split '
             'across the sockets of a 2-socket Xeon (seed 001).',
             _shared_contention, ('brm',)),
    Scenario('io-mix', 'Four each of netperf, memcached and YCSB guests on '
             'the 4-socket host of seed 002, NIC on node 0.', _io_mix,
             ('vnuioa',)),
    Scenario('io-mix-reboot', 'io-mix, with the YCSB guests rebooted at '
             'period 40 (seed 002 §2.2).', _io_mix, ('vnuioa',),
             ((40, 'ycsb'),)),
    Scenario('auto-mix', 'One low, one moderate and one high imbalance '
             'guest asking for auto on AMD48.', _auto_mix, ('auto',)),
    Scenario('io-steering', 'Four netperf guests homed on the NIC\'s node '
             'and two memcached guests on node 1 of the seed 002 host; the '
             'NIC\'s interrupt vectors and the guests\' emulator and vhost '
             'threads spread over every node.', _io_steering,
             ('vnuioa', 'iopath'), irqs=lambda host: {
                 'ens1': spread_vectors(host)}),
    Scenario('dense', '100 two-vCPU guests of every class on AMD48 '
             '(benchmark).', _dense, ('auto', 'carrefour', 'brm', 'vnuioa')),
)}
