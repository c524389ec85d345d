"""Readers of /sys and /proc: NUMA memory, NIC locality, per-CPU load.

Every reader takes ``root`` (``/`` in production) so tests run them on
fixture trees. Readers return plain values; missing files mean "unknown"
(a host without NUMA has no /sys/devices/system/node), never an error.
"""

import collections
import os
import re

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import memtiers
from nova_numa_policy.contracts import topology

NODE_DIR = 'sys/devices/system/node'
NET_DIR = 'sys/class/net'
PCI_DIR = 'sys/bus/pci/devices'
_MEMINFO_LINE = re.compile(r'^(?:Node \d+ )?(\w+):\s+(\d+)')


def _read(root, *parts):
    try:
        with open(os.path.join(root, *parts)) as f:
            return f.read().strip()
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
    except OSError:
        # e.g. EINVAL reading the speed of a link that is down.
        return None


def parse_cpulist(text):
    """'0-3,8,10-11' -> frozenset of ints; '' -> empty."""
    cpus = set()
    for part in (text or '').split(','):
        part = part.strip()
        if not part:
            continue
        low, _, high = part.partition('-')
        cpus.update(range(int(low), int(high or low) + 1))
    return frozenset(cpus)


def parse_meminfo(text):
    """Fields of /proc/meminfo or a node's meminfo, in kB."""
    fields = {}
    for line in (text or '').splitlines():
        match = _MEMINFO_LINE.match(line)
        if match:
            fields[match.group(1)] = int(match.group(2))
    return fields


def node_ids(root):
    try:
        names = os.listdir(os.path.join(root, NODE_DIR))
    except FileNotFoundError:
        return []
    return sorted(int(n[4:]) for n in names
                  if n.startswith('node') and n[4:].isdigit())


def node_free_memory_mb(root):
    """{node id: free MiB}; a host without NUMA is node 0 of /proc/meminfo."""
    free = {}
    for node in node_ids(root):
        fields = parse_meminfo(_read(root, NODE_DIR, f'node{node}',
                                     'meminfo'))
        if 'MemFree' in fields:
            free[node] = fields['MemFree'] // 1024
    if not free:
        fields = parse_meminfo(_read(root, 'proc', 'meminfo'))
        if 'MemFree' in fields:
            free[0] = fields['MemFree'] // 1024
    return free


def sysfs_topology(root):
    """Nodes from sysfs alone, for hosts whose libvirt reports no cells.

    A node's ``distance`` file lists its distance to every online node,
    in id order; a row of another length is not trusted.
    """
    ids = node_ids(root)
    cells = []
    for node in ids:
        base = (NODE_DIR, f'node{node}')
        row = [int(d) for d in (_read(root, *base, 'distance') or '').split()]
        cells.append((
            node, parse_cpulist(_read(root, *base, 'cpulist')),
            parse_meminfo(_read(root, *base, 'meminfo')).get('MemTotal', 0)
            // 1024,
            dict(zip(ids, row)) if len(row) == len(ids) else {}))
    return topology.nodes(cells)


