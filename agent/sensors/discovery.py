"""Host topology and per-node usage: libvirt capabilities plus sysfs.

The capabilities are read as the driver extension reads them
(:mod:`nova_numa_policy.contracts.topology`); sysfs stands in where they list
no nodes and gives the NICs.

Parsing is pure (XML text or file contents in, backend values out); the
only I/O is through :mod:`agent.sensors.sysfs` readers, which take a root path.
"""

import collections
import dataclasses
import json
import os
import re
import tempfile
import typing

from oslo_log import log as logging

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import topology

from agent.sensors import procfs
from agent.sensors import sysfs

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Uplinks:
    """Where the host's networks leave it, as the operator and nova say.

    ``physnet_interfaces`` and ``bridge_interfaces`` ({name: interface})
    and ``physnet_numa_nodes`` ({physnet: nodes}) are read from the
    options; ``find`` gives the (physnet, interface) pairs found beyond
    them (nova's SR-IOV device specs, OVSDB), asked at each discovery;
    ``file`` is where the driver extension reads the uplinks found.
    """

    physnet_interfaces: dict = dataclasses.field(default_factory=dict)
    bridge_interfaces: dict = dataclasses.field(default_factory=dict)
    physnet_numa_nodes: dict = dataclasses.field(default_factory=dict)
    find: typing.Callable[[], tuple] = tuple
    file: typing.Optional[str] = None

    def discover(self, caps_xml, root):
        """The host's topology with these uplinks, written for the driver."""
        found = discover(caps_xml, root, self.physnet_interfaces,
                         self.bridge_interfaces, self.physnet_numa_nodes,
                         self.find())
        if self.file:
            write_uplinks(self.file, found.nics)
        return found


def write_uplinks(path, nics):
    """Hand the uplinks to the driver extension; False if it cannot."""
    return write_for_driver(
        path, topology.render_uplinks(nics), 'the uplinks',
        "it falls back to nova's physnet options")


def write_for_driver(path, text, what, fallback):
    """Write ``text`` for the driver extension; False (and say so) if not.

    Written whole or not at all (a temporary file renamed over the old
    one), so nova-compute never reads half of it.
    """
    directory = os.path.dirname(path) or '.'
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix='.numa-policy-')
        with os.fdopen(fd, 'w') as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        LOG.warning('Cannot write %s for the driver extension to %s (%s): '
                    '%s', what, path, exc, fallback)
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


# nova's [pci] device_spec: what an entry may say, and how it is matched
# against a PCI function (nova/pci/devspec.py has the same rules).
# Our own reading rather than nova.pci.devspec, which the agent cannot
# import: nova is no requirement of this package and the agent runs on
# compute nodes without it (cmd.py registers the few nova options it
# reads for the same reason). Only the agent reads device_spec; the
# scheduler and driver side, where nova is importable, never does. And
# nova's class loads nova's configuration and objects, and resolves a
# devname through the host's /sys as it parses, where the agent reads
# sysfs under [numa_policy_agent] sysfs_root. Were it used when
# importable, one host could read its uplinks two ways.
ANY = '*'
_HEX_DIGITS = frozenset('0123456789abcdefABCDEF')
# (largest value, printed form) of a PCI address's domain, bus, slot and
# function, as sysfs prints them.
_ADDRESS_FIELDS = ((0xFFFF, '%04x'), (0xFF, '%02x'), (0x1F, '%02x'),
                   (0x7, '%x'))
_ADDRESS_KEYS = ('domain', 'bus', 'slot', 'function')

DeviceSpec = collections.namedtuple(
    'DeviceSpec', 'physnet vendor_id product_id address devname')
DeviceSpec.__doc__ = """One ``[pci] device_spec`` entry naming an uplink.

``vendor_id`` and ``product_id`` are 4 lower-case hex digits or
:data:`ANY`; ``address`` an :class:`AddressPattern` or None (any);
``devname`` an interface name or None.
"""

