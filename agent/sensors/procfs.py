"""What psutil reads of /proc, under the agent's root: CPU times
and a process's threads.

psutil parses ``/proc`` for us, tested on every kernel it supports;
where it reads is its documented ``psutil.PROCFS_PATH``. The agent reads
a host under a root (``[numa_policy_agent] sysfs_root``: ``/`` on a
compute node, a fixture tree in tests), so each call points psutil at
that root's ``proc`` and puts it back after: other code in the process
may use psutil too.
"""

import contextlib
import os

import psutil


@contextlib.contextmanager
def _under(root):
    before = psutil.PROCFS_PATH
    psutil.PROCFS_PATH = os.path.join(root, 'proc')
    try:
        yield
    finally:
        psutil.PROCFS_PATH = before


def per_cpu_times(root):
    """psutil's per-CPU times, in ``<root>/proc/stat``'s order."""
    with _under(root):
        return psutil.cpu_times(percpu=True)


def thread_ids(root, pid):
    """The ids of process ``pid``'s threads; () once it is gone."""
    with _under(root):
        try:
            return tuple(thread.id
                         for thread in psutil.Process(pid).threads())
        except psutil.NoSuchProcess:
            return ()


def thread_name(root, tid):
    """Thread ``tid``'s name (the kernel's comm), or None once gone.

    Every thread has its own ``/proc/<tid>``, though /proc lists only
    processes: psutil reads a thread there as it reads a process.
    """
    with _under(root):
        try:
            return psutil.Process(tid).name()
        except psutil.NoSuchProcess:
            return None
