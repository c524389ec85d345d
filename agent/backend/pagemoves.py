"""The agent's side of page moves: plan the windows, call the page daemon.

:class:`PageMover` reads a guest's mappings through the page daemon,
asks :func:`agent.backend.pageplan.plan` which windows to move, calls
the daemon's entry points (:mod:`agent.privsep.pagemover`) and turns
their errno values into the agent's errors. Nothing here is privileged.
"""

import array
import contextlib
import dataclasses
import errno
import os

from oslo_log import log as logging

from nova_numa_policy.contracts import errors

from agent.backend import pageplan
from agent import privsep
from agent.sensors import numamaps

LOG = logging.getLogger(__name__)


def _page_daemon():
    # Imported at the first call: see agent.privsep.entry_points.
    return privsep.entry_points('pagemover')


class ProcessGone(errors.DomainGone):
    """The guest's process exited (or never was) while its pages moved."""


class InvalidNode(errors.NotEnforceable):
    """The target node is not a memory node this process may use."""


@dataclasses.dataclass(frozen=True)
class MoveResult:
    moved: int
    # Present pages the kernel could not move (busy, no memory on target).
    failed: int
    syscalls: int
    # Pages the kernel would neither report nor move (-EFAULT): on kernels
    # before 6.5, those the kernel's NUMA balancing has just marked for a
    # hinting fault; they move once the guest touches them again.
    skipped: int = 0


def hinted(statuses_):
    """Pages of a status array the kernel answered -EFAULT for."""
    return statuses_.count(-errno.EFAULT)


def _translate(exc, pid, target):
    if isinstance(exc, PermissionError) and exc.errno is None:
        # The daemon's own refusal (agent.privsep and its trust), in words.
        return errors.NotEnforceable(f'the privileged daemon refused '
                                     f'process {pid}: {exc}')
    if exc.errno == errno.ESRCH:
        return ProcessGone(f'process {pid} is gone')
    if exc.errno in (errno.ENODEV, errno.EINVAL):
        return InvalidNode(f'node {target} is not a memory node of this '
                           f'host ({os.strerror(exc.errno)})')
    if exc.errno == errno.EACCES:
        return InvalidNode(f'node {target} is outside the memory nodes '
                           f'process {pid} may use (its cpuset.mems)')
    if exc.errno == errno.EPERM:
        return errors.NotEnforceable(
            f'not permitted to move pages of process {pid}: the privsep '
            f'daemon needs CAP_SYS_NICE and the process owner\'s uid')
    if exc.errno == errno.ENOSYS:
        return errors.PageMigrationUnavailable(str(exc))
    return errors.NotEnforceable(f'moving pages of process {pid}: {exc}')


def _daemon_error(exc):
    # privsep-helper did not start (sudo or rootwrap not set up) or broke.
    return errors.NotEnforceable(f'privsep daemon unavailable: {exc}')


@contextlib.contextmanager
def translated(pid, target=None):
    """Daemon calls on ``pid`` within raise the agent's errors."""
    try:
        yield
    except OSError as exc:
        raise _translate(exc, pid, target) from exc
    except privsep.DAEMON_ERRORS as exc:
        raise _daemon_error(exc) from exc


class PageMover:
    """Executes page moves; every privileged call goes through privsep."""

    def __init__(self, batch_pages=pageplan.DEFAULT_BATCH_PAGES):
        self.batch_pages = batch_pages

    def supported(self):
        return _page_daemon().supported()

    def daemon(self):
        """The page daemon's entry points (:mod:`agent.privsep.pagemover`)."""
        return _page_daemon()

    def numa_maps(self, pid):
        try:
            return _page_daemon().read_numa_maps(pid)
        except privsep.DAEMON_ERRORS as exc:
            raise _daemon_error(exc) from exc

    def mappings(self, pid):
        try:
            maps, numa_maps = _page_daemon().read_mappings(pid)
        except PermissionError as exc:
            if exc.errno is None:
                raise _translate(exc, pid, None) from exc
            # The kernel's ptrace check: another uid, or a target holding
            # capabilities the daemon has not (doc/source/agent.rst).
            raise errors.NotEnforceable(
                f'cannot read the mappings of process {pid}: {exc}; the '
                f'privsep daemon must run as its owner') from exc
        except privsep.DAEMON_ERRORS as exc:
            raise _daemon_error(exc) from exc
        if numa_maps is None:
            raise ProcessGone(f'process {pid} is gone')
        return numamaps.parse(numa_maps, maps)

    def move(self, pid, source, target, pages):
        """Move up to ``pages`` pages of ``pid`` from node ``source``."""
        return self.move_mappings(pid, self.mappings(pid), source, target,
                                  pages)

    def move_mappings(self, pid, vmas, source, target, pages):
        """:meth:`move` within ``vmas``, mappings of ``pid`` read before."""
        windows = pageplan.plan(vmas, source, target, pages,
                                self.batch_pages)
        try:
            return self._execute(pid, windows, source, target, pages)
        except OSError as exc:
            raise _translate(exc, pid, target) from exc
        except privsep.DAEMON_ERRORS as exc:
            raise _daemon_error(exc) from exc

    def _execute(self, pid, windows, source, target, pages):
        moved = failed = calls = skipped = 0
        for window in windows:
            if moved >= pages:
                break
            if window.select:
                nodes = _page_daemon().page_nodes(
                    pid, window.start, window.count, window.page_size)
                skipped += hinted(nodes)
                chosen = pageplan.select(window.addresses(), nodes, source,
                                         pages - moved, window.page_size)
                calls += 1
                if not chosen:
                    continue
                not_moved, status = _page_daemon().move_addresses(
                    pid, chosen, target)
                hints = hinted(status)
                moved += len(chosen) - not_moved - hints
            else:
                not_moved, status = _page_daemon().move_window(
                    pid, window.start, window.count, window.page_size,
                    target)
                # Pages already on the target report it too, so the count
                # is numa_maps' of the mapping's source pages, less those
                # the kernel did not move or would not touch.
                # Counted on the array itself: no list of 4096 ints.
                hints = hinted(array.array('i', status))
                moved += window.credit - not_moved - hints
            skipped += hints
            failed += not_moved
            calls += 1
        return MoveResult(moved=max(0, moved), failed=failed,
                          syscalls=calls, skipped=skipped)