AddressPattern = collections.namedtuple('AddressPattern',
                                        'fields regex exact')
AddressPattern.__doc__ = """A device spec's ``address``.

``fields`` are the domain, bus, slot and function: compiled regular
expressions matched at the start of each field (``regex``, the dict
form), or values printed as sysfs prints them or :data:`ANY` (the string
form). ``exact`` when the pattern names a single address, which then
also stands for the VFs of the function at that address.
"""


def _hex(value, maximum, form, what):
    if not isinstance(value, str):
        raise ValueError(f'{what} {value!r} is not a string')
    value = value.strip()
    if value == ANY:
        return ANY
    try:
        number = int(value, 16)
    except ValueError:
        raise ValueError(f'{what} {value!r} is not hexadecimal') from None
    if not 0 <= number <= maximum:
        raise ValueError(f'{what} {value!r} is out of range')
    return form % number


def parse_address(value):
    """An :class:`AddressPattern` from a device spec's ``address``.

    A string is ``[[[[domain]:]bus]:][slot][.[function]]``, each part
    hex or ``*`` and a part left out any; a dict gives ``domain``,
    ``bus``, ``slot`` and ``function`` as regular expressions, a key left
    out any. ValueError for what nova refuses.
    """
    if isinstance(value, str):
        head, _, function = value.partition('.')
        parts = head.split(':') if head else []
        if len(parts) > 3:
            raise ValueError(f'address {value!r} has too many parts')
        parts = [ANY] * (3 - len(parts)) + parts + [function]
        fields = tuple(
            _hex(part.strip() or ANY, maximum, form, f'address {key}')
            for part, (maximum, form), key in zip(parts, _ADDRESS_FIELDS,
                                                  _ADDRESS_KEYS))
        return AddressPattern(fields, False, ANY not in fields)
    if isinstance(value, dict):
        fields = []
        for key in _ADDRESS_KEYS:
            text = value.get(key, '.*')
            if not isinstance(text, str):
                raise ValueError(f'address {key} {text!r} is not a string')
            try:
                fields.append(re.compile(text))
            except re.error as exc:
                raise ValueError(f'address {key} {text!r}: {exc}') from None
        return AddressPattern(tuple(fields), True, all(
            f.pattern and set(f.pattern) <= _HEX_DIGITS for f in fields))
    raise ValueError(f'address {value!r} is neither a string nor an object')


def parse_device_spec(entry):
    """The :class:`DeviceSpec` of one entry; None if it names no physnet.

    ValueError for an entry nova refuses (wrong types, bad hex or
    regular expressions, ``devname`` with ``address``).
    """
    if not isinstance(entry, dict):
        raise ValueError(f'{entry!r} is not an object')
    physnet = entry.get('physical_network')
    if physnet is None:
        return None
    if not isinstance(physnet, str):
        raise ValueError(f'physical_network {physnet!r} is not a string')
    # nova reads an empty devname or address as none given.
    devname = entry.get('devname') or None
    address = entry.get('address') or None
    if devname is not None and not isinstance(devname, str):
        raise ValueError(f'devname {devname!r} is not a string')
    if devname is not None and address is not None:
        raise ValueError('devname and address together')
    return DeviceSpec(
        physnet=physnet,
        vendor_id=_hex(entry.get('vendor_id', ANY), 0xFFFF, '%04x',
                       'vendor_id'),
        product_id=_hex(entry.get('product_id', ANY), 0xFFFF, '%04x',
                        'product_id'),
        address=None if address is None else parse_address(address),
        devname=devname)


