"""The emulated host's shape, and the QEMU command line that makes it.

Pure: a :class:`LabTopology` in, a list of QEMU arguments out. The guest
kernel sees real NUMA nodes (ACPI SRAT/SLIT written by QEMU): CPUs and
memory per node, a distance matrix, and a NIC whose PCI expander bridge
sits on a chosen node, as a multi-socket server's firmware describes it.
The host's shape is the simulator's model
(:class:`numa_policy_lab.shape.NumaShape`): the same CPU numbering,
distances and NICs, reported the same way (``LabTopology.shape``).
"""

import dataclasses

from numa_policy_lab import shape as shape_mod

# QEMU writes the SLIT only for pairs it is told about; every pair is
# given, so the guest never falls back to QEMU's 10/20 default.
LOCAL_DISTANCE = shape_mod.LOCAL_DISTANCE
# The NIC's name in the shape; the guest kernel names its own.
NIC_NAME = 'nic0'
# x86's memory block: kmem hands the kernel whole blocks only.
SLOW_MEMORY_ALIGN_MB = 128
# How the memory-only node gets its memory (LabTopology.slow_memory_kind).
NVDIMM = 'nvdimm'
HMAT = 'hmat'
# The firmware's figures for a node's memory, from a CPU node, by SLIT
# distance: nanoseconds and MB/s per unit of distance. Only ratios count
# for the kernel, which places a node in a tier by its latency and
# bandwidth against those of the CPU nodes' own memory (all of which
# must agree); the emulated memory itself is equally fast everywhere.
HMAT_NS_PER_DISTANCE = 10
HMAT_MBPS_TIMES_DISTANCE = 200000


@dataclasses.dataclass(frozen=True)
class LabTopology:
    """A NUMA host: ``cpus_per_node`` and ``memory_mb_per_node`` each."""

    name: str
    nodes: int
    cpus_per_node: int
    memory_mb_per_node: int
    # Row i, column j: the SLIT distance from node i to node j.
    distances: tuple
    # The node the NIC's PCI expander bridge is attached to; None: no NIC.
    nic_node: int | None = None
    # An SR-IOV NIC (QEMU's igb) instead of virtio, behind an emulated
    # IOMMU so that its VFs can be passed to domains (VFIO).
    sriov: bool = False
    # A memory-only node after the CPU nodes, of this many MiB: an
    # emulated NVDIMM that the lab host gives the kernel as system RAM
    # through dax/kmem (tests/labhost/slowmem.sh), which Debian 12's
    # kernel puts in a lower memory tier. 0: none. Not in ``shape``,
    # the simulator's model, which has no tiers.
    slow_memory_mb: int = 0
    # That node's SLIT distance from every CPU node.
    slow_distance: int = 0
    # NVDIMM: as above. HMAT: the node's memory is plain RAM the kernel
    # has from boot, and the ACPI HMAT gives it a higher latency and a
    # lower bandwidth than the CPU nodes' (-machine hmat=on), which
    # Debian's 6.12 tiers by and 6.1 ignores (doc/source/labhost.rst).
    slow_memory_kind: str = NVDIMM

    def __post_init__(self):
        problems = distance_problems(self.distances, self.nodes)
        if not problems:
            problems = self.shape.problems()
        if self.sriov and self.nic_node is None:
            problems.append('an SR-IOV NIC needs a node')
        if self.slow_memory_mb and (
                self.slow_memory_mb % SLOW_MEMORY_ALIGN_MB
                or self.slow_distance <= max(map(max, self.distances))):
            problems.append(f'slow memory: a multiple of '
                            f'{SLOW_MEMORY_ALIGN_MB} MiB, farther than '
                            f'every CPU node')
        if self.slow_memory_kind not in (NVDIMM, HMAT):
            problems.append(f'slow memory kind: {NVDIMM} or {HMAT}')
        if problems:
            raise ValueError(f'{self.name}: {"; ".join(problems)}')

    @property
    def slow_node(self):
        """The memory-only node's id, or None."""
        return self.nodes if self.slow_memory_mb else None

    @property
    def slow_nvdimm(self):
        """Whether the memory-only node's memory is an NVDIMM's (kmem)."""
        return bool(self.slow_memory_mb) and self.slow_memory_kind == NVDIMM

    @property
    def slow_hmat(self):
        """Whether it is plain memory the HMAT tells apart."""
        return bool(self.slow_memory_mb) and self.slow_memory_kind == HMAT

    @property
    def shape(self):
        """The host's shape, as the simulator models a host."""
        nics = (() if self.nic_node is None
                else (shape_mod.Nic(NIC_NAME, self.nic_node),))
        return shape_mod.NumaShape(
            name=self.name, cpus_per_node=self.cpus_per_node,
            memory_mb_per_node=self.memory_mb_per_node,
            distances=self.distances, nics=nics)

    @property
    def cpus(self):
        return self.shape.n_cpus

    @property
    def memory_mb(self):
        return self.shape.memory_mb

    def node_cpus(self, node):
        return self.shape.node_cpus(node)


