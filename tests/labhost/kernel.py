"""The kernel's own view of a guest, read back for the host tier: pure.

The texts come from the lab host's ``/proc`` and cgroup files
(:func:`tests.labhost.inside.kernel_view`); the parsing here is the
tests' own, deliberately not the agent's
(:mod:`agent.sensors.numamaps`, :mod:`agent.sensors.sysfs`), so a test
checks the kernel against the agent rather than the agent against
itself.
"""

import dataclasses
import re

_NODE_PAGES = re.compile(r'\bN(\d+)=(\d+)\b')
_PAGE_KB = re.compile(r'\bkernelpagesize_kB=(\d+)\b')
# QEMU names a vCPU thread "CPU <n>/<accelerator>" (TCG or KVM).
_VCPU_THREAD = re.compile(r'^CPU (\d+)/\w+$')
# A thread's sched file: one line per node when NUMA balancing runs.
_NUMA_FAULTS = re.compile(
    r'^numa_faults node=(\d+) task_private=(\d+) task_shared=(\d+)', re.M)
_PAGES_MIGRATED = re.compile(r'^numa_pages_migrated\s*:\s*(\d+)', re.M)


def cpulist(text):
    """'0-2,5' -> {0, 1, 2, 5}."""
    cpus = set()
    for part in text.strip().split(','):
        if part:
            low, _, high = part.partition('-')
            cpus.update(range(int(low), int(high or low) + 1))
    return frozenset(cpus)


@dataclasses.dataclass(frozen=True)
class Mapping:
    address: int
    policy: str
    pages: dict
    page_kb: int = 4

    @property
    def total(self):
        return sum(self.pages.values())


def mappings(numa_maps):
    """Each line of a numa_maps file: address, memory policy, pages/node."""
    result = []
    for line in numa_maps.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        pages = {int(n): int(p) for n, p in _NODE_PAGES.findall(line)}
        size = _PAGE_KB.search(line)
        result.append(Mapping(int(fields[0], 16), fields[1], pages,
                              int(size.group(1)) if size else 4))
    return result


def memory_mib_per_node(numa_maps):
    """{node: MiB} resident of every mapping, as ``numastat -p`` sums them.

    The guest's RAM, QEMU's own memory and the pages of its libraries
    wherever the page cache holds them.
    """
    kib = {}
    for mapping in mappings(numa_maps):
        for node, pages in mapping.pages.items():
            kib[node] = kib.get(node, 0) + pages * mapping.page_kb
    return {node: total / 1024 for node, total in sorted(kib.items())}


def guest_ram(numa_maps, ram_starts=()):
    """The mapping holding the guest's RAM.

    The one starting at one of ``ram_starts`` (mappings of the guest's
    memory size) where they are known; else the one with by far the
    most pages. The second can mistake QEMU's other memory for the RAM
    of a guest that touched little of it: TCG's translated code grew
    past the RAM a tiny guest with a NIC's boot ROM touched (seen in the
    lab's cloud).
    """
    found = mappings(numa_maps)
    sized = [m for m in found if m.address in set(ram_starts)]
    return max(sized or found, key=lambda m: m.total)


def hinting_faults(sched):
    """{memory node: faults} of a thread's sched text (private + shared)."""
    faults = {}
    for node, private, shared in _NUMA_FAULTS.findall(sched):
        faults[int(node)] = faults.get(int(node), 0) + int(private) + int(
            shared)
    return faults


def pages_migrated(sched):
    """Pages the kernel's NUMA balancing migrated for the thread."""
    match = _PAGES_MIGRATED.search(sched)
    return int(match.group(1)) if match else 0


@dataclasses.dataclass(frozen=True)
class Thread:
    tid: int
    name: str
    cpus_allowed: frozenset
    # What the kernel's NUMA balancing sampled and did for the thread.
    faults: dict = dataclasses.field(default_factory=dict)
    pages_migrated: int = 0

    @property
    def vcpu(self):
        match = _VCPU_THREAD.match(self.name)
        return int(match.group(1)) if match else None


@dataclasses.dataclass(frozen=True)
class GuestView:
    """What the kernel says about one QEMU process."""

    pid: int
    numa_maps: str
    threads: tuple
    # cgroup directory (relative to the cgroup2 root) -> cpuset.mems
    # (the configured value; '' where the cgroup sets none).
    cpuset_mems: dict
    cpuset_mems_effective: dict
    # Start addresses of the mappings of the guest's memory size, where
    # the caller gave it.
    ram_starts: tuple = ()

    @property
    def ram(self):
        return guest_ram(self.numa_maps, self.ram_starts)

    def vcpu_threads(self):
        return sorted((t for t in self.threads if t.vcpu is not None),
                      key=lambda t: t.vcpu)

    def emulator_threads(self):
        return [t for t in self.threads if t.vcpu is None]

    def vcpu_cpus(self):
        return [t.cpus_allowed for t in self.vcpu_threads()]


def status_field(status, name):
    for line in status.splitlines():
        key, _, value = line.partition(':')
        if key == name:
            return value.strip()
    return None


def guest_view(raw):
    """A GuestView from :func:`tests.labhost.inside.kernel_view`'s texts."""
    threads = tuple(
        Thread(int(tid), t['comm'].strip(),
               cpulist(status_field(t['status'], 'Cpus_allowed_list')),
               hinting_faults(t.get('sched', '')),
               pages_migrated(t.get('sched', '')))
        for tid, t in sorted(raw['threads'].items(), key=lambda i: int(i[0])))
    return GuestView(pid=raw['pid'], numa_maps=raw['numa_maps'],
                     threads=threads,
                     cpuset_mems={k: v.strip() for k, v in
                                  raw['cpuset_mems'].items()},
                     cpuset_mems_effective={
                         k: v.strip() for k, v in
                         raw['cpuset_mems_effective'].items()},
                     ram_starts=tuple(raw.get('ram_starts', ())))


def memory_policy(text):
    """numa_maps' policy field: ('interleave', {0, 1}) for 'interleave:0-1'.

    ('default', empty) for the kernel's default; the mode names are the
    kernel's (bind, interleave, prefer, local, default).
    """
    mode, _, nodes = text.partition(':')
    return mode, cpulist(nodes)


def share_on(pages, nodes):
    """The share of ``pages`` ({node: count}) on ``nodes``."""
    total = sum(pages.values())
    return sum(pages.get(n, 0) for n in nodes) / total if total else 0.0


@dataclasses.dataclass(frozen=True)
class Vector:
    """One interrupt vector as the kernel routes and counts it."""

    irq: int
    name: str
    affinity: frozenset
    effective: frozenset
    # {cpu: interrupts delivered there since boot}
    counts: dict

    def delivered_on(self, cpus):
        return sum(n for cpu, n in self.counts.items() if cpu in cpus)


def vectors(raw):
    """A NIC's vectors from :func:`tests.labhost.inside.nic_interrupts`."""
    cpus = [int(word[len('CPU'):]) for word in raw['cpus'].split()]
    found = []
    for irq, texts in sorted(raw['irqs'].items(), key=lambda i: int(i[0])):
        words = texts['line'].split(':', 1)[1].split()
        counts = dict(zip(cpus, (int(w) for w in words[:len(cpus)])))
        found.append(Vector(int(irq), words[-1],
                            cpulist(texts['affinity']),
                            cpulist(texts['effective']), counts))
    return found


def banned_irqs(setup):
    """The IRQs irqbalance's ``setup`` answer lists as banned."""
    return frozenset(int(irq) for irq in re.findall(r'\bIRQ (\d+)', setup))
