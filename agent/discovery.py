"""Host topology and per-node usage: libvirt capabilities plus sysfs.

The capabilities are read as the driver extension reads them
(:mod:`nova_numa_policy.topology`); sysfs stands in where they list no
nodes and gives the NICs.

Parsing is pure (XML text or file contents in, backend values out); the
only I/O is through :mod:`agent.sysfs` readers, which take a root path.
"""

import json
import logging
import os
import tempfile

from nova_numa_policy import backend
from nova_numa_policy import topology

from agent import sysfs

LOG = logging.getLogger(__name__)


def write_uplinks(path, nics):
    """Hand the uplinks to the driver extension; False if it cannot.

    Written whole or not at all (a temporary file renamed over the old
    one), so nova-compute never reads half a list.
    """
    directory = os.path.dirname(path) or '.'
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix='.uplinks-')
        with os.fdopen(fd, 'w') as f:
            f.write(topology.render_uplinks(nics))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        LOG.warning('Cannot write the uplinks for the driver extension to '
                    '%s (%s): it falls back to nova\'s physnet options',
                    path, exc)
        return False
    return True


def infer_nic_node(nic, local_cpus, nodes):
    """Fill a NIC's node from its local CPUs when numa_node says nothing."""
    if nic.numa_node is not None or not local_cpus:
        return nic
    holders = [n.id for n in nodes if local_cpus <= frozenset(n.cpus)]
    if len(holders) != 1:
        return nic
    return backend.NicInfo(nic.name, holders[0], nic.speed_mbps, nic.physnet,
                           nic.bridge)


def sriov_uplinks(device_specs):
    """``(physnet, devname or PCI address)`` from nova's ``[pci] device_spec``.

    Each value is a JSON object, or a list of them; those naming a
    ``physical_network`` and a ``devname`` or an exact ``address`` (no
    wildcard) are SR-IOV physical functions whose VFs carry that physnet.
    Anything else (other devices, patterns, bad JSON) says nothing about
    an uplink and is skipped.
    """
    found = []
    for text in device_specs:
        try:
            specs = json.loads(text)
        except ValueError:
            continue
        for spec in specs if isinstance(specs, list) else [specs]:
            if not isinstance(spec, dict):
                continue
            physnet = spec.get('physical_network')
            device = spec.get('devname') or spec.get('address')
            if (isinstance(physnet, str) and isinstance(device, str)
                    and not any(c in device for c in '*[]')):
                found.append((physnet, device))
    return found


def _interfaces(root, found):
    """``(physnet, interface)`` for each found uplink that is a device.

    A PCI address stands for its function's interfaces; OVS lists patch
    and internal ports beside the physical ones, which have no device
    (or, for a kernel bond, lower interfaces) and say nothing of a node.
    """
    pairs = []
    for physnet, device in found:
        names = (sysfs.pci_netdevs(root, device) if ':' in device
                 else [device])
        pairs.extend((physnet, name) for name in names
                     if sysfs.is_physical(root, name))
    return pairs


def discover(caps_xml, root, physnet_interfaces, bridge_interfaces,
             physnet_numa_nodes=None, found=()):
    """The host's HostTopology from libvirt capabilities and sysfs.

    The uplinks: the operator's interfaces first, then those ``found``
    (``(physnet, interface or PCI address)``: nova's SR-IOV physical
    functions from :func:`sriov_uplinks`, OVS bridges' ports from
    :mod:`agent.ovs`), then nova's physnet NUMA nodes for physnets still
    without an interface.
    """
    nodes = (topology.nodes_from_capabilities(caps_xml)
             or sysfs.sysfs_topology(root))
    nics = []
    for nic in sysfs.read_nics(root, physnet_interfaces, bridge_interfaces,
                               _interfaces(root, found)):
        nics.append(infer_nic_node(nic, sysfs.nic_local_cpus(root, nic.name),
                                   nodes))
    known = {nic.physnet for nic in nics if nic.physnet}
    nics.extend(topology.physnet_nics(physnet_numa_nodes or {}, known))
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
