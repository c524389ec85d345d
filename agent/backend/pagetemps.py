"""Which pages a guest wrote over the last period, and moves by it.

The tiering loop (:mod:`nova_numa_policy.decisions.tiering`) moves a
``tiered`` guest's pages it did not write down to a lower memory tier
and those it wrote back up. Linux 6.1 as distributions build it has
neither idle page tracking nor DAMON; what it has per page is the
soft-dirty bit (``CONFIG_MEM_SOFT_DIRTY``): set on each write, cleared for
a whole process by ``clear_refs``. Each period :meth:`PageTemperature.census`
reads, for each window of the guest's own memory, the node of each page
(move_pages(2)'s query) and its bit, counts the written pages per node,
keeps the bits, and clears them; :meth:`PageTemperature.move` takes the
pages of the kept reading that match what a move asks for. A page only
read is not seen: to the census it is cold, unless DAMON watches the
guest (:mod:`agent.backend.accesses`, Linux 6.12 has it): a page in a
region DAMON saw accessed within the period then counts as written.

Nothing here is privileged: every read goes through the page daemon
(:mod:`agent.privsep.pagemover`). Cost: two daemon calls per window of
:data:`agent.backend.pageplan.DEFAULT_BATCH_PAGES` pages, one byte per
page kept until the next census, for ``tiered`` guests only.
"""

import dataclasses
import subprocess
import sys

from oslo_log import log as logging

from nova_numa_policy.contracts import backend

from agent.backend import accesses
from agent.backend import pagemoves
from agent.backend import pageplan

LOG = logging.getLogger(__name__)

# What the page daemon says of each page (agent.privsep.pagemover).
NOT_PRESENT, NOT_WRITTEN, WRITTEN = 0, 1, 2
BASE_PAGE_SIZE = 4096
PAGES_PER_MB = (1 << 20) // BASE_PAGE_SIZE
# The states each pick takes, in the order it takes them.
PICKED = {backend.PICK_COLD: (NOT_WRITTEN,),
          backend.PICK_HOT: (WRITTEN,),
          backend.PICK_HOT_FIRST: (WRITTEN, NOT_WRITTEN)}


# Writes a page in a new mapping of its own and prints pagemap's bit 55
# (written since the soft-dirty bits were last cleared) for it: 1 where
# the kernel keeps the bits, 0 where it does not.
_PROBE = """
import ctypes, mmap, os
region = mmap.mmap(-1, 4096)
region[0:1] = b'\\x01'
view = ctypes.c_char.from_buffer(region)
page = ctypes.addressof(view) // 4096
del view
fd = os.open('/proc/self/pagemap', os.O_RDONLY)
entry = int.from_bytes(os.pread(fd, 8, page * 8), 'little')
print(entry >> 55 & 1)
"""
PROBE_TIMEOUT = 60


