"""Putting a guest's vCPU threads in a resctrl monitoring group.

resctrl counts memory bandwidth per group of threads; a guest's vCPU
threads start in the default group with every other thread of the host.
Moving them into a monitoring group of the default control group
changes what the kernel *counts* for them, not what they may use: the
group has the default group's cache and bandwidth allocation, and
resctrl refuses to move a thread into it from any other control group.

The privileged entry points (:data:`agent.privsep.monitor`, root with no
capability) are :func:`join` and :func:`leave`, checked by
:mod:`agent.privsep.trust` and here before anything is written. What the
backend calls, turning the daemon's refusals into the agent's errors, is
:class:`agent.backend.bandwidth.MonitorGroups`.

What :func:`join` checks first: the pid is a libvirt guest (pidfile and
command line) whose command line carries the uuid the group is named
after; each thread id is a thread of that process (its
``/proc/<pid>/task/<tid>`` is read through the checked process's
directory); each sits in the default control group and in no monitoring
group but the guest's own (``cpu_resctrl_groups``), so threads an
operator or libvirt (``<cachetune>``, ``<memorytune>``) placed stay
where they are; and ``/sys/fs/resctrl`` is a resctrl mount.
"""

import errno
import logging
import os

from agent import privsep
from agent.privsep import trust
from agent.sensors import resctrl

LOG = logging.getLogger(__name__)

RESCTRL = '/' + resctrl.RESCTRL
MOUNTINFO = '/proc/self/mountinfo'
DEFAULT_GROUP = '/'


class NotOursToMonitor(PermissionError):
    """A thread sits in a resctrl group someone else chose for it."""


def resctrl_mounted(mountinfo=None, where=None):
    """Whether ``where`` (resctrl's place) is a mount of resctrl."""
    mountinfo, where = mountinfo or MOUNTINFO, where or RESCTRL
    try:
        with open(mountinfo) as f:
            lines = f.read().splitlines()
    except OSError:
        return False
    for line in lines:
        fields = line.split()
        if ' - ' not in line or len(fields) < 5:
            continue
        fstype = line.split(' - ', 1)[1].split()[0]
        if fields[4] == where and fstype == 'resctrl':
            return True
    return False


def groups_of(text):
    """(control group, monitoring group) of a ``cpu_resctrl_groups`` text.

    ``('', '')`` where resctrl is not mounted; the control group is
    ``'/'`` for the default one, the monitoring group ``''`` for none.
    """
    found = {}
    for line in text.splitlines():
        key, _, value = line.partition(':')
        found[key] = value
    return found.get('res', ''), found.get('mon', '')


def may_join(text, group):
    """Whether a thread with this ``cpu_resctrl_groups`` may join ``group``.

    Only from the default control group, and from no monitoring group
    but ``group`` itself: a thread placed by someone else stays placed.
    """
    control, monitoring = groups_of(text)
    return control == DEFAULT_GROUP and monitoring in ('', group)


def _mon_groups():
    """A directory descriptor of resctrl's ``mon_groups``; refuse if none."""
    if not resctrl_mounted():
        raise OSError(errno.ENODEV, f'{RESCTRL} is not a resctrl mount')
    return os.open(os.path.join(RESCTRL, 'mon_groups'),
                   os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                   | os.O_CLOEXEC)


def thread_groups(guest, tid):
    """``cpu_resctrl_groups`` of thread ``tid`` of ``guest``; None if none.

    Read through the checked process's directory, so a thread id that is
    not one of its threads reads as gone. Refused on a kernel that does
    not say (built without CONFIG_PROC_CPU_RESCTRL): the daemon would not
    know whose group the thread is in.
    """
    try:
        guest.read_bytes(f'task/{tid}/comm')
    except ProcessLookupError:
        return None  # not (or no longer) a thread of this guest
    try:
        return guest.read(f'task/{tid}/cpu_resctrl_groups')
    except ProcessLookupError:
        raise NotOursToMonitor(
            'this kernel does not say which resctrl group a thread is in '
            '(/proc/<pid>/task/<tid>/cpu_resctrl_groups, '
            'CONFIG_PROC_CPU_RESCTRL)') from None


def _checked_threads(guest, group, tids):
    """The threads of ``guest`` among ``tids`` that may join ``group``."""
    allowed = []
    for tid in tids:
        text = thread_groups(guest, tid)
        if text is None:
            continue
        if not may_join(text, group):
            raise NotOursToMonitor(
                f'thread {tid} of process {guest.pid} is in resctrl group '
                f'{groups_of(text)}: not ours to move')
        allowed.append(tid)
    return allowed


def _write_tasks(group_fd, tids):
    fd = os.open('tasks', os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC,
                 dir_fd=group_fd)
    joined = 0
    try:
        for tid in tids:
            try:
                os.write(fd, b'%d' % tid)
                joined += 1
            except ProcessLookupError:
                pass  # the thread ended since it was checked
    finally:
        os.close(fd)
    return joined


@privsep.monitor.entrypoint
def join(pid, uuid, tids):
    """Put threads ``tids`` of guest ``pid`` (``uuid``) in its group.

    Makes the group if it is missing. Returns how many threads joined.
    """
    uuid = trust.instance_uuid(uuid)
    tids = trust.thread_ids(tids)
    guest = privsep.checked_guest(pid, privsep.MONITOR_SECTION)
    if not trust.carries_uuid(guest.read_bytes('cmdline'), uuid):
        raise trust.NotAGuest(f'process {guest.pid} is not guest {uuid}')
    group = resctrl.group_name(uuid)
    mon_groups = _mon_groups()
    try:
        allowed = _checked_threads(guest, group, tids)
        if not allowed:
            raise ValueError(f'none of {list(tids)} is a thread of process '
                             f'{guest.pid}')
        try:
            os.mkdir(group, 0o755, dir_fd=mon_groups)
        except FileExistsError:
            pass
        group_fd = os.open(group, os.O_RDONLY | os.O_DIRECTORY
                           | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=mon_groups)
        try:
            return _write_tasks(group_fd, allowed)
        finally:
            os.close(group_fd)
    finally:
        os.close(mon_groups)


@privsep.monitor.entrypoint
def leave(uuid):
    """Remove the guest's group; its threads go back to the default one."""
    group = resctrl.group_name(trust.instance_uuid(uuid))
    privsep.checked_pid_dir(privsep.MONITOR_SECTION)
    mon_groups = _mon_groups()
    try:
        os.rmdir(group, dir_fd=mon_groups)
    except FileNotFoundError:
        return False
    finally:
        os.close(mon_groups)
    return True
