"""Programs a lab host runs that this machine need not have installed.

irqbalance: the I/O path's tests run it inside a lab host. Installing
Debian's package on this machine would also start it here (the package
enables its service), moving this machine's own interrupts. So where
this machine has none, ``python -m tests.labhost.emulator fetch``
unpacks bookworm's into the lab's cache, as it does a QEMU, and the lab
host runs it from there: this machine's root is the lab host's, and the
libraries it links against come with libvirt and QEMU.
"""

import os
import subprocess

from tests.labhost import emulator
from tests.labhost import initramfs

SUITE = 'bookworm'
SYSTEM_IRQBALANCE = '/usr/sbin/irqbalance'


def irqbalance_dir(cache=None):
    return os.path.join(cache or emulator.cache_dir(), f'irqbalance-{SUITE}')


def irqbalance_command(cache=None):
    """The irqbalance a lab host runs: this machine's, else the cache's.

    :raises initramfs.LabUnavailable: when there is neither, saying how
        to get one.
    """
    if os.path.exists(SYSTEM_IRQBALANCE):
        return SYSTEM_IRQBALANCE
    fetched = os.path.join(irqbalance_dir(cache), SYSTEM_IRQBALANCE[1:])
    if os.path.exists(fetched):
        return fetched
    raise initramfs.LabUnavailable(
        f'no irqbalance for the lab host: `python -m '
        f'tests.labhost.emulator fetch` unpacks {SUITE}\'s into '
        f'{irqbalance_dir(cache)}')


def fetch_irqbalance(cache=None, run=subprocess.run):
    """Unpack irqbalance into the cache unless this machine has it; where.

    Returns the program's path.
    """
    if os.path.exists(SYSTEM_IRQBALANCE):
        return SYSTEM_IRQBALANCE
    root = irqbalance_dir(cache)
    if not os.path.exists(os.path.join(root, SYSTEM_IRQBALANCE[1:])):
        emulator.unpack(SUITE, ('irqbalance',), root, run)
    return irqbalance_command(cache)
