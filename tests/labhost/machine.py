"""A lab host: a real multi-node Linux booted in QEMU on this machine.

:class:`LabHost` boots Debian's kernel with the NUMA topology it is
given, this machine's root file system shared read-only (so the
project's own virtualenv runs inside unchanged), state on tmpfs, and
serves commands and Python calls through a shared directory
(:mod:`tests.labhost.server`). It always cleans up: QEMU is killed when
the lab host is shut down, when the process exits, and by the kernel if
the process dies without a chance to (``PR_SET_PDEATHSIG``).

Emulated nodes have no latency difference: a lab host proves mechanisms
(what the kernel, libvirt and QEMU do), never gains.
"""

import atexit
import compileall
import contextlib
import ctypes
import dataclasses
import itertools
import json
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

from tests.labhost import emulator as emulator_mod
from tests.labhost import initramfs
from tests.labhost import labkernel
from tests.labhost import network as network_mod
from tests.labhost import topology as topology_mod

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(os.path.dirname(HERE))
GUEST_SCRIPT = os.path.join(HERE, 'guest.sh')
LIBVIRT_UP = os.path.join(HERE, 'libvirt-up.sh')
QEMU = 'qemu-system-x86_64'
# Set to 1 where the lab host must run (CI): a lab host that cannot boot
# is then a failure, not a skip.
REQUIRE_ENV = 'NUMA_POLICY_REQUIRE_LAB'
# tcg, kvm or auto (KVM when a probe boot shows it works, else TCG).
ACCEL_ENV = 'NUMA_POLICY_LAB_ACCEL'
KVM_PROBE_TIMEOUT = 20.0
BOOT_TIMEOUT = 300.0
# How long a lab host connecting to a link waits for its peer's QEMU to
# listen on the link's socket.
LINK_WAIT = 120.0
NOVA_UID = 4242
# Imported once by the server before it forks a child per call; a
# ``module:function`` entry is called too (tests/labhost/server.py). So
# the loops' entry points, which stevedore finds by reading every
# installed distribution's metadata (about 3 s of each agent's start
# under emulation), are read once for every agent the server forks.
DEFAULT_PRELOAD = ('libvirt', 'oslo_config.cfg', 'oslo_log.log',
                   'oslo_privsep.priv_context', 'oslo_messaging',
                   'nova_numa_policy.objects.wire', 'agent.service.cmd',
                   'tests.labhost.inside',
                   'nova_numa_policy.loops.runner:registry')
PR_SET_PDEATHSIG = 1
# The lab host runs only this project's tests: no speculative-execution
# mitigations, which cost every system call and context switch dearly
# under emulation (Python starts about a fifth faster without them). No
# check of the timer's interrupt at boot: on a loaded machine the
# emulated CPU sees too few ticks in the kernel's short window, and the
# kernel panics ("IO-APIC + timer doesn't work", seen with two lab hosts
# booting side by side).
LAB_KERNEL_ARGS = 'mitigations=off no_timer_check'
# The project's packages, compiled to bytecode here before a boot (the
# lab's, lab/numa_policy_lab, with them).
PROJECT_PACKAGES = ('agent', 'nova_numa_policy', 'placement_filters', 'lab',
                    'tests')

_libc = ctypes.CDLL(None, use_errno=True)
_live = set()
_live_lock = threading.Lock()


class LabError(Exception):
    """The lab host failed: it did not boot, or a request failed."""


class CallFailed(LabError):
    """A Python call inside the lab host raised; the message holds it."""


@dataclasses.dataclass(frozen=True)
class CommandResult:
    rc: int | None
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def ok(self):
        return self.rc == 0


def required():
    return os.environ.get(REQUIRE_ENV) == '1'


def _die_with_parent():
    # QEMU must not outlive the test process, however that one ends.
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setsid()


def check_available():
    """Raise LabUnavailable naming what this machine lacks to boot one."""
    if shutil.which(QEMU) is None:
        raise initramfs.LabUnavailable(
            f'{QEMU} not found (apt-get install qemu-system-x86)')
    initramfs.find_busybox()
    # This machine's kernel unless NUMA_POLICY_LAB_KERNEL names another.
    return labkernel.selected()


def compile_project():
    """Write the project's bytecode here, natively, before a boot.

    The lab host's root is this machine's, read-only: its Python cannot
    write a ``.pyc``, so every process it starts (the agent, a privsep
    daemon, a forked call importing a module anew) would compile the
    project's modules from source under emulation, seconds each time.
    Up-to-date files are left as they are; a checkout where nothing was
    compiled yet (tox sets PYTHONDONTWRITEBYTECODE) takes a few seconds.
    """
    for package in PROJECT_PACKAGES:
        compileall.compile_dir(os.path.join(PROJECT, package), quiet=1,
                               workers=0)