def distance_problems(distances, nodes):
    """What makes ``distances`` an invalid SLIT for ``nodes`` nodes."""
    return shape_mod.distance_problems(distances, nodes)


# Two sockets, the NIC on the second: the shape of most compute nodes.
TWO_NODES = LabTopology(
    name='two-nodes', nodes=2, cpus_per_node=2, memory_mb_per_node=1024,
    distances=((10, 21), (21, 10)), nic_node=1)

# Two sockets of two nodes each (sub-NUMA clustering): near and far
# remote nodes, none at QEMU's default distance, the NIC on node 2.
FOUR_NODES = LabTopology(
    name='four-nodes', nodes=4, cpus_per_node=1, memory_mb_per_node=768,
    distances=((10, 12, 28, 32),
               (12, 10, 32, 28),
               (28, 32, 10, 12),
               (32, 28, 12, 10)),
    nic_node=2)

# TWO_NODES with an SR-IOV NIC on node 1 (emulated by a newer QEMU than
# Debian 12's: tests/labhost/emulator.py).
SRIOV_NODES = dataclasses.replace(TWO_NODES, name='sriov-nodes', sriov=True)

# The cloud's second compute: unlike TWO_NODES in what the scheduler
# reads, four nodes and the NIC on node 0, yet each node a TWO_NODES
# node's two CPUs (a guest that fits one node fits one node on both), in
# the same RAM as TWO_NODES in all.
FOUR_NODES_NIC_ON_0 = LabTopology(
    name='four-nodes-nic0', nodes=4, cpus_per_node=2, memory_mb_per_node=512,
    distances=FOUR_NODES.distances, nic_node=0)

# TWO_NODES with a lower memory tier: a memory-only node 2, farther from
# both CPU nodes than they are from each other, as a CXL expander is.
TIERED_NODES = dataclasses.replace(
    TWO_NODES, name='tiered-nodes', slow_memory_mb=512, slow_distance=30)

# The same shape with node 2 as plain memory that only the HMAT says is
# slower: what a kernel that tiers by the firmware's figures needs
# (tests/labhost/labkernel.py), where 6.1 sees one tier.
HMAT_NODES = dataclasses.replace(
    TIERED_NODES, name='hmat-nodes', slow_memory_kind=HMAT)

TOPOLOGIES = {t.name: t for t in (TWO_NODES, FOUR_NODES, SRIOV_NODES,
                                  FOUR_NODES_NIC_ON_0, TIERED_NODES,
                                  HMAT_NODES)}

# QEMU's model of an Intel 82576, a NIC with SR-IOV.
SRIOV_NIC = 'igb'

# PCI bus numbers of the expander bridge: above those of the root bus.
EXPANDER_BUS = 128

