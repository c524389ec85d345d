"""How long a guest's vCPUs wait for a host CPU, from the scheduler.

Each thread's ``/proc/<pid>/task/<tid>/schedstat`` holds three numbers:
nanoseconds run on a CPU, nanoseconds spent runnable in a run queue
waiting for one, and the number of time slices. The second is the run
queue delay libvirt reports as ``vcpu.<n>.delay`` and a guest sees as
steal time. Over a period, the waiting share of a guest's vCPU threads,
waited / (waited + ran), says how much CPU contention on their host CPUs
costs it: 0.0 alone on its CPUs, 0.5 when two busy vCPUs share one.

The file exists on kernels built with ``CONFIG_SCHED_INFO`` (Debian,
Ubuntu and RHEL kernels are), costs no privilege (world-readable) and
needs no sysctl. Parsing is pure; :func:`read` does the I/O from a root
path so tests read fixture trees.
"""

import os

from agent.sensors import guestproc

SELF = 'proc/self/schedstat'


def parse(text):
    """(ran ns, waited ns) from a ``schedstat`` text, or None: pure."""
    fields = text.split()
    if len(fields) < 2:
        return None
    try:
        return int(fields[0]), int(fields[1])
    except ValueError:
        return None


def available(root='/'):
    """Whether this kernel keeps run-queue delay per thread."""
    text = guestproc.read_text(os.path.join(root, SELF))
    return text is not None and parse(text) is not None


def read(root, pid, tids, read_text=guestproc.read_text):
    """(ran ns, waited ns) summed over the threads ``tids`` of ``pid``.

    None when any of them cannot be read (gone since it was listed): a
    sum over fewer threads than last period would look like time going
    backwards. ``read_text``: how a file is read.
    """
    ran = waited = 0
    for tid in tids:
        text = read_text(os.path.join(
            root, 'proc', str(pid), 'task', str(tid), 'schedstat'))
        times = parse(text) if text is not None else None
        if times is None:
            return None
        ran += times[0]
        waited += times[1]
    return ran, waited


def wait_share(previous, current):
    """The share of time spent waiting between two (ran, waited): pure.

    None when either is missing, when no time passed (idle vCPUs), or
    when a counter went backwards (the threads were replaced: a restart,
    a vCPU unplug).
    """
    if previous is None or current is None:
        return None
    ran = current[0] - previous[0]
    waited = current[1] - previous[1]
    if ran < 0 or waited < 0 or ran + waited <= 0:
        return None
    return waited / (ran + waited)