# Hardware virtualisation's CPU flags: Intel's VT-x, AMD's SVM.
VIRTUALISATION_FLAGS = frozenset(('vmx', 'svm'))


def has_virtualisation(cpuinfo):
    """Whether ``cpuinfo`` (/proc/cpuinfo's text) shows VT-x or SVM.

    kvm_intel and kvm_amd work only on a CPU that has one of them. This
    CI machine kind has a /dev/kvm and neither flag: a probe boot there
    stopped at the kernel's start and waited out its whole timeout, in
    every process that booted a lab host.
    """
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(':')
        if name.strip() == 'flags':
            return not VIRTUALISATION_FLAGS.isdisjoint(value.split())
    return False


def _kvm_usable(cpuinfo_path='/proc/cpuinfo'):
    if not os.access('/dev/kvm', os.R_OK | os.W_OK):
        return False
    with open(cpuinfo_path) as f:
        return has_virtualisation(f.read())


_accel_choice = {}


def choose_accel(kernel, initrd, workdir):
    """The accelerator to boot with: NUMA_POLICY_LAB_ACCEL, or probed.

    KVM is tried once per process with a boot that powers off at once;
    nested KVM may hang or fail, and TCG always works.
    """
    wanted = os.environ.get(ACCEL_ENV, 'auto')
    if wanted in ('tcg', 'kvm'):
        return wanted
    if 'auto' in _accel_choice:
        return _accel_choice['auto']
    choice = 'tcg'
    if _kvm_usable():
        args = topology_mod.qemu_args(
            topology_mod.TWO_NODES, kernel.image, initrd,
            'console=ttyS0 quiet panic=-1 lab.mode=probe', (), accel='kvm')
        try:
            out = subprocess.run(args, capture_output=True,
                                 timeout=KVM_PROBE_TIMEOUT,
                                 preexec_fn=_die_with_parent)
            if b'LAB-PROBE-OK' in out.stdout:
                choice = 'kvm'
        except subprocess.TimeoutExpired:
            pass
    _accel_choice['auto'] = choice
    return choice


# Directories the lab host replaces with its own tmpfs (guest.sh).
SCRATCH = ('/tmp', '/var/tmp')
_SCRATCH_PREFIXES = tuple(root + os.sep for root in SCRATCH)


def under_scratch(paths):
    """Those of ``paths`` inside a directory the lab host overmounts.

    A clone in /tmp (as CI makes them) would vanish under the lab host's
    own /tmp; guest.sh binds these back over it.
    """
    inside = {os.path.realpath(p) for p in paths}
    inside = {p for p in inside if p.startswith(_SCRATCH_PREFIXES)}
    # The outermost only: binding one back brings what it contains.
    return sorted(p for p in inside
                  if not any(p.startswith(q + os.sep) for q in inside))


def closed_directories(paths):
    """Directories on the way to ``paths`` that other users cannot enter.

    The agent runs as nova inside the lab host; these are reopened there
    (guest.sh) so it can reach the interpreter and the project, as it
    would on a compute node where they are installed for it. Parents
    come before their children.
    """
    closed = []
    for path in paths:
        parts = os.path.abspath(path).split(os.sep)[1:]
        for depth in range(1, len(parts)):
            directory = os.sep + os.path.join(*parts[:depth])
            try:
                mode = os.stat(directory).st_mode
            except FileNotFoundError:
                break
            if not mode & stat.S_IXOTH and directory not in closed:
                closed.append(directory)
    return sorted(closed, key=lambda d: d.count(os.sep))


def reopened_directories(paths):
    """The closed directories guest.sh reopens (see closed_directories).

    Not those above a path kept from scratch space: guest.sh made them
    afresh, open, on its own tmpfs.
    """
    kept = under_scratch(paths)
    return [d for d in closed_directories(paths)
            if not (d.startswith(_SCRATCH_PREFIXES)
                    and any(k.startswith(d + os.sep) for k in kept))]


def slow_memory_settings(topology):
    """config.sh values for guest.sh's lower tier: none without one.

    Only an NVDIMM needs work at boot (slowmem.sh); the HMAT's node has
    its memory from the start.
    """
    if not topology.slow_nvdimm:
        return {}
    return {'LAB_SLOW_NODE': str(topology.slow_node)}