# The lab host's CPU under TCG: x86-64-v2 (SSE4.2, POPCNT), no AVX. With
# TCG's 'max' the lab's glibc and Python take their AVX2 paths, which
# Debian 12's QEMU emulates slowly: a Python start with the agent's
# imports took 18-24 s under 'max' or Haswell and 7 s under Nehalem,
# libvirtd's start 19-26 s and 7 s (on this machine kind, two lab hosts
# side by side; doc/source/labhost.rst).
TCG_CPU = 'Nehalem'


def numa_args(topology):
    """-object/-numa arguments: memory backends, nodes and the SLIT."""
    args = []
    for node in range(topology.nodes):
        cpus = topology.node_cpus(node)
        args += ['-object', f'memory-backend-ram,id=mem{node},'
                            f'size={topology.memory_mb_per_node}M',
                 '-numa', f'node,nodeid={node},cpus={cpus[0]}-{cpus[-1]},'
                          f'memdev=mem{node}']
    slow = topology.slow_node
    if topology.slow_nvdimm:
        args += ['-numa', f'node,nodeid={slow}']
    elif topology.slow_hmat:
        # With an HMAT, a node without CPUs names its nearest CPU node
        # (its initiator): any, all being as far.
        args += ['-object', f'memory-backend-ram,id=mem{slow},'
                            f'size={topology.slow_memory_mb}M',
                 '-numa', f'node,nodeid={slow},memdev=mem{slow},'
                          f'initiator=0']
    for i in range(topology.nodes):
        for j in range(i + 1, topology.nodes):
            args += ['-numa', f'dist,src={i},dst={j},'
                              f'val={topology.distances[i][j]}']
        if slow is not None:
            args += ['-numa', f'dist,src={i},dst={slow},'
                              f'val={topology.slow_distance}']
    return args


def hmat_distance(topology, initiator, target):
    """The SLIT distance the HMAT's figures for this pair follow."""
    if target == topology.slow_node:
        return topology.slow_distance
    return topology.distances[initiator][target]


def hmat_args(topology):
    """-numa hmat-lb: latency and bandwidth from each CPU node to each.

    Every pair, so that the kernel finds each node's best initiator and
    the CPU nodes' own memory alike (its reference for DRAM).
    """
    if not topology.slow_hmat:
        return []
    args = []
    for initiator in range(topology.nodes):
        for target in range(topology.nodes + 1):
            distance = hmat_distance(topology, initiator, target)
            pair = (f'hmat-lb,initiator={initiator},target={target},'
                    f'hierarchy=memory')
            args += ['-numa', f'{pair},data-type=access-latency,'
                              f'latency={distance * HMAT_NS_PER_DISTANCE}',
                     '-numa', f'{pair},data-type=access-bandwidth,'
                              f'bandwidth='
                              f'{HMAT_MBPS_TIMES_DISTANCE // distance}M']
    return args


def slow_memory_args(topology):
    """The memory-only node's NVDIMM, RAM-backed: no file, no persistence.

    Without a label area: the kernel makes one raw namespace of it, which
    the lab host turns into device-dax and then system RAM.
    """
    if not topology.slow_nvdimm:
        return []
    return ['-object', f'memory-backend-ram,id=slowmem,'
                       f'size={topology.slow_memory_mb}M',
            '-device', f'nvdimm,id=nvdimm0,memdev=slowmem,'
                       f'node={topology.slow_node}']


def memory_args(topology):
    """-machine and -m: room for the NVDIMM beside the nodes' RAM."""
    if topology.slow_hmat:
        # The memory-only node's RAM is the machine's, as the others'.
        return ['-machine', 'q35,hmat=on', '-m',
                f'{topology.memory_mb + topology.slow_memory_mb}M']
    if not topology.slow_memory_mb:
        return ['-machine', 'q35', '-m', f'{topology.memory_mb}M']
    most = topology.memory_mb + topology.slow_memory_mb
    return ['-machine', 'q35,nvdimm=on',
            '-m', f'{topology.memory_mb}M,slots=1,maxmem={most}M']


