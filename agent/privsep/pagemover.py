"""The page daemon's entry points: move_pages(2) and numa_maps, checked.

Two layers, thinnest at the privileged end:

* ``_move_pages``: the raw syscall through libc's ``syscall`` (no libnuma
  on compute nodes).
* Privileged entry points (:data:`agent.privsep.pages`): integers in,
  lists of integers or texts out, each one idempotent (moving a page to
  the node it is on changes nothing; reading changes nothing). What they
  accept is checked here and in :mod:`agent.privsep.trust`.

The agent's side, which plans the windows and turns errno values into
the agent's errors, is :class:`agent.backend.pagemoves.PageMover`.

Also what a guest wrote since a mark (pagemap's soft-dirty bits, and
``clear_refs`` to mark again), the temperature the tiering loop moves
pages by (:mod:`agent.backend.pagetemps`): the daemon reads pagemap as
the guest's own user, which gives the bits and never a physical address.

migrate_pages(2) is deliberately not used: it moves every page of a node,
shared libraries' page cache included, and cannot stop at a budget.
"""

import array
import ctypes
import errno
import functools
import logging
import os
import platform

from agent import privsep
from agent.privsep import trust

LOG = logging.getLogger(__name__)

# move_pages(2) is not in Python's os module; its number is per machine.
SYS_MOVE_PAGES = {'x86_64': 279, 'aarch64': 239}
MPOL_MF_MOVE_ALL = 1 << 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _address(buffer):
    if buffer is None or not len(buffer):
        return ctypes.c_void_p(None)
    if isinstance(buffer, array.array):
        return ctypes.c_void_p(buffer.buffer_info()[0])
    return ctypes.c_void_p(buffer.ctypes.data)  # a numpy array


@functools.lru_cache(maxsize=8)
def _nodes(node, count):
    # Read-only to the kernel, so shared by calls (and daemon threads).
    return array.array('i', [node]) * count


def _move_pages(pid, pages, node, flags):
    """move_pages(2) on an array('Q') of addresses; ``node`` None queries.

    Returns (pages not moved, status array). The status of a page is its
    node after the call or a negative errno (-ENOENT: not present); pages
    the kernel tried and failed to move are counted in the first, which
    also counts every page after the first failure (the kernel stops
    there, leaving their status unset). Raises OSError when the call as
    a whole fails.
    """
    number = SYS_MOVE_PAGES.get(platform.machine())
    if number is None:
        raise OSError(errno.ENOSYS, 'move_pages: unknown syscall number on '
                      + platform.machine())
    count = len(pages)
    status = array.array('i', bytes(4 * count))
    nodes = None if node is None else _nodes(node, count)
    result = _libc.syscall(
        ctypes.c_long(number), ctypes.c_long(pid), ctypes.c_ulong(count),
        _address(pages), _address(nodes), _address(status),
        ctypes.c_int(flags))
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f'move_pages({pid}): {os.strerror(code)}')
    return result, status


@functools.lru_cache(maxsize=8)
def _offsets(count, page_size):
    # Read-only: every window of this shape adds its start to a copy.
    # numpy only here: a daemon that never moves pages (one that reads
    # numa_maps) starts without it, about a second sooner on the lab host.
    import numpy

    offsets = numpy.arange(count, dtype=numpy.uint64) * numpy.uint64(
        page_size)
    offsets.flags.writeable = False
    return offsets


def _window(start, count, page_size):
    """The page addresses of a window, as a contiguous uint64 array.

    One vector add: filling an array from a Python range (or any per-page
    Python arithmetic) costs more than the syscall the array feeds.
    """
    import numpy

    return _offsets(count, page_size) + numpy.uint64(start)


def _guest(pid):
    """The checked guest process ``pid``, in the daemon (its trust)."""
    return privsep.checked_guest(pid)


def _window_of(start, count, page_size):
    trust.address(start, 'start')
    trust.count(count)
    trust.page_size(page_size)
    if start + count * page_size - 1 > trust.MAX_ADDRESS:
        raise ValueError('the window ends beyond the address space')
    return _window(start, count, page_size)


def _moved(guest, pages, node, flags):
    """move_pages(2) on ``guest``, trusted only if it lived throughout."""
    result = _move_pages(guest.pid, pages, node, flags)
    if not guest.alive():
        raise ProcessLookupError(errno.ESRCH,
                                 f'process {guest.pid} exited during the call')
    return result


