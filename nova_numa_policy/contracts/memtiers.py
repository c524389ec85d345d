"""The kernel's memory tiers, read: which tier holds each node's memory.

Linux 6.1 and later group nodes by how fast their memory is: DRAM in
one tier, slower memory (a CXL expander, persistent memory brought
online by dax/kmem) in lower ones. Each tier is a directory
``memory_tier<N>`` under ``/sys/devices/virtual/memory_tiering`` listing
its nodes; a smaller N is a faster tier (N is the tier's abstract
distance divided by the chunk size, so the numbers have gaps and differ
between kernels: DRAM is ``memory_tier4`` on 6.1). Reclaim demotes pages
to a lower tier when ``/sys/kernel/mm/numa/demotion_enabled`` says so.

Ranks rather than the kernel's numbers are what every reader sees: a
consumer compares tiers within one host, and ranks mean the same on
every kernel. The agent (each period, ``agent.sensors.memtiers``) and the
driver extension (at each boot, ``nova_numa_policy.virt.memtiers``) read
the files; both parse and rank them here, so a node's rank is the same
on both sides.

Pure: text in, values out.
"""

import dataclasses
import re

from nova_numa_policy.contracts import backend

# Where the kernel says it, relative to the root of the host's files.
MEMORY_TIERING_DIR = 'sys/devices/virtual/memory_tiering'
MEMORY_TIER_PREFIX = 'memory_tier'
DEMOTION_FILE = 'sys/kernel/mm/numa/demotion_enabled'

_TIER_NAME = re.compile(MEMORY_TIER_PREFIX + r'([0-9]{1,9})', re.ASCII)
# A nodelist as the kernel prints one ("0-1,4"), or empty. Checked before
# it is expanded: a range of any size would fill memory.
_RANGE = r'[0-9]{1,4}(?:-[0-9]{1,4})?'
_NODELIST = re.compile(f'(?:{_RANGE}(?:,{_RANGE})*)?', re.ASCII)
# What demotion_enabled may read: "true" or "false"; 1 and 0 as well,
# which 6.1 accepts when written.
_DEMOTION = {'true': True, '1': True, 'false': False, '0': False}


def _nodes(nodelist):
    """The node ids of a nodelist :data:`_NODELIST` has accepted."""
    nodes = set()
    for part in filter(None, nodelist.split(',')):
        low, _, high = part.partition('-')
        nodes.update(range(int(low), int(high or low) + 1))
    return frozenset(nodes)


def parse_tiers(nodelists):
    """{tier number: frozenset of node ids} of the tier directories.

    ``nodelists``: {directory name: nodelist text, None if unreadable}.

    :raises ValueError: a name, a nodelist the kernel would not write,
        or a node in two tiers: nothing here can be trusted then.
    """
    tiers = {}
    seen = set()
    for name, text in nodelists.items():
        match = _TIER_NAME.fullmatch(name)
        if match is None:
            raise ValueError(f'{name!r} is not a memory tier directory')
        if text is None or not _NODELIST.fullmatch(text.strip()):
            raise ValueError(f'{name} has an unreadable nodelist {text!r:.40}')
        nodes = _nodes(text.strip())
        if nodes & seen:
            raise ValueError(f'nodes {sorted(nodes & seen)} are in two '
                             f'memory tiers')
        seen |= nodes
        tiers[int(match.group(1))] = nodes
    return tiers


def rank_tiers(tiers):
    """{node id: rank} of {tier number: nodes}.

    Rank 0 is the fastest tier present, 1 the next, and so on, in the
    order of the kernel's tier numbers; a tier without nodes takes no
    rank, so the ranks have no gaps.
    """
    ranks = {}
    listed = sorted(number for number, nodes in tiers.items() if nodes)
    for rank, number in enumerate(listed):
        ranks.update((node, rank) for node in tiers[number])
    return ranks


def parse_demotion(text):
    """Whether demotion is on; None when the file is not there.

    :raises ValueError: any other text.
    """
    if text is None:
        return None
    try:
        return _DEMOTION[text.strip()]
    except KeyError:
        raise ValueError(f'demotion_enabled reads {text!r:.40}') from None


# kernel.numa_balancing is a bit mask; this bit (Linux 5.18 and later)
# has the kernel promote the pages it finds hot on a lower tier.
BALANCING_MEMORY_TIERING = 2


def parse_promotion(text):
    """Whether ``kernel.numa_balancing`` promotes; None without the file.

    :raises ValueError: text that is not a number.
    """
    if text is None:
        return None
    try:
        return bool(int(text.strip()) & BALANCING_MEMORY_TIERING)
    except ValueError:
        raise ValueError(f'numa_balancing reads {text!r:.40}') from None


def memory_tiers(nodelists, demotion_text, balancing_text=None):
    """(:class:`~backend.MemoryTiers`, problems) of what the kernel wrote.

    ``nodelists``: as :func:`parse_tiers` takes them, or None when the
    kernel has no memory tiers; ``demotion_text``: demotion_enabled's
    text or None; ``balancing_text``: ``kernel.numa_balancing``'s, or
    None. Tiers that list no node say nothing either (every
    node is then in the top tier). Each part that cannot be read is
    left unsaid, and why is one of ``problems``, keyed by the part.
    """
    problems = {}
    ranks = None
    if nodelists is not None:
        try:
            ranks = rank_tiers(parse_tiers(nodelists)) or None
        except ValueError as exc:
            problems['tiers'] = str(exc)
    try:
        demotion = parse_demotion(demotion_text)
    except ValueError as exc:
        demotion = None
        problems['demotion'] = str(exc)
    try:
        promotion = parse_promotion(balancing_text)
    except ValueError as exc:
        promotion = None
        problems['promotion'] = str(exc)
    return backend.MemoryTiers(ranks=ranks, demotion=demotion,
                               promotion=promotion), problems


def ranked(topology, tiers):
    """``topology`` with each node's ``memory_tier`` as ``tiers`` rank it.

    ``tiers``: a :class:`~backend.MemoryTiers`; a node it does not rank
    is in the top tier (:meth:`~backend.MemoryTiers.rank`).
    """
    return dataclasses.replace(topology, nodes=tuple(
        dataclasses.replace(node, memory_tier=tiers.rank(node.id))
        for node in topology.nodes))