def nic_args(topology):
    """A NIC behind a PCIe expander bridge on ``nic_node``.

    The kernel gives the NIC's PCI function the bridge's node; a virtio
    device below it has no node of its own (the agent must look at the
    PCI parent). An SR-IOV NIC's VFs sit on the same bus as their PF.
    """
    if topology.nic_node is None:
        return []
    model = SRIOV_NIC if topology.sriov else 'virtio-net-pci'
    return ['-device', f'pxb-pcie,id=pxb0,bus_nr={EXPANDER_BUS},'
                       f'numa_node={topology.nic_node},bus=pcie.0',
            '-device', 'pcie-root-port,id=rp0,bus=pxb0,chassis=1',
            '-netdev', 'user,id=net0,restrict=on',
            '-device', f'{model},netdev=net0,bus=rp0,romfile=']


def iommu_args(topology):
    """An emulated Intel IOMMU, for passing the NIC's VFs to domains.

    Created before the PCI devices it translates for. It is started
    without interrupt remapping, so VFIO must be told to accept that
    (``tests.labhost.inside.prepare_sriov``).
    """
    if not topology.sriov:
        return []
    return ['-device', 'intel-iommu,intremap=off']


def accel_option(topology, accel):
    """QEMU's ``-accel`` value: under TCG, one thread for every vCPU.

    Each lab host then uses at most one of this machine's cores, however
    many of its vCPUs a test keeps busy (busy loops, a guest writing
    memory): two lab hosts side by side, one per core, no longer take
    each other's time, and the host tier went from 1126 s to 598 s
    (doc/source/labhost.rst). With the emulated IOMMU it is needed too:
    with a thread per vCPU, QEMU 10.0 once aborted while the lab host
    booted, on an assertion in its TLB code (``iotlb_to_section``).
    """
    if accel == 'tcg':
        return 'tcg,thread=single'
    return accel


def kernel_args(topology):
    """Kernel command line words the topology needs."""
    return ['intel_iommu=on'] if topology.sriov else []


def devices_needed(topology):
    """Device models beyond those every QEMU has."""
    return (SRIOV_NIC,) if topology.sriov else ()


def share_args(tag, path, readonly):
    """A virtio-9p export of ``path`` mounted in the guest by ``tag``."""
    ro = ',readonly=on' if readonly else ''
    return ['-fsdev', f'local,id={tag},path={path},security_model=none,'
                      f'multidevs=remap{ro}',
            '-device', f'virtio-9p-pci,fsdev={tag},mount_tag={tag},'
                       f'bus=pcie.0']


def qemu_args(topology, kernel, initrd, cmdline, shares, accel='tcg',
              qemu=('qemu-system-x86_64',)):
    """The whole QEMU command line of a lab host.

    ``shares``: (tag, host path, read-only) triples. The serial console
    is QEMU's stdout; nothing else is emulated (no display, no disk).
    ``qemu``: the emulator's command (tests/labhost/emulator.py).
    """
    cpu = 'host' if accel == 'kvm' else TCG_CPU
    cmdline = ' '.join([cmdline, *kernel_args(topology)])
    args = [*qemu, *memory_args(topology),
            '-accel', accel_option(topology, accel), '-cpu', cpu,
            '-smp', f'{topology.cpus},sockets={topology.nodes},'
                    f'cores={topology.cpus_per_node},threads=1',
            '-nodefaults', '-no-user-config', '-display', 'none',
            '-vga', 'none', '-serial', 'stdio', '-no-reboot',
            '-kernel', kernel, '-initrd', initrd, '-append', cmdline]
    args += iommu_args(topology)
    args += numa_args(topology)
    args += hmat_args(topology)
    args += slow_memory_args(topology)
    for tag, path, readonly in shares:
        args += share_args(tag, path, readonly)
    return args + nic_args(topology)
