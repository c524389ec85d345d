"""A guest's vCPU threads as the libvirt backend reads them.

Each guest's vCPU threads are listed once (again when its process or its
vCPU count changes); through files kept open, the backend reads the
kernel's sampled NUMA faults of those threads (:mod:`agent.sensors.numafaults`)
and how long they waited for a CPU (:mod:`agent.sensors.schedstat`).
"""

from agent.sensors import guestio
from agent.sensors import guestproc
from agent.sensors import numafaults
from agent.sensors import schedstat


class VcpuThreads:
    """The guests' vCPU threads under ``root``, measured over ``timing``."""

    def __init__(self, root, timing):
        self._root = root
        self._timing = timing
        # (pid, {tid: vCPU}) per uuid.
        self._listed = {}
        # ((time, (ran ns, waited ns)), wait share) of each guest's vCPU
        # threads' last measured window.
        self._waits = {}
        self._has_schedstat = None
        # The vCPU threads' sched and schedstat files, kept open.
        self.files = guestproc.OpenFiles()

    def listed(self):
        """``{uuid: (pid, {tid: vCPU})}`` of the guests listed so far."""
        return dict(self._listed)

    def forget(self, uuid=None):
        """List a guest's threads again at the next read (all: no uuid)."""
        if uuid is None:
            self._listed.clear()
        else:
            self._listed.pop(uuid, None)

    def ids(self, pid, uuid, vcpu_count):
        """``{tid: vCPU}`` of the guest's vCPU threads, listed once."""
        cached = self._listed.get(uuid)
        if cached is None or cached[0] != pid or len(cached[1]) != vcpu_count:
            cached = (pid, numafaults.vcpu_threads(self._root, pid))
            self._listed[uuid] = cached
        return cached[1]

    def faults(self, pid, uuid, vcpu_count):
        """The sampled faults (ThreadFaults) of the guest's vCPU threads."""
        if pid is None:
            return []
        tids = self.ids(pid, uuid, vcpu_count)
        threads = numafaults.read(self._root, pid, tids,
                                  self.files.read_text)
        if len(threads) != len(tids):
            # A thread went (vCPU unplug, process restart): list again.
            self.forget(uuid)
        return threads

    def cpu_wait_measured(self):
        """Whether the kernel keeps each thread's run-queue delay."""
        if self._has_schedstat is None:
            # A kernel build option: it does not change while we run.
            self._has_schedstat = schedstat.available(self._root)
        return self._has_schedstat

    def _times(self, pid, uuid, vcpu_count):
        """(time, (ran ns, waited ns)) of the guest's vCPU threads."""
        if pid is None or not self.cpu_wait_measured():
            return None
        tids = self.ids(pid, uuid, vcpu_count)
        times = (schedstat.read(self._root, pid, tids, self.files.read_text)
                 if tids else None)
        if times is None:
            self.forget(uuid)
            return None
        return self._timing.clock(), times

    def cpu_wait(self, pid, uuid, vcpu_count):
        """The vCPUs' share of time waiting for a CPU, or None."""
        sample = self._times(pid, uuid, vcpu_count)
        if sample is None:
            # Unreadable now: the next readable sample starts afresh.
            self._waits.pop(uuid, None)
            return None
        window = guestio.windowed(
            self._waits.get(uuid), sample,
            lambda before, now: schedstat.wait_share(
                before and before[1], now[1]),
            self._timing.rate_window)
        self._waits[uuid] = window
        return window[1]

    def forget_all_but(self, live):
        """Drop what is kept of guests no longer running."""
        for kept in (self._listed, self._waits):
            for uuid in set(kept) - live:
                del kept[uuid]
        self.files.sweep()
