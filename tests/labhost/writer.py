"""Writes into part of a guest's RAM, as the guest's own stores would.

``python3 -S writer.py lab-writer PID RAM_BYTES OFFSET_MB SIZE_MB``: in
the QEMU process PID, the mapping of exactly RAM_BYTES (the guest's RAM,
told from QEMU's other memory by its size), rewrites one byte of each
4 KiB page of SIZE_MB MiB from OFFSET_MB MiB, with the byte it holds,
through ``/proc/PID/mem``; prints ``writing`` after the first pass, then
passes again every half second until it is killed. The kernel takes each
write as the process's own: it sets the page's soft-dirty bit, which is
what the agent's tiering loop reads a guest's hot pages by. The lab's
guests boot nothing, so nothing else would write there.

``lab-reader`` instead of ``lab-writer``: the same passes, reading only
(prints ``reading``). The kernel marks each page it reads accessed, as
the guest's own loads would, which DAMON sees; its soft-dirty bit stays
clear.

Only the standard library, and no site packages (``-S``): it starts in
a moment under emulation.
"""

import os
import sys
import time

PAGE = 4096


def ram_start(pid, ram_bytes):
    with open(f'/proc/{pid}/maps') as maps:
        for line in maps:
            start, _, end = line.split(' ', 1)[0].partition('-')
            if int(end, 16) - int(start, 16) == ram_bytes:
                return int(start, 16)
    raise SystemExit(f'no mapping of {ram_bytes} bytes in process {pid}')


def write_pass(mem, first, pages):
    for page in range(pages):
        address = first + page * PAGE
        os.pwrite(mem, os.pread(mem, 1, address), address)


def read_pass(mem, first, pages):
    for page in range(pages):
        os.pread(mem, 1, first + page * PAGE)


if __name__ == '__main__':
    reading = sys.argv[1] == 'lab-reader'
    one_pass = read_pass if reading else write_pass
    pid, ram_bytes, offset_mb, size_mb = (int(a) for a in sys.argv[2:6])
    first = ram_start(pid, ram_bytes) + (offset_mb << 20)
    mem = os.open(f'/proc/{pid}/mem', os.O_RDONLY if reading else os.O_RDWR)
    one_pass(mem, first, (size_mb << 20) // PAGE)
    print('reading' if reading else 'writing', flush=True)
    while True:
        time.sleep(0.5)
        one_pass(mem, first, (size_mb << 20) // PAGE)
