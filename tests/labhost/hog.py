"""Memory pressure on chosen nodes of the lab host, held until killed.

``python3 -S hog.py lab-hog NODES MB``: binds the process's memory to
NODES (a comma-separated list of node ids, ``MPOL_BIND``), touches MB
MiB of anonymous memory in one ``memset``, prints ``filled`` and sleeps
until it is killed. When the bound nodes hold less than MB free, the
kernel reclaims on them to make room: it demotes cold pages to a lower
memory tier where ``demotion_enabled`` lets it, which is what the tests
that run it look at.

Only the standard library, and no site packages (``-S``): it starts in
a moment under emulation.
"""

import ctypes
import mmap
import sys
import time

MPOL_BIND = 2
# x86-64's set_mempolicy(2); glibc has no wrapper for it.
SYS_SET_MEMPOLICY = 238


def bind(nodes):
    mask = ctypes.c_ulong(sum(1 << node for node in nodes))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(SYS_SET_MEMPOLICY, MPOL_BIND, ctypes.byref(mask),
                    ctypes.sizeof(mask) * 8 + 1) != 0:
        raise OSError(ctypes.get_errno(), 'set_mempolicy')


def fill(megabytes):
    region = mmap.mmap(-1, megabytes << 20)
    address = ctypes.addressof(ctypes.c_char.from_buffer(region))
    ctypes.memset(address, 1, megabytes << 20)
    return region


if __name__ == '__main__':
    bind(int(node) for node in sys.argv[2].split(','))
    held = fill(int(sys.argv[3]))
    print('filled', flush=True)
    while held:
        time.sleep(3600)