def parse_device_specs(device_specs):
    """The :class:`DeviceSpec` of each ``[pci] device_spec`` entry.

    Each value is a JSON object, or a list of them. Entries without a
    ``physical_network`` name no uplink; those and anything nova would
    refuse (bad JSON, wrong types) are skipped, and said so once here.
    """
    found = []
    for text in device_specs:
        try:
            value = json.loads(text)
        except (TypeError, ValueError) as exc:
            LOG.warning('nova [pci] device_spec %r is not JSON (%s): it '
                        'names no uplink', text, exc)
            continue
        for entry in value if isinstance(value, list) else [value]:
            try:
                spec = parse_device_spec(entry)
            except ValueError as exc:
                LOG.warning('nova [pci] device_spec entry %r is skipped: %s',
                            entry, exc)
                continue
            if spec is None:
                LOG.debug('nova [pci] device_spec entry %r has no '
                          'physical_network: not an uplink', entry)
                continue
            found.append(spec)
    return found


def _address_fields(address):
    domain, _, rest = address.partition(':')
    bus, _, rest = rest.partition(':')
    slot, _, function = rest.partition('.')
    return domain, bus, slot, function


def address_matches(pattern, address):
    """Whether an :class:`AddressPattern` takes a PCI address (pure)."""
    fields = _address_fields(address.lower())
    if pattern.regex:
        return all(regex.match(field)
                   for regex, field in zip(pattern.fields, fields))
    return all(want in (ANY, field)
               for want, field in zip(pattern.fields, fields))


def spec_matches(spec, function, pf=None):
    """Whether a device spec takes a PCI function (pure).

    ``function`` and ``pf`` (the function's physical function when it is
    a VF) are :class:`agent.sensors.sysfs.PciFunction`. Every key given must
    match. As in nova, a ``devname`` or exact ``address`` naming a PF
    takes its VFs too; the vendor and product are the function's own.
    """
    if spec.vendor_id not in (ANY, function.vendor_id):
        return False
    if spec.product_id not in (ANY, function.product_id):
        return False
    if spec.devname is not None:
        return (spec.devname in function.netdevs
                or (pf is not None and spec.devname in pf.netdevs))
    if spec.address is None:
        return True
    return (address_matches(spec.address, function.address)
            or (spec.address.exact and pf is not None
                and address_matches(spec.address, pf.address)))


def _uplink_of(function):
    """The address of the uplink a matched function stands for, or None.

    A VF stands for its PF; a PF or a NIC without SR-IOV for itself;
    anything else (no interface, no VFs) is no uplink.
    """
    if function.physfn:
        return function.physfn
    if function.totalvfs > 0 or function.netdevs:
        return function.address
    return None


def match_uplinks(specs, functions):
    """``(physnet, PCI address)`` of the uplinks the specs take (pure).

    ``functions`` are the host's :class:`agent.sensors.sysfs.PciFunction`. Each
    pair once, in the order of the specs, then of the addresses.
    """
    by_address = {f.address: f for f in functions}
    found = []
    for spec in specs:
        for function in functions:
            pf = by_address.get(function.physfn) if function.physfn else None
            if not spec_matches(spec, function, pf):
                continue
            uplink = _uplink_of(function)
            if uplink and (spec.physnet, uplink) not in found:
                found.append((spec.physnet, uplink))
    return found


def pf_uplinks(specs, root):
    """:func:`match_uplinks` on the PCI functions sysfs has under ``root``."""
    if not specs:
        return []
    return match_uplinks(specs, sysfs.pci_functions(root))


def sriov_uplinks(device_specs, root=None):
    """``(physnet, devname or PCI address)`` from nova's ``[pci] device_spec``.

    The entries naming a ``physical_network`` (:func:`parse_device_specs`)
    are matched, as nova matches them, against the PCI functions in sysfs
    under ``root``: the physical functions whose VFs (or whose own
    interfaces) carry that physnet, by address. Without ``root`` there is
    nothing to match against: only the entries naming one device by
    themselves, a ``devname`` or an exact string ``address``, are given,
    as named.
    """
    specs = parse_device_specs(device_specs)
    if root is not None:
        return pf_uplinks(specs, root)
    found = []
    for spec in specs:
        if spec.devname is not None:
            found.append((spec.physnet, spec.devname))
        elif (spec.address is not None and not spec.address.regex
              and spec.address.exact):
            found.append((spec.physnet, '%s:%s:%s.%s' % spec.address.fields))
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
    :mod:`agent.sensors.ovs`), then nova's physnet NUMA nodes for
    physnets still without an interface.
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


