"""Inside a compute lab host: libvirtd restarted in the middle of a plan.

Runs through ``LabHost.call``, as root. :func:`restart_libvirtd_mid_plan`
moves a ``home`` guest's threads off its home CPUs (as an operator's
``virsh vcpupin`` would), so that the agent's next period carries out a
plan of several steps putting them back; the moment the agent's log
says the plan's first step is done, libvirtd is frozen (SIGSTOP, so
that the steps left cannot finish meanwhile) and restarted the way an
operator restarts it (SIGTERM, then started again), while the log is
read on. When the log says how the plan ended (all of it applied, or
every change it made rolled back), the agent is frozen for as long as
the kernel's view of the guest's threads takes to read: what the plan
left, before any later period acts again.

The steps are tens of milliseconds apart, and the lab host's CPUs take
turns on one emulator thread: a reader polling the log saw the whole
plan logged before it could act (three tries of three, seen). So the
reader waits on inotify, real-time (SCHED_FIFO) on the one CPU the
agent's threads are held to meanwhile: the agent's write of a line
wakes it, and it runs before the agent's next instruction. The
agent's CPUs are given back at the end.
"""

import contextlib
import ctypes
import datetime
import glob
import os
import queue
import re
import select
import signal
import subprocess
import threading
import time

import libvirt

from tests.labhost import inside

SYSTEM_URI = 'qemu:///system'
LIBVIRT_UP = os.path.join(os.path.dirname(inside.__file__), 'libvirt-up.sh')
IN_MODIFY = 0x2
# Above every task the lab host runs, below the kernel's own threads.
WATCHER_PRIORITY = 50


def _pids(pattern):
    answer = subprocess.run(['pgrep', '-f', pattern], capture_output=True,
                            text=True)
    return [int(pid) for pid in answer.stdout.split()]


def _signal(pids, number):
    for pid in pids:
        try:
            os.kill(pid, number)
        except ProcessLookupError:
            pass


def drift(name, cpus):
    """Pin every thread of domain ``name`` to ``cpus``, live.

    Each vCPU, the emulator and QEMU's I/O threads, as ``virsh vcpupin
    --live``, ``emulatorpin`` and ``iothreadpin`` do. Returns how many
    steps the agent's plan to put them back takes: one a vCPU, one for
    the emulator (with the I/O threads, as nova pins them).
    """
    conn = libvirt.open(SYSTEM_URI)
    try:
        count = conn.getInfo()[2]
        cpumap = tuple(cpu in cpus for cpu in range(count))
        dom = conn.lookupByName(name)
        live = libvirt.VIR_DOMAIN_AFFECT_LIVE
        vcpus = dom.vcpusFlags(live)
        for vcpu in range(vcpus):
            dom.pinVcpuFlags(vcpu, cpumap, live)
        dom.pinEmulator(cpumap, live)
        for iothread in dom.ioThreadInfo(live):
            dom.pinIOThread(iothread[0], cpumap, live)
    finally:
        conn.close()
    return vcpus + 1


def cpusets(pid):
    """Each thread's cgroup and the domain's cgroups' cpusets: raw texts.

    What the kernel holds the threads to, beside what they are allowed
    (``inside.kernel_view``): tells a cgroup's change from an affinity's.
    """
    threads = {}
    for tid in os.listdir(f'/proc/{pid}/task'):
        cgroup = inside.read_file(f'/proc/{pid}/task/{tid}/cgroup') or ''
        comm = (inside.read_file(f'/proc/{pid}/task/{tid}/comm') or '').strip()
        threads[tid] = f'{comm}: {cgroup.strip()}'
    group = inside.cgroup_dir(pid)
    groups = {}
    if group is not None:
        base = inside.CGROUP_ROOT + group
        for directory in [base] + sorted(glob.glob(f'{base}/*/')):
            groups[os.path.relpath(directory, base)] = ' / '.join(
                (inside.read_file(os.path.join(directory, name)) or '').strip()
                for name in ('cpuset.cpus', 'cpuset.cpus.effective'))
    return {'threads': threads, 'cgroups': groups}


class PlanReader:
    """How the agent's plan for one guest goes, line by line of its log.

    The plan's steps are logged once each is done (``PinVcpu on <uuid>:
    <reason>``); a failed step names the changes it rolls back; each
    undo step is logged as a step whose reason starts ``roll back:``; a
    roll back that loses libvirtd again is picked up in a later period.
    """

    def __init__(self, uuid, steps):
        self.steps = steps
        self.done = 0
        self.undone = 0
        self.to_undo = None
        self.ending = None
        self.lines = []
        self._step = re.compile(r'\b(\w+) on ' + re.escape(uuid) + r': (.*)$')
        self._failed = re.compile(r' on ' + re.escape(uuid) + r' failed '
                                  r'\(.*\); rolling back (\d+) change')
        self._interrupted = 'Roll back on ' + uuid + ' interrupted '
        self._abandoned = 'Gave up rolling back ' + uuid

    def read(self, line):
        """Take one log line; True when it is one of this plan's."""
        failed = self._failed.search(line)
        step = self._step.search(line)
        if failed:
            self.to_undo = int(failed.group(1))
        elif self._abandoned in line:
            self.ending = 'roll back abandoned'
        elif step and step.group(2).startswith('roll back: '):
            self.undone += 1
        elif step and self.to_undo is None:
            self.done += 1
        elif self._interrupted not in line:
            return False
        self.lines.append(line.rstrip('\n'))
        if self.ending is None:
            if self.to_undo is not None and self.undone >= self.to_undo:
                self.ending = 'rolled back'
            elif self.to_undo is None and self.done >= self.steps:
                self.ending = 'applied'
        return True


