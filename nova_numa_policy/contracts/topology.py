"""A host's NUMA nodes as libvirt and nova describe them: one reading.

The agent and the driver extension both build a
:class:`~nova_numa_policy.contracts.backend.HostTopology`; they read it here,
so a node's CPUs, memory and distances mean the same on both sides. A
distance row is in the order of the topology's nodes (by id), never
indexed by id: hosts number nodes as their firmware does (0, 1, 8, 9).

The host's uplinks have one source too: the agent discovers them, and
hands them to the driver extension as the text :func:`render_uplinks`
writes and :func:`parse_uplinks` reads. So has each node's measured load:
the agent hands the driver, beside the uplinks, the load its report gives
the scheduler (:func:`render_node_loads`, :func:`parse_node_loads`), so a
``home`` guest boots on the node the scheduler ranked by it.

Pure: XML or JSON text and plain values in, backend values out.
"""

import json
import os
from xml.etree import ElementTree

from nova_numa_policy.contracts import backend

# SLIT defaults when nothing gives distances: local and remote.
LOCAL_DISTANCE = 10
REMOTE_DISTANCE = 20


def nodes(cells):
    """NodeInfo per ``(id, CPUs, memory MiB, {other id: distance})``.

    Sorted by id; a distance not given is the SLIT default.
    """
    cells = sorted(cells, key=lambda cell: cell[0])
    ids = [cell[0] for cell in cells]
    return tuple(
        backend.NodeInfo(
            id=node_id, cpus=tuple(sorted(cpus)), memory_total_mb=memory_mb,
            distances=tuple(given.get(other, LOCAL_DISTANCE
                                      if other == node_id
                                      else REMOTE_DISTANCE)
                            for other in ids))
        for node_id, cpus, memory_mb, given in cells)


def _mb(element):
    if element is None or not (element.text or '').strip():
        return 0
    factor = {'KiB': 1, 'MiB': 1024, 'GiB': 1024 * 1024}.get(
        element.get('unit', 'KiB'), 1)
    return int(element.text) * factor // 1024


def nodes_from_capabilities(caps_xml):
    """NodeInfo per ``<cell>`` of libvirt's host capabilities XML."""
    root = ElementTree.fromstring(caps_xml)
    return nodes(
        (int(cell.get('id')),
         [int(cpu.get('id')) for cpu in cell.findall('./cpus/cpu')],
         _mb(cell.find('./memory')),
         {int(s.get('id')): int(s.get('value'))
          for s in cell.findall('./distances/sibling')})
        for cell in root.findall('./host/topology/cells/cell'))


def physnet_nics(physnet_numa_nodes, known_physnets=()):
    """NicInfo for nova's ``[neutron_physnet_*] numa_nodes`` not yet known.

    Such a physnet names no interface; it is reported under its own name
    when nova pins it to exactly one node (more nodes say nothing useful
    about locality).
    """
    return tuple(
        backend.NicInfo(name=physnet, numa_node=numa_nodes[0],
                        physnet=physnet)
        for physnet, numa_nodes in sorted(physnet_numa_nodes.items())
        if physnet not in known_physnets and len(numa_nodes) == 1)


_UPLINK_FIELDS = {'name': str, 'numa_node': int, 'speed_mbps': int,
                  'physnet': str, 'bridge': str}


def render_uplinks(nics):
    """The uplinks as JSON text, one object per NIC."""
    return json.dumps([{field: getattr(nic, field)
                        for field in _UPLINK_FIELDS} for nic in nics],
                      indent=1, sort_keys=True)


def parse_uplinks(text):
    """The uplinks :func:`render_uplinks` wrote; ValueError if malformed.

    Every field but ``name`` may be null; nothing else is accepted, so a
    damaged file is refused whole rather than half believed.
    """
    entries = json.loads(text)
    if not isinstance(entries, list):
        raise ValueError('uplinks: not a list')
    nics = []
    for entry in entries:
        if not isinstance(entry, dict) or set(entry) != set(_UPLINK_FIELDS):
            raise ValueError(f'uplinks: bad entry {entry!r}')
        for field, kind in _UPLINK_FIELDS.items():
            value = entry[field]
            if (value is None and field != 'name') or (
                    isinstance(value, kind) and not isinstance(value, bool)):
                continue
            raise ValueError(f'uplinks: bad {field} in {entry!r}')
        nics.append(backend.NicInfo(**entry))
    return tuple(nics)


# Beside the uplinks file ([numa_policy] uplinks_file), in the directory
# the agent and nova-compute already share.
NODE_LOADS_FILE = 'numa-policy-node-loads.json'


def node_loads_path(uplinks_file):
    """Where the node loads are handed over; None without an uplinks file."""
    if not uplinks_file:
        return None
    return os.path.join(os.path.dirname(uplinks_file), NODE_LOADS_FILE)


def render_node_loads(loads, written_at, period):
    """``{node id: load}`` as JSON text, with when and how often written.

    ``written_at``: seconds since the epoch; ``period``: the agent's, in
    seconds.
    """
    return json.dumps({'written_at': written_at, 'period': period,
                       'loads': {str(node): load
                                 for node, load in sorted(loads.items())}},
                      sort_keys=True)


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_node_loads(text):
    """``({node id: load}, written_at, period)``; ValueError if malformed.

    Refused whole, like the uplinks: a load outside 0..1, a node id that
    is not a number, a field missing or one more.
    """
    entry = json.loads(text)
    fields = {'written_at', 'period', 'loads'}
    if not isinstance(entry, dict) or set(entry) != fields:
        raise ValueError('node loads: not the agent\'s object')
    if not (_number(entry['written_at']) and _number(entry['period'])
            and entry['period'] > 0 and isinstance(entry['loads'], dict)):
        raise ValueError('node loads: bad written_at, period or loads')
    loads = {}
    for node, load in entry['loads'].items():
        if not (node.isdigit() and _number(load) and 0.0 <= load <= 1.0):
            raise ValueError(f'node loads: bad load {node!r}: {load!r}')
        loads[int(node)] = float(load)
    return loads, entry['written_at'], entry['period']


def per_topology(build):
    """Memoize ``build(topology)`` on the topology object itself.

    A topology is frozen and every loop of a period reads the same one,
    so derived tables are built once per snapshot rather than once per
    vCPU. Keyed by identity: hashing a topology costs as much as a lookup
    saves; the last few are kept, holding a reference so an id is never
    reused while cached.
    """
    cache = {}

    def cached(topology):
        hit = cache.get(id(topology))
        if hit is not None and hit[0] is topology:
            return hit[1]
        if len(cache) >= 8:
            cache.pop(next(iter(cache)))
        value = build(topology)
        cache[id(topology)] = (topology, value)
        return value
    cached.__doc__ = build.__doc__
    return cached
