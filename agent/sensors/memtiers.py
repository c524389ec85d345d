"""The kernel's memory tiers: which tier holds each node's memory.

Linux 6.1 and later group nodes by how fast their memory is: DRAM in
one tier, slower memory (a CXL expander, persistent memory brought
online by dax/kmem) in lower ones. Each tier is a directory
``memory_tier<N>`` under ``/sys/devices/virtual/memory_tiering`` listing
its nodes; a smaller N is a faster tier (N is the tier's abstract
distance divided by the chunk size, so the numbers have gaps and differ
between kernels: DRAM is ``memory_tier4`` on 6.1). Reclaim demotes pages
to a lower tier when ``/sys/kernel/mm/numa/demotion_enabled`` says so.

The report says ranks rather than the kernel's numbers: a consumer
compares tiers within one host, and ranks mean the same on every
kernel. Parsing and ranking are pure (:func:`parse_tiers`,
:func:`rank_tiers`, :func:`parse_demotion`, :func:`memory_tiers`); the
only I/O is :class:`TierSensor`'s, through :mod:`agent.sensors.sysfs`.
"""

import re

from oslo_log import log as logging

from nova_numa_policy.contracts import backend

from agent.sensors import sysfs

LOG = logging.getLogger(__name__)

_TIER_NAME = re.compile(sysfs.MEMORY_TIER_PREFIX + r'([0-9]{1,9})', re.ASCII)
# A nodelist as the kernel prints one ("0-1,4"), or empty. Checked before
# parse_cpulist reads it: that reader would expand a range of any size.
_RANGE = r'[0-9]{1,4}(?:-[0-9]{1,4})?'
_NODELIST = re.compile(f'(?:{_RANGE}(?:,{_RANGE})*)?', re.ASCII)
# What demotion_enabled may read: "true" or "false"; 1 and 0 as well,
# which 6.1 accepts when written.
_DEMOTION = {'true': True, '1': True, 'false': False, '0': False}


def parse_tiers(nodelists):
    """{tier number: frozenset of node ids} of the tier directories.

    ``nodelists``: {directory name: nodelist text, None if unreadable},
    as :func:`agent.sensors.sysfs.memory_tier_nodelists` gives them.

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
        nodes = sysfs.parse_cpulist(text)
        if nodes & seen:
            raise ValueError(f'nodes {sorted(nodes & seen)} are in two '
                             f'memory tiers')
        seen |= nodes
        tiers[int(match.group(1))] = nodes
    return tiers


def rank_tiers(tiers):
    """{node id: rank} of {tier number: nodes}: pure.

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


def memory_tiers(nodelists, demotion_text):
    """(:class:`MemoryTiers`, problems) of what the kernel wrote: pure.

    ``nodelists``: as :func:`parse_tiers` takes them, or None when the
    kernel has no memory tiers; ``demotion_text``: demotion_enabled's
    text or None. Tiers that list no node say nothing either (every
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
    return backend.MemoryTiers(ranks=ranks, demotion=demotion), problems


class TierSensor:
    """Reads the memory tiers under ``root`` (``/`` on a host).

    Never raises into the period: what it cannot read it leaves unsaid,
    and warns once per part, not every period.
    """

    def __init__(self, root):
        self._root = root
        self._warned = set()

    def read(self):
        try:
            nodelists = sysfs.memory_tier_nodelists(self._root)
            demotion = sysfs.demotion_enabled(self._root)
        except ValueError as exc:
            # Bytes that are not text (UnicodeDecodeError): nothing the
            # kernel writes there; trust none of it.
            found, problems = backend.MemoryTiers(), {'tiers': str(exc)}
        else:
            found, problems = memory_tiers(nodelists, demotion)
        for part, why in sorted(problems.items()):
            if part not in self._warned:
                self._warned.add(part)
                LOG.warning('The kernel\'s memory %s cannot be read (%s): '
                            'reports leave it unsaid', part, why)
        return found
