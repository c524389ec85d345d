"""Which pages to hand to move_pages(2) for one move request: pure.

A request is "move up to N pages of a process from node A to node B". The
input is the process's mappings (:func:`agent.sensors.numamaps.parse`
with maps joined), which count each mapping's resident pages per node
but do not say which pages those are. The plan is a list of windows of
page addresses, at most ``batch_pages`` each, of two kinds:

* **whole**: every resident page of the mapping is on A or B, and its A
  pages fit the budget. Moving every page of the window moves exactly its
  A pages (pages already on B stay, pages not present are reported
  ``-ENOENT``), so no query is needed: one syscall per window.
* **select**: the mapping also has pages on other nodes, or more A pages
  than the budget left. The executor first asks the kernel where each
  page of the window is, then moves only A's pages, up to the budget.

Mappings whose pages other processes share through a file (libraries,
page cache) are never planned: move_pages with MPOL_MF_MOVE_ALL would
move them for every process on the host. Anonymous memory, memfd (guest
RAM shared with vhost-user backends) and hugetlbfs mappings are.

A second run of the same request after a complete one plans nothing: the
mappings then have no pages left on A.
"""

import dataclasses
import itertools

# Pages per syscall: large enough that the syscall, not the Python around
# it, dominates; small enough to bound the kernel's time in one call.
DEFAULT_BATCH_PAGES = 4096
MIN_BATCH_PAGES = 512
# The size of a transparent huge page on x86_64 and of the blocks
# select() keeps whole.
HUGE_PAGE_BYTES = 2 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Window:
    start: int
    count: int
    page_size: int
    select: bool
    # Pages of the source node a whole window is known (from numa_maps) to
    # move, carried by the last window of its mapping: the kernel's status
    # array cannot tell a page just moved to B from one already there.
    credit: int = 0

    def addresses(self):
        return range(self.start, self.start + self.count * self.page_size,
                     self.page_size)


def movable(vma):
    """Whether a mapping's pages are this process's own to move."""
    if vma.end is None:
        return False
    if vma.name is None or vma.name in ('heap', 'stack') or vma.huge:
        return True
    return vma.name.startswith('/memfd:')


def _windows(vma, select, credit, batch_pages):
    total = vma.pages
    for first in range(0, total, batch_pages):
        last = first + batch_pages >= total
        yield Window(start=vma.start + first * vma.page_size,
                     count=min(batch_pages, total - first),
                     page_size=vma.page_size, select=select,
                     credit=credit if last else 0)


def plan(vmas, source, target, pages, batch_pages=DEFAULT_BATCH_PAGES):
    """The windows to move up to ``pages`` pages from ``source``.

    Mappings with the most pages on ``source`` come first: guest RAM,
    where a rebalancer's budget does the most good.
    """
    if batch_pages < MIN_BATCH_PAGES:
        raise ValueError(f'batch_pages must be >= {MIN_BATCH_PAGES}')
    candidates = sorted(
        (v for v in vmas if movable(v) and v.pages_per_node.get(source)),
        key=lambda v: (-v.pages_per_node[source], v.start))
    remaining = pages
    windows = []
    for vma in candidates:
        if remaining <= 0:
            break
        on_source = vma.pages_per_node[source]
        whole = (on_source <= remaining
                 and set(vma.pages_per_node) <= {source, target})
        windows.extend(_windows(vma, not whole, on_source if whole else 0,
                                batch_pages))
        remaining -= on_source
    return windows


def select(addresses, nodes, source, limit, page_size=4096):
    """Addresses whose page is on ``source``, at most ``limit`` of them.

    ``nodes`` is move_pages(2)'s status array of a query: the node of each
    page, or a negative errno (not present, not movable). A transparent
    huge page moves whole whichever of its pages is asked for, so the
    pages of a 2 MiB block that are all on ``source`` (perhaps one huge
    page) are taken together or not at all: a move never exceeds its
    budget. A block with pages elsewhere holds no huge page (a huge page
    sits on one node) and is taken page by page.
    """
    span = max(1, HUGE_PAGE_BYTES // page_size)
    chosen = []
    remaining = max(0, limit)
    for _, block in itertools.groupby(
            zip(addresses, nodes), key=lambda p: p[0] // HUGE_PAGE_BYTES):
        block = list(block)
        on_source = [a for a, node in block if node == source]
        if len(on_source) == span:
            if span <= remaining:
                chosen.extend(on_source)
                remaining -= span
            continue
        taken = on_source[:remaining]
        chosen.extend(taken)
        remaining -= len(taken)
    return chosen