# The fields of psutil's per-CPU times that make up a CPU's time: guest
# and guest_nice are already counted in user and nice.
_CPU_TIME_FIELDS = ('user', 'nice', 'system', 'idle', 'iowait', 'irq',
                    'softirq', 'steal')


def busy_and_total(cpu_times):
    """(busy, total) seconds of one CPU's psutil times.

    idle + iowait is time the CPU had nothing to run.
    """
    total = sum(getattr(cpu_times, name, 0.0) for name in _CPU_TIME_FIELDS)
    idle = cpu_times.idle + getattr(cpu_times, 'iowait', 0.0)
    return total - idle, total


def busy_fraction(before, after, cpus):
    """Busy fraction of ``cpus`` between two /proc/stat samples, 0 to 1.

    CPUs missing from either sample (offline) count for nothing; 0.0
    when no time passed on any of them.
    """
    busy = total = 0
    for cpu in cpus:
        if cpu in before and cpu in after:
            busy += after[cpu][0] - before[cpu][0]
            total += after[cpu][1] - before[cpu][1]
    return min(1.0, max(0.0, busy / total)) if total > 0 else 0.0


def node_loads(before, after, nodes):
    """Busy fraction of each node's CPUs between two /proc/stat samples."""
    return {node.id: busy_fraction(before, after, node.cpus)
            for node in nodes}


def floating_loads(before, after, floating):
    """Busy fraction of each node's floating CPUs, the same way.

    ``floating`` is {node id: the node's CPUs guests without dedicated
    CPUs may use} (scope.CpuPartition.floating_by_node). A node with none
    has no such load (None): the dedicated CPUs' work is pinned guests',
    which a floating guest neither adds to nor competes with.
    """
    return {node_id: busy_fraction(before, after, cpus) if cpus else None
            for node_id, cpus in floating.items()}


def usage(nodes, loads, free_mb, floating=None, loads_of_floating=None):
    """NodeUsage per node; free memory falls back to the node's total.

    ``floating`` ({node id: CPUs}) and ``loads_of_floating`` (as
    :func:`floating_loads` gives them) say what guests without dedicated
    CPUs may use; without them every CPU is theirs.
    """
    floating, loads_of_floating = floating or {}, loads_of_floating or {}
    result = []
    for node in nodes:
        free = free_mb.get(node.id, node.memory_total_mb)
        result.append(backend.NodeUsage(
            node_id=node.id, cpu_load=loads.get(node.id, 0.0),
            memory_free_mb=max(0, min(free, node.memory_total_mb)),
            **_floating_usage(node, floating, loads_of_floating)))
    return tuple(result)


def _floating_usage(node, floating, loads_of_floating):
    """NodeUsage's floating fields of one node; none when not told."""
    if node.id not in floating:
        return {}
    cpus = frozenset(floating[node.id])
    return {'floating_cpus': cpus,
            'floating_load': loads_of_floating.get(node.id, 0.0)
            if cpus else None}


def read_cpu_times(root):
    """{cpu id: (busy seconds, total seconds)} of the online CPUs.

    psutil reads the per-CPU lines of ``<root>/proc/stat`` but hands them
    back as a list, without their ids: the kernel writes a line for each
    online CPU in ascending order, so the ids are sysfs's list of online
    CPUs. A CPU going on or offline between the two reads makes them
    disagree: then no sample ({}), and the next one starts afresh.
    """
    online = sorted(sysfs.online_cpus(root))
    try:
        per_cpu = procfs.per_cpu_times(root)
    except OSError:
        return {}
    if len(online) != len(per_cpu):
        LOG.debug('CPUs went on or offline while read: %d online, %d in '
                  '/proc/stat', len(online), len(per_cpu))
        return {}
    return {cpu: busy_and_total(times)
            for cpu, times in zip(online, per_cpu)}
