"""A guest's vhost workers: the threads that copy its virtio NICs' packets.

vhost-net gives each virtio NIC (each queue pair, with multiqueue) a
worker thread named ``vhost-<pid of the QEMU process that opened
/dev/vhost-net>``. Before Linux 6.4 the workers are kernel threads,
children of kthreadd (pid 2), owned by root; from 6.4 on they are
threads of the QEMU process itself (vhost_task), owned by QEMU's user.
Both are looked for: a kernel may be either, and the name tells whose
they are.

Every reader takes ``root`` (``/`` in production) so tests read fixture
trees; a thread that ended reads as absent.
"""

import os

from agent.sensors import guestproc
from agent.sensors import sysfs

KTHREADD = 2
PREFIX = 'vhost-'


def worker_name(pid):
    """The name the kernel gives the vhost workers of process ``pid``."""
    return f'{PREFIX}{pid}'


def _comm(root, *parts):
    text = guestproc.read_text(os.path.join(root, 'proc', *parts, 'comm'))
    return None if text is None else text.rstrip('\n')


def _listdir(path):
    try:
        return os.listdir(path)
    except (FileNotFoundError, NotADirectoryError, ProcessLookupError):
        return []


def own_workers(root, pid):
    """Threads of process ``pid`` named as its vhost workers (Linux 6.4+)."""
    name = worker_name(pid)
    tids = (int(t) for t in _listdir(os.path.join(root, 'proc', str(pid),
                                                  'task')) if t.isdigit())
    return tuple(sorted(tid for tid in tids
                        if _comm(root, str(pid), 'task', str(tid)) == name))


def _kthreadd_children(root):
    """kthreadd's children: its ``children`` file, else a scan of /proc.

    ``children`` needs CONFIG_PROC_CHILDREN; without it each process's
    parent is read from its ``stat``.
    """
    text = guestproc.read_text(os.path.join(
        root, 'proc', str(KTHREADD), 'task', str(KTHREADD), 'children'))
    if text is not None:
        return [int(p) for p in text.split()]
    children = []
    for name in _listdir(os.path.join(root, 'proc')):
        if name.isdigit() and parent(root, int(name)) == KTHREADD:
            children.append(int(name))
    return children


def parent(root, pid):
    """The parent pid of ``pid`` from its ``stat``, or None once gone."""
    text = guestproc.read_text(os.path.join(root, 'proc', str(pid), 'stat'))
    if not text:
        return None
    # The name in parentheses may hold spaces and parentheses itself.
    fields = text.rpartition(')')[2].split()
    return int(fields[1]) if len(fields) > 1 else None


def kernel_workers(root):
    """``{name: tids}`` of kthreadd's vhost children (kernels before 6.4).

    One scan serves every guest of an observation: kernel threads are
    everyone's, and there are hundreds of them.
    """
    found = {}
    for tid in _kthreadd_children(root):
        name = _comm(root, str(tid))
        if name is not None and name.startswith(PREFIX):
            found.setdefault(name, []).append(tid)
    return {name: tuple(sorted(tids)) for name, tids in found.items()}


def workers(root, pid, kernel=None):
    """Tids of ``pid``'s vhost workers, of either kind.

    ``kernel``: :func:`kernel_workers`, or a callable giving it, called
    only if the process has no worker of its own (its result is meant
    to be shared by the guests of one observation).
    """
    own = own_workers(root, pid)
    if own:
        return own
    table = kernel() if callable(kernel) else kernel
    if table is None:
        table = kernel_workers(root)
    return table.get(worker_name(pid), ())


def status_fields(text):
    """``{field: value}`` of a ``/proc/<tid>/status`` text."""
    fields = {}
    for line in (text or '').splitlines():
        key, _, value = line.partition(':')
        fields[key] = value.strip()
    return fields


def allowed_cpus(root, tid, read_text=guestproc.read_text):
    """The CPUs thread ``tid`` may run on; None once it is gone."""
    text = read_text(os.path.join(root, 'proc', str(tid), 'status'))
    if text is None:
        return None
    return sysfs.parse_cpulist(status_fields(text).get('Cpus_allowed_list'))
