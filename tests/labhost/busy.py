"""A CPU busy to the lab host's kernel that leaves emulation to others.

``python3 -S busy.py lab-busy``, under ``taskset``: the process spins on
x86's PAUSE for ever. The lab host's kernel sees a task that never
sleeps, so the CPU is 100 % busy in /proc/stat and in its run queues,
as with a shell's ``while :; do :; done``. Under TCG each PAUSE also
hands QEMU's one emulation thread to the lab host's next vCPU (QEMU's
helper for PAUSE leaves the vCPU's loop "to let another CPU run"): the
other vCPUs run at full speed beside it, where a plain loop would take
its share of the thread from each of them.

Only the standard library, and no site packages (``-S``): it starts in
a moment under emulation.
"""

import ctypes
import mmap

# pause; jmp back to the pause
SPIN = bytes.fromhex('f390ebfc')


def spin():
    code = mmap.mmap(-1, mmap.PAGESIZE,
                     prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    code.write(SPIN)
    address = ctypes.addressof(ctypes.c_char.from_buffer(code))
    ctypes.CFUNCTYPE(None)(address)()


if __name__ == '__main__':
    spin()