def logged_seconds(lines):
    """Seconds from the first to the last of oslo.log's lines given."""
    def at(line):
        return datetime.datetime.strptime(line[:23], '%Y-%m-%d %H:%M:%S.%f')

    return (at(lines[-1]) - at(lines[0])).total_seconds()


def _lines(log):
    """Whole lines of ``log`` as they come; None when none is whole yet."""
    part = ''
    while True:
        part += log.readline()
        if part.endswith('\n'):
            yield part
            part = ''
        else:
            yield None


class Restarter:
    """A thread that restarts each frozen libvirtd handed to it.

    SIGTERM, then started again. Made before the reader turns
    real-time, so that it and the libvirtd it starts keep the CPUs and
    scheduling policy it was born with.
    """

    def __init__(self):
        self._pids = queue.Queue()
        self.started = []
        threading.Thread(target=self._run, daemon=True).start()

    def restart(self, pid):
        self._pids.put(pid)

    def finish(self):
        """Wait for every restart asked for; whether each one answered."""
        self._pids.join()
        self._pids.put(None)
        return all(self.started)

    def _run(self):
        for pid in iter(self._pids.get, None):
            try:
                _signal([pid], signal.SIGTERM)
                _signal([pid], signal.SIGCONT)
                while os.path.exists(f'/proc/{pid}'):
                    time.sleep(0.05)
                self.started.append(subprocess.run(
                    ['sh', LIBVIRT_UP], stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL).returncode == 0)
            finally:
                self._pids.task_done()


class Inotify:
    """Waits for writes to one file (the kernel's inotify, via libc)."""

    def __init__(self, path):
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_CLOEXEC)
        if self.fd < 0 or libc.inotify_add_watch(
                self.fd, path.encode(), IN_MODIFY) < 0:
            raise OSError(ctypes.get_errno(), f'inotify on {path}')

    def wait(self, timeout):
        """Whether the file was written to within ``timeout`` seconds."""
        if not select.select([self.fd], [], [], timeout)[0]:
            return False
        os.read(self.fd, 4096)
        return True

    def close(self):
        os.close(self.fd)


@contextlib.contextmanager
def _beside(pids, cpu):
    """Every thread of ``pids`` held to ``cpu``; this thread real-time on it.

    Each thread's own CPUs are given back, and this thread's policy, on
    leaving.
    """
    held = {}
    for pid in pids:
        for tid in os.listdir(f'/proc/{pid}/task'):
            with contextlib.suppress(ProcessLookupError):
                held[int(tid)] = os.sched_getaffinity(int(tid))
                os.sched_setaffinity(int(tid), {cpu})
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO,
                          os.sched_param(WATCHER_PRIORITY))
    try:
        yield
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        os.sched_setaffinity(0, mine)
        for tid, cpus in held.items():
            with contextlib.suppress(ProcessLookupError):
                os.sched_setaffinity(tid, cpus)


def restart_libvirtd_mid_plan(name, uuid, cpus, agent_log, agent_pattern,
                              guest_pid, ram_bytes, watch_timeout=120):
    """Drift the guest, restart libvirtd mid-plan, read what it left.

    Returns the plan's lines of the agent's log, how many of its steps
    were logged before libvirtd was frozen (``struck_after``; None if the
    plan had ended first), its ending, and the kernel's view of the guest
    (``inside.kernel_view``) before the plan and as the plan left it,
    with its threads' cgroups then (:func:`cpusets`).
    """
    restarts = Restarter()
    agents = _pids(agent_pattern)
    watcher = Inotify(agent_log)
    log = open(agent_log, errors='replace')
    log.seek(0, os.SEEK_END)
    lines = _lines(log)
    plan, before, view, cgroups = None, None, None, None
    struck_after, restarted = None, False
    deadline = time.monotonic() + watch_timeout
    with log, _beside(agents, min(os.sched_getaffinity(0))):
        _signal(agents, signal.SIGSTOP)
        try:
            plan = PlanReader(uuid, drift(name, set(cpus)))
            before = inside.kernel_view(guest_pid, ram_bytes=ram_bytes)
        finally:
            _signal(agents, signal.SIGCONT)
        while plan.ending is None and time.monotonic() < deadline:
            line = next(lines)
            if line is None:
                watcher.wait(max(0.0, deadline - time.monotonic()))
            elif plan.read(line) and not restarted and plan.done:
                (libvirtd,) = _pids('^/usr/sbin/libvirtd')
                _signal([libvirtd], signal.SIGSTOP)
                # What the agent had logged by then is where it stood.
                for line in iter(lambda: next(lines), None):
                    plan.read(line)
                struck_after = None if plan.ending else plan.done
                restarts.restart(libvirtd)
                restarted = True
        if plan.ending is not None:
            _signal(agents, signal.SIGSTOP)
            try:
                view = inside.kernel_view(guest_pid, ram_bytes=ram_bytes)
                cgroups = cpusets(guest_pid)
            finally:
                _signal(agents, signal.SIGCONT)
    watcher.close()
    libvirtd_back = restarts.finish()
    return {'steps': plan.steps, 'struck_after': struck_after,
            'ending': plan.ending, 'lines': plan.lines, 'before': before,
            'view': view, 'cpusets': cgroups, 'agents': len(agents),
            'libvirtd_back': restarted and libvirtd_back}