def _kill_all_at_exit():
    with _live_lock:
        hosts = list(_live)
    for host in hosts:
        host.shutdown()


atexit.register(_kill_all_at_exit)


@contextlib.contextmanager
def undone_on_error(undo):
    """Call ``undo`` if the block fails (interrupted too), then re-raise."""
    try:
        yield
    except BaseException:
        undo()
        raise


class LabHost:
    """One booted lab host; use as a context manager or call shutdown()."""

    def __init__(self, topology=topology_mod.TWO_NODES, python=None,
                 preload=DEFAULT_PRELOAD, boot_timeout=BOOT_TIMEOUT,
                 network=None, hostname=None):
        self.topology = topology
        # tests/labhost/network.py: the cloud's NIC and a link to another
        # lab host; None: the topology's NIC only, as the host tier has.
        self.network = network
        self.hostname = hostname or f'lab-{topology.name}'
        self.python = python or sys.executable
        self.preload = tuple(preload)
        self.boot_timeout = boot_timeout
        self.accel = None
        self.workdir = None
        self.share = None
        self._qemu = None
        self._console = None
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.boot_seconds = None
        self._started = None
        self.broken = False

    # -- life cycle -------------------------------------------------------

    def boot(self):
        """Start QEMU and wait until the lab host answers requests."""
        self.launch()
        return self.wait_booted()

    def launch(self):
        """Start QEMU and return at once; :meth:`wait_booted` waits.

        QEMU dies with the thread that called this one
        (``PR_SET_PDEATHSIG``); waiting can be done by any thread, so
        that several lab hosts boot side by side.
        """
        kernel = check_available()
        emulator = emulator_mod.for_devices(
            topology_mod.devices_needed(self.topology))
        self.workdir = tempfile.mkdtemp(prefix='numa-lab-')
        self._started = time.monotonic()
        with undone_on_error(self.shutdown):
            self._launch(kernel, emulator)
        return self

    def wait_booted(self):
        with undone_on_error(self.shutdown):
            self._wait_ready(self._started + self.boot_timeout)
        self.boot_seconds = time.monotonic() - self._started
        return self

    def _launch(self, kernel, emulator):
        compile_project()
        initrd = os.path.join(self.workdir, 'initrd.gz')
        with open(initrd, 'wb') as f:
            f.write(initramfs.build(kernel, initramfs.find_busybox()))
        self.share = os.path.join(self.workdir, 'share')
        for sub in ('requests', 'results'):
            os.makedirs(os.path.join(self.share, sub))
        self._write_config(kernel)
        self.accel = choose_accel(kernel, initrd, self.workdir)
        cmdline = (f'console=ttyS0 quiet panic=-1 {LAB_KERNEL_ARGS} '
                   f'lab.guest={GUEST_SCRIPT}')
        args = topology_mod.qemu_args(
            self.topology, kernel.image, initrd, cmdline,
            (('hostroot', '/', True), ('lab', self.share, False)),
            accel=self.accel, qemu=emulator.command)
        args += network_mod.qemu_args(self.network)
        self._wait_for_link_peer(self._started + LINK_WAIT)
        self._console = open(os.path.join(self.workdir, 'console.log'), 'wb')
        self._qemu = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=self._console,
            stderr=subprocess.STDOUT, preexec_fn=_die_with_parent,
            env=emulator.environ())
        with _live_lock:
            _live.add(self)

    def _wait_for_link_peer(self, deadline):
        # QEMU 7.2 gives up at once when the socket it connects to is not
        # there yet: the listening lab host's QEMU must have started.
        link = self.network and self.network.link
        if not link or link.server:
            return
        while not os.path.exists(link.socket):
            if time.monotonic() > deadline:
                raise LabError(f'no lab host listens on {link.socket}')
            time.sleep(0.1)

    def _needed(self):
        # What the lab host must reach of this machine: the interpreter
        # (link and target), its installation and the project.
        return (self.python, os.path.realpath(self.python), sys.prefix,
                sys.base_prefix, PROJECT)

    def _write_config(self, kernel):
        values = {'LAB_PYTHON': self.python, 'LAB_PROJECT': PROJECT,
                  'LAB_KEEP': ' '.join(under_scratch(self._needed())),
                  'LAB_EXPOSE': ' '.join(reopened_directories(
                      self._needed())),
                  'LAB_NOVA_UID': str(NOVA_UID),
                  'LAB_HOSTNAME': self.hostname,
                  **slow_memory_settings(self.topology),
                  **labkernel.module_tree_settings(kernel),
                  **network_mod.guest_settings(self.network)}
        with open(os.path.join(self.share, 'config.sh'), 'w') as f:
            for name, value in values.items():
                f.write(f'{name}={shlex.quote(value)}\nexport {name}\n')
        with open(os.path.join(self.share, 'preload.json'), 'w') as f:
            json.dump(list(self.preload), f)

    def _wait_ready(self, deadline):
        ready = os.path.join(self.share, 'ready')
        while not os.path.exists(ready):
            if self._qemu.poll() is not None:
                raise LabError(f'the lab host stopped while booting (QEMU '
                               f'exit {self._qemu.returncode}):\n'
                               f'{self.console_tail()}')
            if time.monotonic() > deadline:
                raise LabError(f'the lab host did not boot within '
                               f'{self.boot_timeout:.0f}s:\n'
                               f'{self.console_tail()}')
            time.sleep(0.1)

    def console_tail(self, lines=40):
        if self.workdir is None:
            return ''
        try:
            with open(os.path.join(self.workdir, 'console.log'), 'rb') as f:
                text = f.read().decode(errors='replace')
        except FileNotFoundError:
            return ''
        return '\n'.join(text.splitlines()[-lines:])

    @property
    def running(self):
        return self._qemu is not None and self._qemu.poll() is None

    def shutdown(self):
        """Kill QEMU (the guest keeps nothing) and remove the work dir."""
        qemu, self._qemu = self._qemu, None
        if qemu is not None and qemu.poll() is None:
            try:
                os.killpg(qemu.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            qemu.wait()
        if self._console is not None:
            self._console.close()
            self._console = None
        with _live_lock:
            _live.discard(self)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self):
        return self.boot()

    def __exit__(self, *exc):
        self.shutdown()

    # -- requests ---------------------------------------------------------

    def _request(self, request, timeout):
        if not self.running:
            raise LabError('the lab host is not running:\n'
                           + self.console_tail())
        with self._lock:
            request['id'] = next(self._ids)
        request['timeout'] = timeout
        name = f'{request["id"]}.json'
        path = os.path.join(self.share, 'requests', name)
        with open(path + '.tmp', 'w') as f:
            json.dump(request, f)
        os.rename(path + '.tmp', path)
        result_path = os.path.join(self.share, 'results', name)
        # The server enforces ``timeout``; this one covers a dead server.
        deadline = time.monotonic() + timeout + 30
        while not os.path.exists(result_path):
            if not self.running:
                raise LabError('the lab host stopped:\n'
                               + self.console_tail())
            if time.monotonic() > deadline:
                self.broken = True
                raise LabError(f'no answer from the lab host to {request}')
            time.sleep(0.02)
        with open(result_path) as f:
            result = json.load(f)
        os.unlink(result_path)
        return result

    def run(self, cmd, timeout=120, user=None, env=None, check=True):
        """Run ``cmd`` with /bin/sh in the lab host; a CommandResult."""
        answer = self._request({'kind': 'sh', 'cmd': cmd, 'user': user,
                                'env': env or {}}, timeout)
        result = CommandResult(answer['rc'], answer['stdout'],
                               answer['stderr'], answer['timed_out'])
        if check and not result.ok:
            raise LabError(f'{cmd!r} in the lab host: exit {result.rc}'
                           f'{" (timed out)" if result.timed_out else ""}'
                           f'\nstdout: {result.stdout}\nstderr: '
                           f'{result.stderr}')
        return result

    def call(self, target, *args, timeout=300, user=None, env=None,
             **kwargs):
        """``module:function(*args, **kwargs)`` in the lab host; its value.

        Arguments and value travel as JSON. The function runs in a child
        of the lab host's server: as root unless ``user`` is given.
        """
        answer = self._request({'kind': 'call', 'target': target,
                                'args': list(args), 'kwargs': kwargs,
                                'user': user, 'env': env or {}}, timeout)
        if 'value' not in answer:
            raise CallFailed(f'{target} in the lab host failed'
                             f'{" (timed out)" if answer["timed_out"] else ""}'
                             f':\n{answer.get("error") or answer["stderr"]}')
        return answer['value']

    def start_libvirtd(self, timeout=120):
        """Start (or restart after a kill) virtlogd and libvirtd."""
        self.run(f'sh {shlex.quote(LIBVIRT_UP)}', timeout=timeout)

    def read(self, path):
        """A file of the lab host, as text (its kernel's view)."""
        return self.run(f'cat {shlex.quote(path)}').stdout