def _int_or_none(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _device_attribute(root, name, attribute):
    """An attribute of an interface's device, or of the nearest parent.

    A PCI NIC has ``numa_node`` on its own device; a virtio NIC's device
    is the virtio bus device, whose PCI function (its parent) has it.
    Walks up the resolved ``device`` link to ``sys/devices``.
    """
    link = os.path.join(root, NET_DIR, name, 'device')
    if not os.path.exists(link):
        return None
    top = os.path.realpath(os.path.join(root, 'sys', 'devices'))
    path = os.path.realpath(link)
    value = _read(path, attribute)
    while value is None and path.startswith(top + os.sep):
        path = os.path.dirname(path)
        value = _read(path, attribute)
    return value


def _lower_interfaces(root, name):
    """The interfaces ``name`` sits on (the kernel's ``lower_*`` links).

    A bond's or bridge's ports, a VLAN's parent.
    """
    try:
        entries = os.listdir(os.path.join(root, NET_DIR, name))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(e[len('lower_'):] for e in entries
                  if e.startswith('lower_'))


def _own_numa_node(root, name):
    node = _int_or_none(_device_attribute(root, name, 'numa_node'))
    # The kernel writes -1 when the platform does not say (no NUMA, or a
    # firmware that leaves it out).
    return node if node is not None and node >= 0 else None


def nic_numa_node(root, name, _seen=()):
    """The node of an interface: its device's, or its lower interfaces'.

    A bond, bridge or VLAN has no device; it is on a node when every
    lower interface whose node is known is on that one node.
    """
    if name in _seen:
        return None
    node = _own_numa_node(root, name)
    if node is not None:
        return node
    nodes = {nic_numa_node(root, lower, _seen + (name,))
             for lower in _lower_interfaces(root, name)}
    nodes.discard(None)
    return nodes.pop() if len(nodes) == 1 else None


def read_nic(root, name, physnet=None, bridge=None):
    """One interface's locality; None if the interface does not exist."""
    if not os.path.exists(os.path.join(root, NET_DIR, name)):
        return None
    speed = _int_or_none(_read(root, NET_DIR, name, 'speed'))
    return backend.NicInfo(
        name=name, numa_node=nic_numa_node(root, name),
        speed_mbps=speed if speed is not None and speed > 0 else None,
        physnet=physnet, bridge=bridge)


def nic_local_cpus(root, name):
    return parse_cpulist(_device_attribute(root, name, 'local_cpulist'))


def pci_netdevs(root, address):
    """The interfaces of the PCI function at ``address`` (a PF's own)."""
    try:
        return sorted(os.listdir(os.path.join(root, PCI_DIR, address,
                                              'net')))
    except (FileNotFoundError, NotADirectoryError):
        return []


PciFunction = collections.namedtuple(
    'PciFunction', 'address vendor_id product_id netdevs physfn totalvfs')
PciFunction.__doc__ = """What nova's device specs match a PCI function on.

``vendor_id`` and ``product_id`` are 4 lower-case hex digits (None when
unreadable); ``netdevs`` the function's own interfaces; ``physfn`` the
address of its physical function when it is a VF; ``totalvfs`` the VFs
it can have (0 for no SR-IOV physical function).
"""


def _pci_id(text):
    try:
        return '%04x' % int(text, 16)
    except (TypeError, ValueError):
        return None


def pci_functions(root):
    """A :class:`PciFunction` for each PCI function, sorted by address."""
    base = os.path.join(root, PCI_DIR)
    try:
        addresses = sorted(os.listdir(base))
    except OSError:
        return ()
    functions = []
    for address in addresses:
        physfn = os.path.join(base, address, 'physfn')
        totalvfs = _int_or_none(_read(base, address, 'sriov_totalvfs'))
        functions.append(PciFunction(
            address=address,
            vendor_id=_pci_id(_read(base, address, 'vendor')),
            product_id=_pci_id(_read(base, address, 'device')),
            netdevs=tuple(pci_netdevs(root, address)),
            physfn=(os.path.basename(os.path.realpath(physfn))
                    if os.path.exists(physfn) else None),
            totalvfs=max(0, totalvfs or 0)))
    return tuple(functions)


def is_physical(root, name):
    """Whether interface ``name`` is a device, or sits on interfaces."""
    return (os.path.exists(os.path.join(root, NET_DIR, name, 'device'))
            or bool(_lower_interfaces(root, name)))


def read_nics(root, physnet_interfaces, bridge_interfaces, found=()):
    """NicInfo for each uplink that exists, sorted by name.

    ``physnet_interfaces`` and ``bridge_interfaces`` are the operator's;
    ``found`` are ``(physnet, interface)`` pairs discovered elsewhere
    (nova's SR-IOV device specs), used where the operator named neither
    the physnet nor the interface.
    """
    by_name = {}
    for physnet, name in sorted(physnet_interfaces.items()):
        by_name.setdefault(name, {})['physnet'] = physnet
    named = set(physnet_interfaces)
    for physnet, name in sorted(found):
        if physnet not in named and name not in by_name:
            by_name[name] = {'physnet': physnet}
    for bridge, name in sorted(bridge_interfaces.items()):
        by_name.setdefault(name, {})['bridge'] = bridge
    nics = []
    for name, labels in sorted(by_name.items()):
        nic = read_nic(root, name, **labels)
        if nic is not None:
            nics.append(nic)
    return tuple(nics)


# The kernel's memory tiers (Linux 6.1 and later): a directory per tier,
# memory_tier<N>, each with the list of its nodes; and whether reclaim
# demotes pages to a lower tier. Named where the driver extension, which
# reads them too, finds them.
MEMORY_TIERING_DIR = memtiers.MEMORY_TIERING_DIR
MEMORY_TIER_PREFIX = memtiers.MEMORY_TIER_PREFIX
DEMOTION_FILE = memtiers.DEMOTION_FILE


def memory_tier_nodelists(root):
    """{tier directory name: its nodelist text, None if unreadable}.

    None when the kernel has no memory tiers (before 6.1, or built
    without them): the directory is not there.
    """
    base = os.path.join(root, MEMORY_TIERING_DIR)
    try:
        names = os.listdir(base)
    except OSError:
        return None
    return {name: _read(base, name, 'nodelist') for name in sorted(names)
            if name.startswith(MEMORY_TIER_PREFIX)}


def demotion_enabled(root):
    """The kernel's demotion_enabled text, None where there is none."""
    return _read(root, DEMOTION_FILE)


BALANCING_FILE = 'proc/sys/kernel/numa_balancing'


def numa_balancing(root):
    """``kernel.numa_balancing``'s text, None where there is none."""
    return _read(root, BALANCING_FILE)


MEMORY_DIR = 'sys/devices/system/memory'


def memory_blocks(root):
    """({node: memory block numbers}, block size in bytes) of the host.

    Each node's directory links the memory blocks it holds
    (``node<N>/memory<M>``); ``block_size_bytes`` is in hex. ({}, None)
    on a kernel built without memory blocks (no CONFIG_MEMORY_HOTPLUG).
    """
    size = _read(root, MEMORY_DIR, 'block_size_bytes')
    if not size:
        return {}, None
    blocks = {}
    for node in node_ids(root):
        try:
            names = os.listdir(os.path.join(root, NODE_DIR, f'node{node}'))
        except OSError:
            continue
        blocks[node] = sorted(int(n[6:]) for n in names
                              if n.startswith('memory') and n[6:].isdigit())
    return blocks, int(size, 16)


def online_cpus(root):
    """The CPUs the kernel has online."""
    return parse_cpulist(_read(root, 'sys/devices/system/cpu/online'))
