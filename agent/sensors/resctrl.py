"""Memory bandwidth per guest, from the kernel's resctrl monitoring.

Where the CPU monitors memory bandwidth (Intel's MBM, AMD's bandwidth
monitoring) and resctrl is mounted at ``/sys/fs/resctrl``, the kernel
counts, per monitoring group and per last-level cache domain, the bytes
the group's threads moved between that cache and memory: in total
(``mbm_total_bytes``) and to the domain's own node (``mbm_local_bytes``).
The layout read here is the kernel's (Documentation/arch/x86/resctrl.rst):

* ``info/L3_MON/mon_features``: the events the CPU counts, one a line;
* ``mon_groups/<name>/``: a monitoring group of the default control
  group; ``tasks`` lists its threads, one id a line;
* ``mon_groups/<name>/mon_data/mon_L3_<id>/mbm_total_bytes`` and
  ``mbm_local_bytes``: bytes since the group was made, for the cache
  domain ``<id>``; ``Unavailable`` while the hardware cannot count;
* ``/sys/devices/system/cpu/cpu<N>/cache/index<K>/{level,id}``: the id of
  each CPU's cache of each level; a domain is the CPUs of one L3 id.

The agent makes one group per guest, named after its uuid, and puts its
vCPU threads in it through the privileged daemon
(:mod:`agent.privsep.monitorgroups`); reading needs no privilege.
Everything here reads files under ``root`` and decides nothing.
"""

import os
import re

from agent.sensors import guestproc

RESCTRL = 'sys/fs/resctrl'
CPUS = 'sys/devices/system/cpu'
FEATURES = ('mbm_total_bytes', 'mbm_local_bytes')
# Groups the agent makes: this prefix and a guest's uuid, so that the
# daemon only ever touches its own and the agent finds those it left.
GROUP_PREFIX = 'numa-policy-'
_UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}')
_DOMAIN = re.compile(r'mon_L3_(\d+)')


def group_name(uuid):
    """The monitoring group of the guest ``uuid``."""
    return GROUP_PREFIX + uuid.lower()


def uuid_of(group):
    """The guest uuid a group of ours is named after, else None."""
    if not group.startswith(GROUP_PREFIX):
        return None
    uuid = group[len(GROUP_PREFIX):]
    return uuid if _UUID.fullmatch(uuid) else None


def _path(root, *parts):
    return os.path.join(root, RESCTRL, *parts)


def missing(root):
    """Why this host gives no memory bandwidth, or None if it does."""
    features = guestproc.read_text(_path(root, 'info', 'L3_MON',
                                         'mon_features'))
    if features is None:
        return ('resctrl is not mounted at /sys/fs/resctrl, or the CPU '
                'monitors no L3 events')
    absent = set(FEATURES) - set(features.split())
    if absent:
        return ('the CPU does not count ' + ', '.join(sorted(absent))
                + ' (resctrl info/L3_MON/mon_features)')
    return None


def _l3_id(root, cpu):
    directory = os.path.join(root, CPUS, f'cpu{cpu}', 'cache')
    try:
        indexes = sorted(os.listdir(directory))
    except OSError:
        return None
    for index in indexes:
        level = guestproc.read_text(os.path.join(directory, index, 'level'))
        if level is not None and level.strip() == '3':
            text = guestproc.read_text(os.path.join(directory, index, 'id'))
            try:
                return int(text)
            except (TypeError, ValueError):
                return None
    return None


def domain_nodes(root, topology):
    """({cache domain id: node}, None), or (None, why not).

    A domain within one node counts that node's traffic; several domains
    on one node (one L3 per core complex) add up. A domain spanning nodes
    (sub-NUMA clustering) cannot tell them apart: no bandwidth per node
    on such a host.
    """
    nodes = {}
    for node in topology.nodes:
        for cpu in node.cpus:
            domain = _l3_id(root, cpu)
            if domain is None:
                return None, f'CPU {cpu} names no L3 cache id in sysfs'
            nodes.setdefault(domain, set()).add(node.id)
    spanning = sorted(d for d, found in nodes.items() if len(found) > 1)
    if spanning:
        return None, (f'L3 cache domain {spanning[0]} spans nodes '
                      f'{sorted(nodes[spanning[0]])} (sub-NUMA clustering): '
                      f'its bytes cannot be told apart per node')
    return {domain: found.pop() for domain, found in nodes.items()}, None


def our_groups(root):
    """uuids of the guests whose groups of ours exist."""
    try:
        names = os.listdir(_path(root, 'mon_groups'))
    except OSError:
        return set()
    return {uuid for uuid in map(uuid_of, names) if uuid}


def members(root, uuid):
    """Thread ids in the guest's group; None if it has no group."""
    text = guestproc.read_text(_path(root, 'mon_groups', group_name(uuid),
                                     'tasks'))
    if text is None:
        return None
    return frozenset(int(line) for line in text.split() if line.isdigit())


def _counter(path):
    text = guestproc.read_text(path)
    try:
        return int(text)
    except (TypeError, ValueError):
        return None  # "Unavailable", "Error", or gone


def read_group(root, uuid, nodes_of_domains):
    """{node: (total bytes, local bytes)} counted so far; None if unread.

    Cumulative since the group was made. A domain the hardware could not
    count this time makes the whole reading None: a partial sum would
    read as a drop.
    """
    data = _path(root, 'mon_groups', group_name(uuid), 'mon_data')
    try:
        entries = sorted(os.listdir(data))
    except OSError:
        return None
    per_node = {}
    for entry in entries:
        match = _DOMAIN.fullmatch(entry)
        if not match:
            continue
        node = nodes_of_domains.get(int(match.group(1)))
        if node is None:
            continue  # a domain onlined after the map was made
        total = _counter(os.path.join(data, entry, 'mbm_total_bytes'))
        local = _counter(os.path.join(data, entry, 'mbm_local_bytes'))
        if total is None or local is None:
            return None
        before = per_node.get(node, (0, 0))
        per_node[node] = (before[0] + total, before[1] + local)
    return per_node or None


def moved(before, now):
    """{node: (total, local)} bytes between two readings; None if unknown.

    None when a counter went back: the group was made anew (the agent or
    the host restarted) and the difference means nothing.
    """
    if before is None or now is None:
        return None
    delta = {}
    for node, (total, local) in now.items():
        was_total, was_local = before.get(node, (0, 0))
        if total < was_total or local < was_local:
            return None
        delta[node] = (total - was_total, local - was_local)
    return delta
