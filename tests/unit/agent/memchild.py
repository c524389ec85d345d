"""A real child process with touched anonymous memory, for page moves."""

import ctypes
import os
import subprocess
import sys

import fixtures
from oslo_config import cfg
from oslo_privsep import capabilities

from agent import privsep

# Allocates, touches every page (so each is resident on some node), prints
# the mapping's address, then waits for stdin to close.
_CHILD = '''
import ctypes, mmap, sys
size = int(sys.argv[1])
m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
m.write(b'\\x01' * size)
print(ctypes.addressof(ctypes.c_char.from_buffer(m)), flush=True)
sys.stdin.read()
'''
PAGE = 4096
PR_CAPBSET_DROP = 24


def drop_capabilities():
    """What libvirt does to a qemu it starts as root (capng, both sets).

    The bounding set too: otherwise exec gives root every capability
    back, and a process that gained capabilities at exec is not dumpable,
    which the kernel's ptrace check then refuses without CAP_SYS_PTRACE.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    with open('/proc/sys/kernel/cap_last_cap') as f:
        last = int(f.read())
    for cap in range(last + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    capabilities.drop_all_caps_except([], [], [])


class GuestPidDir(fixtures.Fixture):
    """A directory of libvirt-style pidfiles, the daemon's guest_pid_dir.

    Root's and open to read, as libvirt's /run/libvirt/qemu; set as the
    option before a daemon is forked, so the daemon reads it too.
    """

    def _setUp(self):
        self.path = self.useFixture(fixtures.TempDir()).path
        os.chmod(self.path, 0o755)
        # Registered by the daemon's context when made: perhaps not yet.
        privsep.register_opts()
        cfg.CONF.set_override('guest_pid_dir', self.path,
                              group=privsep.SECTION)
        self.addCleanup(cfg.CONF.clear_override, 'guest_pid_dir',
                        group=privsep.SECTION)
        # Checks and checked guests are remembered: not across tests.
        privsep.forget_checks()
        self.addCleanup(privsep.forget_checks)

    def write(self, domain, pid):
        path = os.path.join(self.path, f'{domain}.pid')
        with open(path, 'w') as f:
            f.write(f'{pid}\n')
        os.chmod(path, 0o644)
        return path


class MemoryChild(fixtures.Fixture):
    """``pid``, ``address`` and ``pages`` of a child holding ``size``.

    With ``guests`` (a GuestPidDir) the child is a guest as libvirt's
    would be: its command line says ``-name guest=<domain>`` and a
    pidfile names it; without, it is any other process.
    """

    def __init__(self, size=64 * 1024 * 1024, user=None, group=None,
                 python=sys.executable, preexec_fn=None, guests=None,
                 domain=None, uuid=None):
        super().__init__()
        self.uuid = uuid
        self.size = size
        self.user = user
        self.group = group
        self.python = python
        self.preexec_fn = preexec_fn
        self.guests = guests
        self.domain = domain or f'instance-{os.getpid()}-{id(self):x}'

    def _setUp(self):
        args = [self.python, '-c', _CHILD, str(self.size)]
        if self.guests is not None:
            args += ['-name', f'guest={self.domain},debug-threads=on']
        if self.uuid is not None:
            args += ['-uuid', self.uuid]
        self.process = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            user=self.user, group=self.group, preexec_fn=self.preexec_fn)
        self.addCleanup(self.stop)
        self.address = int(self.process.stdout.readline())
        self.pid = self.process.pid
        self.pages = self.size // PAGE
        if self.guests is not None:
            self.addCleanup(os.unlink, self.guests.write(self.domain,
                                                         self.pid))

    def stop(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(10)
        self.process.stdout.close()
