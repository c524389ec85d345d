"""Threads on given CPUs writing one buffer: a lab host's shared pages.

Run inside a lab host as ``python -m tests.labhost.sharer MB CPU...``:
allocates ``MB`` of anonymous memory interleaved page by page over every
node (a memory policy set for the allocation only; ``--on NODE`` before
the CPUs allocates it all on that node instead), goes back to the
kernel's default policy, under which NUMA balancing may move the pages,
then writes every page of the buffer from one thread per CPU, each
thread pinned to its CPU, until killed. It prints the buffer's address
(hex, as numa_maps gives it) once the writers run: what the kernel then
does with the pages is read from ``/proc/<pid>/numa_maps``.
"""

import ctypes
import mmap
import os
import sys
import threading

PAGE = 4096
SYS_SET_MEMPOLICY = 238  # x86_64
MPOL_DEFAULT = 0
MPOL_BIND = 2
MPOL_INTERLEAVE = 3
MAX_NODES = 64


def set_mempolicy(mode, nodes=()):
    libc = ctypes.CDLL(None, use_errno=True)
    mask = ctypes.c_ulong(sum(1 << node for node in nodes))
    if libc.syscall(SYS_SET_MEMPOLICY, mode,
                    ctypes.byref(mask) if nodes else None,
                    MAX_NODES if nodes else 0) != 0:
        raise OSError(ctypes.get_errno(), 'set_mempolicy')


def online_nodes():
    with open('/sys/devices/system/node/online') as f:
        text = f.read().strip()
    nodes = set()
    for part in text.split(','):
        low, _, high = part.partition('-')
        nodes.update(range(int(low), int(high or low) + 1))
    return sorted(nodes)


def allocate(size, on_node=None):
    """The buffer, interleaved over every node or all on ``on_node``."""
    if on_node is None:
        set_mempolicy(MPOL_INTERLEAVE, online_nodes())
    else:
        set_mempolicy(MPOL_BIND, [on_node])
    # Private: the kernel's balancing never scans shared memory (shmem,
    # what mmap's default MAP_SHARED of -1 gives) that has no policy.
    buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for offset in range(0, size, PAGE):
        buf[offset] = 1
    set_mempolicy(MPOL_DEFAULT)
    return buf


def write_for_ever(address, size, cpu):
    """Write the whole buffer again and again, from ``cpu`` only.

    ctypes lets go of the interpreter's lock for the call: the threads
    write at the same time, as a guest's vCPUs do, rather than by turns.
    """
    os.sched_setaffinity(0, {cpu})  # this thread only
    value = 0
    while True:
        value = (value + 1) & 0xff
        ctypes.memset(address, value, size)


def main(argv):
    size = int(argv[0]) << 20
    cpus = argv[1:]
    on_node = None
    if cpus[:1] == ['--on']:
        on_node, cpus = int(cpus[1]), cpus[2:]
    buf = allocate(size, on_node)
    address = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    writers = [threading.Thread(target=write_for_ever,
                                args=(address, size, int(cpu)), daemon=True)
               for cpu in cpus]
    for writer in writers:
        writer.start()
    print(f'{address:x}', flush=True)
    for writer in writers:
        writer.join()


if __name__ == '__main__':
    main(sys.argv[1:])
