"""A real child process with touched anonymous memory, for page moves."""

import ctypes
import subprocess
import sys

import fixtures
from oslo_privsep import capabilities

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


class MemoryChild(fixtures.Fixture):
    """``pid``, ``address`` and ``pages`` of a child holding ``size``."""

    def __init__(self, size=64 * 1024 * 1024, user=None, group=None,
                 python=sys.executable, preexec_fn=None):
        super().__init__()
        self.size = size
        self.user = user
        self.group = group
        self.python = python
        self.preexec_fn = preexec_fn

    def _setUp(self):
        self.process = subprocess.Popen(
            [self.python, '-c', _CHILD, str(self.size)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            user=self.user, group=self.group, preexec_fn=self.preexec_fn)
        self.addCleanup(self.stop)
        self.address = int(self.process.stdout.readline())
        self.pid = self.process.pid
        self.pages = self.size // PAGE

    def stop(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(10)
        self.process.stdout.close()
