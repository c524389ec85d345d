"""Where a guest's memory accesses land, as the kernel samples them.

With ``kernel.numa_balancing`` on, the kernel periodically revokes access
to a slice of each process's memory and counts the faults that follow
(NUMA hinting faults) per thread and per node holding the page. Each
thread's ``/proc/<pid>/task/<tid>/sched`` prints them, one line per node::

    numa_faults node=1 task_private=312 task_shared=8 group_private=...

The counts are a decaying average (the kernel halves them at each of the
thread's scan periods), so they weigh recent accesses: a sample of where
the thread's memory accesses went, not a total.

Only threads that run guest code matter: qemu names them ``CPU <n>/KVM``
(or ``/TCG`` under emulation). The kernel only samples memory under the
default policy: memory bound (``strict``), interleaved or preferred by an
explicit policy is never scanned, so such a guest shows no faults.

Parsing is pure; :func:`read` and :func:`balancing_mode` do the I/O, from
a root path so tests read fixture trees. The files are world-readable:
no privilege is needed.
"""

import dataclasses
import os
import re

from agent.sensors import guestproc
from agent.sensors import procfs

SYSCTL = 'proc/sys/kernel/numa_balancing'
# kernel.numa_balancing is a bit mask; only this bit samples DRAM nodes
# (the memory-tiering bit alone scans slow tiers only).
BALANCING_NORMAL = 1

_FAULTS = re.compile(
    r'^numa_faults node=(\d+) task_private=(\d+) task_shared=(\d+)', re.M)
_VCPU_THREAD = re.compile(r'^CPU (\d+)/(KVM|TCG)$')


@dataclasses.dataclass(frozen=True)
class ThreadFaults:
    """One thread's sampled faults: ``{memory node: faults}``."""

    vcpu: int | None
    per_node: dict


def parse_sched(text, vcpu=None):
    """A thread's :class:`ThreadFaults` from its ``sched`` text: pure.

    Private and shared faults are added: both are accesses the thread
    made. A kernel without NUMA balancing prints no ``numa_faults`` line:
    the result is then empty.
    """
    # The NUMA lines end the file: skip the scheduler's own figures.
    text = text[max(text.find('numa_pages_migrated'), 0):]
    per_node = {}
    for node, private, shared in _FAULTS.findall(text):
        count = int(private) + int(shared)
        if count:
            per_node[int(node)] = per_node.get(int(node), 0) + count
    return ThreadFaults(vcpu=vcpu, per_node=per_node)


def vcpu_of(comm):
    """The vCPU number a qemu thread name carries, or None: pure."""
    match = _VCPU_THREAD.match(comm.strip())
    return int(match.group(1)) if match else None


def add(threads):
    """``{node: faults}`` summed over ``threads``: pure."""
    total = {}
    for thread in threads:
        for node, count in thread.per_node.items():
            total[node] = total.get(node, 0) + count
    return total


def balancing_mode(root='/'):
    """``kernel.numa_balancing``, or None on a kernel without it."""
    text = guestproc.read_text(os.path.join(root, SYSCTL))
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def samples_locality(mode):
    """Whether a ``kernel.numa_balancing`` value samples DRAM accesses."""
    return bool(mode and mode & BALANCING_NORMAL)


def vcpu_threads(root, pid):
    """``{tid: vCPU number}`` of a qemu process's vCPU threads.

    Empty when the process is gone or names no thread as a vCPU.
    """
    threads = {}
    for tid in procfs.thread_ids(root, pid):
        name = procfs.thread_name(root, tid)
        vcpu = vcpu_of(name) if name is not None else None
        if vcpu is not None:
            threads[tid] = vcpu
    return threads


def read(root, pid, threads, read_text=guestproc.read_text):
    """Each of ``threads`` (``{tid: vCPU}``) :class:`ThreadFaults`.

    A thread gone since it was listed is left out; the caller lists the
    threads again when one is missing. ``read_text``: how a file is read
    (:class:`agent.sensors.guestproc.OpenFiles` keeps them open).
    """
    found = []
    for tid, vcpu in sorted(threads.items(), key=lambda item: item[1]):
        text = read_text(os.path.join(
            root, 'proc', str(pid), 'task', str(tid), 'sched'))
        if text is not None:
            found.append(parse_sched(text, vcpu))
    return found
