"""What psutil reads of /proc, under the agent's root.

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
