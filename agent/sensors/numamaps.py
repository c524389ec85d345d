"""A process's memory per NUMA node, from /proc/<pid>/numa_maps: pure.

``numa_maps`` has one line per mapping (VMA): its start address, its
memory policy, then ``key=value`` fields, among which ``N<node>=<pages>``
(resident pages on each node) and ``kernelpagesize_kB``. It does not give
a mapping's end, which page moves need; ``/proc/<pid>/maps`` does, so
:func:`parse` joins the two by start address when ``maps`` is given.

Only :func:`read` does I/O; it takes a root path so tests read fixture
trees. Reading another user's process (qemu runs as its own user) needs
ptrace read access: the agent does it through its privsep daemon
(:mod:`agent.privsep.pagemover`), which returns the same texts.
"""

import dataclasses
import functools
import os
import re
import resource

BASE_PAGE_KB = resource.getpagesize() // 1024
_NODE_IDS = re.compile(r' N(\d+)=')
_NODE_PAGES = re.compile(r' N(\d+)=(\d+)')
# Mappings of pages larger than the base page (hugetlbfs), found by the
# last field of their line.
_LARGE_PAGES = re.compile(r'kernelpagesize_kB=(?!%d\b)(\d+)' % BASE_PAGE_KB)


@functools.lru_cache(maxsize=64)
def _pages_on(node):
    return re.compile(r' N%s=(\d+)' % node)


@dataclasses.dataclass(frozen=True)
class Vma:
    start: int
    # None when maps was not given or the mapping went away between the
    # two reads.
    end: int | None
    policy: str
    page_kb: int
    pages_per_node: dict
    # 'heap', 'stack', the mapped file's path, or None (anonymous).
    name: str | None = None
    huge: bool = False

    @property
    def page_size(self):
        return self.page_kb * 1024

    @property
    def pages(self):
        """Pages the mapping can hold, from its extent (0 if unknown)."""
        if self.end is None:
            return 0
        return (self.end - self.start) // self.page_size


def parse_maps(text):
    """{start: end} of each mapping in a /proc/<pid>/maps text."""
    ranges = {}
    for line in (text or '').splitlines():
        extent = line.split(' ', 1)[0]
        low, sep, high = extent.partition('-')
        if sep:
            ranges[int(low, 16)] = int(high, 16)
    return ranges


def _vma(line, ranges):
    fields = line.split()
    if len(fields) < 2:
        return None
    start = int(fields[0], 16)
    page_kb = 4
    per_node = {}
    name = None
    huge = False
    for field in fields[2:]:
        key, sep, value = field.partition('=')
        if not sep:
            # Bare words: 'heap', 'stack', 'huge' (a hugetlbfs mapping).
            if key == 'huge':
                huge = True
            else:
                name = key
        elif key == 'kernelpagesize_kB':
            page_kb = int(value)
        elif key == 'file':
            name = value
        elif key[0] == 'N' and key[1:].isdigit():
            per_node[int(key[1:])] = int(value)
    return Vma(start=start, end=ranges.get(start), policy=fields[1],
               page_kb=page_kb, pages_per_node=per_node, name=name,
               huge=huge)


def parse(numa_maps, maps=None):
    """The mappings of a numa_maps text, in address order."""
    ranges = parse_maps(maps)
    vmas = (_vma(line, ranges) for line in (numa_maps or '').splitlines())
    return [v for v in vmas if v is not None]


def memory_mb_per_node(vmas):
    """{node: MiB resident on it}, every mapping counted (as numastat -p).

    Guest RAM is most of a qemu process, whether anonymous, a memfd or
    hugetlbfs; its libraries and heap are counted too, as they occupy the
    node all the same.
    """
    kb = {}
    for vma in vmas:
        for node, pages in vma.pages_per_node.items():
            kb[node] = kb.get(node, 0) + pages * vma.page_kb
    return {node: total / 1024 for node, total in sorted(kb.items())}


def memory_mb_from_text(numa_maps):
    """:func:`memory_mb_per_node` of a numa_maps text, without parsing it.

    The agent needs only this of every guest at every period, and reading
    each mapping's fields in Python costs several times the reading of
    the file: each node's pages are summed by the regular expression
    engine, in base pages, then mappings of larger pages are corrected.
    """
    if not numa_maps:
        return {}
    kb = {}
    for node in set(_NODE_IDS.findall(numa_maps)):
        pages = sum(map(int, _pages_on(node).findall(numa_maps)))
        kb[int(node)] = pages * BASE_PAGE_KB
    for match in _LARGE_PAGES.finditer(numa_maps):
        extra_kb = int(match.group(1)) - BASE_PAGE_KB
        line = numa_maps[numa_maps.rfind('\n', 0, match.start()) + 1:
                         match.start()]
        for node, pages in _NODE_PAGES.findall(line):
            kb[int(node)] += int(pages) * extra_kb
    return {node: total / 1024 for node, total in sorted(kb.items())}


def read(root, pid, name='numa_maps'):
    """The text of ``<root>/proc/<pid>/<name>``; None if it is not there.

    An unreadable file (another user's process without ptrace access)
    raises PermissionError: that is a deployment error, not a gone guest.
    """
    try:
        with open(os.path.join(root, 'proc', str(pid), name)) as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