@privsep.pages.entrypoint
def read_mappings(pid):
    """(maps, numa_maps) texts of ``pid``; (None, None) if it is gone."""
    try:
        guest = _guest(pid)
        return guest.read('maps'), guest.read('numa_maps')
    except ProcessLookupError:
        return None, None


@privsep.pages.entrypoint
def read_numa_maps(pid):
    try:
        return _guest(pid).read('numa_maps')
    except ProcessLookupError:
        return None


@privsep.pages.entrypoint
def page_nodes(pid, start, count, page_size):
    """The node of each page of a window (negative errno: not present)."""
    guest = _guest(pid)
    return _moved(guest, _window_of(start, count, page_size), None,
                  0)[1].tolist()


@privsep.pages.entrypoint
def move_window(pid, start, count, page_size, node):
    """Move every page of a window to ``node``.

    Returns (pages not moved, the kernel's status array as bytes: read it
    with :func:`statuses`). Bytes, not a list: converting thousands of
    statuses per call costs more than the daemon's executor reads them.
    """
    guest = _guest(pid)
    not_moved, status = _moved(guest, _window_of(start, count, page_size),
                               trust.node(node), MPOL_MF_MOVE_ALL)
    return not_moved, status.tobytes()


@privsep.pages.entrypoint
def move_addresses(pid, addresses, node):
    """Move the pages at ``addresses`` (integers) to ``node``.

    Returns (pages not moved, the status of each page).
    """
    guest = _guest(pid)
    not_moved, status = _moved(guest, array.array(
        'Q', trust.addresses(addresses)), trust.node(node), MPOL_MF_MOVE_ALL)
    return not_moved, status.tolist()


# /proc/<pid>/pagemap (the kernel's admin-guide/mm/pagemap.rst): one
# 64-bit entry per virtual page of the base size; bit 63 says the page
# is present, bit 55 that it was written since the soft-dirty bits were
# last cleared (writing 4 to /proc/<pid>/clear_refs clears them).
PAGEMAP_ENTRY_BYTES = 8
BASE_PAGE_SIZE = 4096
PM_PRESENT = 1 << 63
PM_SOFT_DIRTY = 1 << 55
CLEAR_SOFT_DIRTY = b'4'
# What page_writes says of each page.
NOT_PRESENT, NOT_WRITTEN, WRITTEN = 0, 1, 2


def written_states(entries):
    """Each pagemap entry (uint64 array) as NOT_PRESENT/NOT_WRITTEN/WRITTEN.

    Pure; bytes out, one per page.
    """
    import numpy

    present = ((entries & numpy.uint64(PM_PRESENT)) != 0).astype(numpy.uint8)
    written = ((entries & numpy.uint64(PM_SOFT_DIRTY)) != 0).astype(
        numpy.uint8)
    return (present * (1 + written)).astype(numpy.uint8).tobytes()


@privsep.pages.entrypoint
def page_writes(pid, start, count, page_size):
    """Which pages of a window were written since :func:`clear_writes`.

    Bytes, one per page: :data:`NOT_PRESENT`, :data:`NOT_WRITTEN` or
    :data:`WRITTEN`. Base pages only (a hugetlbfs page spans many
    entries).
    """
    import numpy

    if page_size != BASE_PAGE_SIZE:
        raise ValueError(f'page_writes reads pages of {BASE_PAGE_SIZE} bytes, '
                         f'not {page_size}')
    _window_of(start, count, page_size)
    data = _guest(pid).read_at(
        'pagemap', start // BASE_PAGE_SIZE * PAGEMAP_ENTRY_BYTES,
        count * PAGEMAP_ENTRY_BYTES)
    if len(data) != count * PAGEMAP_ENTRY_BYTES:
        raise ValueError(f'pagemap of process {pid} gave {len(data)} bytes '
                         f'for {count} pages')
    return written_states(numpy.frombuffer(data, dtype=numpy.uint64))


@privsep.pages.entrypoint
def clear_writes(pid):
    """Clear the soft-dirty bits of every page of ``pid``.

    What it writes from now on is seen by :func:`page_writes`; the cost
    to the guest is one minor fault on the first write to each page.
    """
    _guest(pid).write('clear_refs', CLEAR_SOFT_DIRTY)


def statuses(data):
    """The per-page statuses in a status array returned as bytes."""
    return array.array('i', data).tolist()


def supported():
    """Whether this kernel has move_pages(2): a no-op call on ourselves."""
    try:
        _move_pages(0, array.array('Q'), None, 0)
    except OSError as exc:
        LOG.info('Page migration unavailable: %s', exc)
        return False
    return True