def kernel_tracks_writes(python=sys.executable):
    """Whether this kernel keeps soft-dirty bits (``CONFIG_MEM_SOFT_DIRTY``).

    A page just written in a new mapping is soft-dirty where the kernel
    keeps the bits; without them pagemap says 0 for every page, which
    would read as a guest that writes nothing, every page cold. Asked in
    a child process of the agent's own user, started anew: a process
    that changed its user without an exec (a service manager's fork)
    may not read its own pagemap, one started by exec may.
    """
    try:
        done = subprocess.run([python, '-S', '-c', _PROBE],
                              capture_output=True, text=True, check=False,
                              timeout=PROBE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        LOG.warning('Soft-dirty probe not run: %s', exc)
        return False
    if done.returncode != 0:
        LOG.warning('Soft-dirty probe failed: %s',
                    done.stderr.strip().splitlines()[-1:])
        return False
    return done.stdout.strip() == '1'


@dataclasses.dataclass(frozen=True)
class Reading:
    """One census of a guest: each window's start, page count, states."""

    pid: int
    windows: tuple


def windows(vmas, batch_pages=pageplan.DEFAULT_BATCH_PAGES):
    """(start, count) of the windows of a guest's own base-page memory.

    Pure: the mappings :func:`agent.backend.pageplan.movable` takes, of
    4 KiB pages (a hugetlbfs page spans many pagemap entries, and its
    guest is not measured), with resident pages.
    """
    found = []
    for vma in vmas:
        if (not pageplan.movable(vma) or vma.page_size != BASE_PAGE_SIZE
                or not sum(vma.pages_per_node.values())):
            continue
        for first in range(0, vma.pages, batch_pages):
            found.append((vma.start + first * BASE_PAGE_SIZE,
                          min(batch_pages, vma.pages - first)))
    return found


def written_per_node(nodes, states):
    """{node: written pages} of one window: pure.

    ``nodes``: move_pages(2)'s query (a node, or a negative errno);
    ``states``: the daemon's bytes, one per page.
    """
    counts = {}
    for node, state in zip(nodes, states):
        if state == WRITTEN and node >= 0:
            counts[node] = counts.get(node, 0) + 1
    return counts


def with_accesses(states, accessed):
    """``states`` with each unwritten page that was accessed written: pure.

    ``accessed``: one bool per page, or None (nothing known of reads).
    """
    if accessed is None or not any(accessed):
        return states
    return bytes(WRITTEN if state == NOT_WRITTEN and seen else state
                 for state, seen in zip(states, accessed))


def matching(nodes, states, wanted):
    """``nodes`` with every page not in state ``wanted`` made -1: pure.

    So that :func:`agent.backend.pageplan.select` takes only those.
    """
    return [node if state == wanted else -1
            for node, state in zip(nodes, states)]


class PageTemperature:
    """Soft-dirty censuses and moves through ``page_mover``'s daemon.

    ``page_mover``: :class:`agent.backend.pagemoves.PageMover`.
    """

    def __init__(self, page_mover, accesses=None):
        self._mover = page_mover
        # agent.backend.accesses.AccessMonitor, where DAMON is asked.
        self._accesses = accesses
        self._readings = {}

    def census(self, uuid, pid):
        """{node: MB written since the last census}, or None; marks again.

        None at the first census of a process: it finds every page
        written since the process started (a new page is born written),
        which says nothing of what is hot. The next one does.
        """
        daemon = self._mover.daemon()
        vmas = self._mover.mappings(pid)
        ranges = self._accessed(pid)
        kept, written = [], {}
        with pagemoves.translated(pid):
            for start, count in windows(vmas, self._mover.batch_pages):
                nodes = daemon.page_nodes(pid, start, count, BASE_PAGE_SIZE)
                states = with_accesses(
                    daemon.page_writes(pid, start, count, BASE_PAGE_SIZE),
                    None if ranges is None else accesses.accessed_pages(
                        ranges, start, count, BASE_PAGE_SIZE))
                kept.append((start, count, states))
                for node, pages in written_per_node(nodes, states).items():
                    written[node] = written.get(node, 0) + pages
            daemon.clear_writes(pid)
        before = self._readings.get(uuid)
        self._readings[uuid] = Reading(pid, tuple(kept))
        if before is None or before.pid != pid:
            return None
        return {node: pages / PAGES_PER_MB for node, pages in written.items()}

    def _accessed(self, pid):
        """What DAMON saw of ``pid`` (watched from now on), or None."""
        if self._accesses is None:
            return None
        self._accesses.follow(self._censused_pids() | {pid})
        return self._accesses.accessed(pid)

    def _censused_pids(self):
        return {reading.pid for reading in self._readings.values()}

    def close(self):
        """Leave nothing watching the guests: DAMON's kdamonds go."""
        if self._accesses is not None:
            self._accesses.release()

    def forget_all_but(self, live):
        for uuid in set(self._readings) - set(live):
            del self._readings[uuid]
        if self._accesses is not None:
            self._accesses.follow(self._censused_pids())

    def move(self, uuid, pid, source, target, pages, pick):
        """Move up to ``pages`` pages of ``pick`` from ``source``.

        The pages the last census saw in ``pick``'s states, those of the
        first state first; where each page is now is asked again. Returns
        the pages moved; 0 without a census of this very process.
        """
        reading = self._readings.get(uuid)
        if reading is None or reading.pid != pid:
            LOG.info('%s: no census of its pages yet: nothing moved', uuid)
            return 0
        with pagemoves.translated(pid, target):
            return self._move(reading, source, target, pages, pick)

    def _move(self, reading, source, target, pages, pick):
        daemon, pid = self._mover.daemon(), reading.pid
        moved = 0
        for wanted in PICKED[pick]:
            for start, count, states in reading.windows:
                if moved >= pages:
                    return moved
                nodes = daemon.page_nodes(pid, start, count, BASE_PAGE_SIZE)
                chosen = pageplan.select(
                    range(start, start + count * BASE_PAGE_SIZE,
                          BASE_PAGE_SIZE),
                    matching(nodes, states, wanted), source,
                    pages - moved, BASE_PAGE_SIZE)
                if chosen:
                    not_moved, status = daemon.move_addresses(pid, chosen,
                                                              target)
                    moved += (len(chosen) - not_moved
                              - pagemoves.hinted(status))
        return moved
