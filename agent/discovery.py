"""Host topology and per-node usage: libvirt capabilities plus sysfs.

Parsing is pure (XML text or file contents in, backend values out); the
only I/O is through :mod:`agent.sysfs` readers, which take a root path.
"""

from xml.etree import ElementTree

from nova_numa_policy import backend

from agent import sysfs

# SLIT defaults when the firmware gives no distances: local and remote.
LOCAL_DISTANCE = 10
REMOTE_DISTANCE = 20


def _kib_to_mb(element):
    if element is None or not (element.text or '').strip():
        return 0
    value = int(element.text)
    unit = element.get('unit', 'KiB')
    factor = {'KiB': 1, 'MiB': 1024, 'GiB': 1024 * 1024}.get(unit, 1)
    return value * factor // 1024


def nodes_from_capabilities(caps_xml):
    """NodeInfo per <cell> of libvirt's host capabilities, by id."""
    root = ElementTree.fromstring(caps_xml)
    cells = root.findall('./host/topology/cells/cell')
    ids = sorted(int(c.get('id')) for c in cells)
    nodes = []
    for cell in sorted(cells, key=lambda c: int(c.get('id'))):
        node_id = int(cell.get('id'))
        given = {int(s.get('id')): int(s.get('value'))
                 for s in cell.findall('./distances/sibling')}
        distances = tuple(
            given.get(other, LOCAL_DISTANCE if other == node_id
                      else REMOTE_DISTANCE) for other in ids)
        cpus = tuple(sorted(int(c.get('id'))
                            for c in cell.findall('./cpus/cpu')))
        nodes.append(backend.NodeInfo(
            id=node_id, cpus=cpus,
            memory_total_mb=_kib_to_mb(cell.find('./memory')),
            distances=distances))
    return tuple(nodes)


def infer_nic_node(nic, local_cpus, nodes):
    """Fill a NIC's node from its local CPUs when numa_node says nothing."""
    if nic.numa_node is not None or not local_cpus:
        return nic
    holders = [n.id for n in nodes if local_cpus <= frozenset(n.cpus)]
    if len(holders) != 1:
        return nic
    return backend.NicInfo(nic.name, holders[0], nic.speed_mbps, nic.physnet,
                           nic.bridge)


def physnet_nics(physnet_numa_nodes, known_physnets):
    """NicInfo for nova's [neutron_physnet_*] numa_nodes not yet covered.

    Such a physnet names no interface; it is reported under its own name
    when nova pins it to exactly one node (more nodes say nothing useful
    about locality).
    """
    nics = []
    for physnet, numa_nodes in sorted(physnet_numa_nodes.items()):
        if physnet in known_physnets or len(numa_nodes) != 1:
            continue
        nics.append(backend.NicInfo(name=physnet, numa_node=numa_nodes[0],
                                    physnet=physnet))
    return tuple(nics)


def discover(caps_xml, root, physnet_interfaces, bridge_interfaces,
             physnet_numa_nodes=None):
    """The host's HostTopology from libvirt capabilities and sysfs."""
    nodes = nodes_from_capabilities(caps_xml) or sysfs.sysfs_topology(root)
    nics = []
    for nic in sysfs.read_nics(root, physnet_interfaces, bridge_interfaces):
        nics.append(infer_nic_node(nic, sysfs.nic_local_cpus(root, nic.name),
                                   nodes))
    known = {nic.physnet for nic in nics if nic.physnet}
    nics.extend(physnet_nics(physnet_numa_nodes or {}, known))
    node_ids = {n.id for n in nodes}
    # A NIC on a node libvirt does not report (a memory-less node) would
    # make the report invalid; its locality is then unknown.
    nics = [n if n.numa_node in node_ids or n.numa_node is None
            else backend.NicInfo(n.name, None, n.speed_mbps, n.physnet,
                                 n.bridge) for n in nics]
    return backend.HostTopology(nodes=nodes, nics=tuple(nics))


def parse_proc_stat(text):
    """{cpu id: (busy jiffies, total jiffies)} from /proc/stat."""
    times = {}
    for line in (text or '').splitlines():
        if not line.startswith('cpu') or line.startswith('cpu '):
            continue
        name, *values = line.split()
        numbers = [int(v) for v in values[:8]]
        # user nice system idle iowait irq softirq steal: idle + iowait
        # is time the CPU had nothing to run.
        idle = numbers[3] + (numbers[4] if len(numbers) > 4 else 0)
        total = sum(numbers)
        times[int(name[3:])] = (total - idle, total)
    return times


def node_loads(before, after, nodes):
    """Busy fraction of each node's CPUs between two /proc/stat samples."""
    loads = {}
    for node in nodes:
        busy = total = 0
        for cpu in node.cpus:
            if cpu in before and cpu in after:
                busy += after[cpu][0] - before[cpu][0]
                total += after[cpu][1] - before[cpu][1]
        loads[node.id] = min(1.0, max(0.0, busy / total)) if total > 0 \
            else 0.0
    return loads


def usage(nodes, loads, free_mb):
    """NodeUsage per node; free memory falls back to the node's total."""
    result = []
    for node in nodes:
        free = free_mb.get(node.id, node.memory_total_mb)
        result.append(backend.NodeUsage(
            node_id=node.id, cpu_load=loads.get(node.id, 0.0),
            memory_free_mb=max(0, min(free, node.memory_total_mb))))
    return tuple(result)


def read_cpu_times(root):
    try:
        with open(f'{root.rstrip("/")}/proc/stat') as f:
            return parse_proc_stat(f.read())
    except OSError:
        return {}
