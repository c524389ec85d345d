"""The host as the libvirt backend observes it: topology, load, interrupts.

What does not belong to any one guest: the NUMA topology libvirt and
sysfs describe (read again when the connection is new), the CPUs no I/O
may be steered to, each node's load over the rate window, the kernel's
memory tiers, and the uplinks' interrupt vectors (through
:class:`agent.backend.iopath.IoPath`).
"""

import dataclasses

import libvirt
from oslo_log import log as logging

from nova_numa_policy.contracts import memtiers as tier_files

from agent.backend import calls
from agent.sensors import discovery
from agent.sensors import guestio
from agent.sensors import irqs
from agent.sensors import memtiers
from agent.sensors import sysfs

LOG = logging.getLogger(__name__)


def network_bridge(connection, name):
    """The bridge of libvirt network ``name``, or None if it has none."""
    try:
        return connection.get().networkLookupByName(name).bridgeName()
    except libvirt.libvirtError as exc:
        # A network of macvtaps or VFs has no bridge; a network gone
        # leaves the guest's interface without an uplink here.
        LOG.debug('No bridge for network %s: %s', name, exc)
        return None


def _held_by_libvirt(dom):
    try:
        state = dom.state()
    except libvirt.libvirtError:
        # Gone since the listing: the observation skips it as it is.
        return False
    if calls.held_by_libvirt(state):
        LOG.debug('Not observing %s this period: libvirt is starting or '
                  'migrating it (state, reason %s)', dom.name(), state)
        return True
    return False


class HostObserver:
    """Reads the host: ``connection`` to libvirt, files under ``root``.

    ``timing``: :class:`agent.backend.settings.Timing`; ``share``:
    :class:`agent.backend.settings.HostShare`; ``io_path``: the uplinks'
    interrupts.
    """

    def __init__(self, connection, root, timing, share, io_path):
        self._connection = connection
        self._root = root
        self._timing = timing
        self._uplinks = share.uplinks
        self._cpu_partition = share.cpu_partition
        self._io_path = io_path
        self._topology = None
        self._topology_generation = None
        # ((time, per-CPU times), (node loads, loads of the nodes' floating
        # CPUs)) of the last measured window; None before the first.
        self._cpu_window = None
        # Why the uplinks' interrupts are not ours, as last observed.
        self.irq_hands_off = None
        self._tiers = memtiers.TierSensor(root)
        # (topology, ranks, that topology ranked) of the last ranking.
        self._ranked = None

    def _call(self, what, func, *args):
        return calls.call(self._connection, what, func, *args)

    def topology(self):
        conn = self._connection.get()
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

    def hostname(self):
        conn = self._connection.get()
        return self._call('getHostname', conn.getHostname)

    def live_nodeset_supported(self):
        """Whether this hypervisor can change a running guest's nodeset.

        libvirt's qemu driver can only on a privileged (system) connection
        with the cpuset cgroup controller; the test driver always can.
        """
        conn = self._connection.get()
        kind = self._call('getType', conn.getType)
        if kind == 'TEST':
            return True
        return kind == 'QEMU' and '/session' not in self._connection.uri

    def active_domains(self):
        """The running domains, but those libvirt is starting or migrating.

        Those are observed in the first period after libvirt's job ends:
        observing one while it lasts would wait up to 30 s for it
        (:func:`calls.held_by_libvirt`), and every other guest with it.
        """
        conn = self._connection.get()
        return [dom for dom in self._call(
            'listAllDomains', conn.listAllDomains,
            libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE)
            if not _held_by_libvirt(dom)]

    def guest_cpus(self, topology):
        """The host's CPUs guests without dedicated CPUs may run on."""
        return self._cpu_partition.floating(
            cpu for node in topology.nodes for cpu in node.cpus)

    def cpumap_size(self):
        return max(max(n.cpus, default=-1)
                   for n in self.topology().nodes) + 1

    @property
    def load_measured(self):
        """Whether a first CPU-time sample was taken."""
        return self._cpu_window is not None

    def start_load_window(self):
        """Take the nodes' first CPU-time sample (their load reads 0)."""
        self._cpu_window = ((self._timing.clock(),
                             discovery.read_cpu_times(self._root)), ({}, {}))

    def usage(self, topology):
        # What guests without dedicated CPUs may use of each node, and
        # how busy that is: the scheduler's capacity for them.
        floating = self._cpu_partition.floating_by_node(topology.nodes)

        def loads(before, now):
            before = now if before is None else before
            return (discovery.node_loads(before[1], now[1], topology.nodes),
                    discovery.floating_loads(before[1], now[1], floating))

        sample = (self._timing.clock(), discovery.read_cpu_times(self._root))
        self._cpu_window = guestio.windowed(self._cpu_window, sample, loads,
                                            self._timing.rate_window)
        node_loads, loads_of_floating = self._cpu_window[1]
        return discovery.usage(topology.nodes, node_loads,
                               sysfs.node_free_memory_mb(self._root),
                               floating, loads_of_floating)

    def memory_tiers(self):
        """The kernel's memory tiers and demotion, read afresh.

        Read each period, not with the topology: memory a driver brings
        online (dax/kmem) joins a tier, and demotion is a switch an
        operator turns, while libvirt's connection stays the same.
        """
        return self._tiers.read()

    def ranked(self, topology, memory_tiers):
        """``topology`` with each node's tier rank from ``memory_tiers``.

        The same object while neither changes: what the loops build once
        per topology object (``contracts.topology.per_topology``) stays
        built from one period to the next.
        """
        last = self._ranked
        if (last is None or last[0] is not topology
                or last[1] != memory_tiers.ranks):
            last = (topology, memory_tiers.ranks,
                    tier_files.ranked(topology, memory_tiers))
            self._ranked = last
        return last[2]

    def interrupts(self, topology):
        """(the uplinks' IrqStates, why they are not ours) or ((), None).

        Nothing is read without the steering daemon or without uplinks.
        """
        if not self._io_path.configured or not topology.nics:
            self.irq_hands_off = None
            return (), None
        self.irq_hands_off = self._io_path.hands_off()
        return self._io_path.irqs(topology.nics), self.irq_hands_off
