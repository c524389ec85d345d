"""A NIC's interrupt vectors and how the kernel routes them: pure reads.

A network interface's ``device`` link names the device the driver bound;
its interrupts are raised by the PCI function above it: the function
itself for a physical NIC, the virtio device's parent for a virtio NIC.
That function lists its MSI and MSI-X vectors in ``msi_irqs/``, or has
one legacy line in ``irq``. Where each vector may go is
``/proc/irq/<n>/smp_affinity_list``; where the kernel's interrupt
controller delivers it now, ``effective_affinity_list`` (kernels before
4.13, and some controllers, have none).

Every reader takes ``root`` (``/`` in production) so tests read fixture
trees; a missing file means "unknown", never an error.
"""

import os

from agent.sensors import sysfs

NET_DIR = sysfs.NET_DIR
ISOLATED = 'sys/devices/system/cpu/isolated'


def _is_dir(*parts):
    return os.path.isdir(os.path.join(*parts))


def irq_function(root, nic):
    """The sysfs directory of the device that raises ``nic``'s interrupts.

    The first of the device and its ancestors with ``msi_irqs/``, else
    the first with an ``irq`` file; None for an interface with no device
    (a bridge, a bond) or whose device raises none.
    """
    link = os.path.join(root, NET_DIR, nic, 'device')
    if not os.path.exists(link):
        return None
    top = os.path.realpath(os.path.join(root, 'sys', 'devices'))
    first = os.path.realpath(link)
    legacy = None
    path = first
    while True:
        if _is_dir(path, 'msi_irqs'):
            return path
        if legacy is None and os.path.isfile(os.path.join(path, 'irq')):
            legacy = path
        if not path.startswith(top + os.sep):
            return legacy
        path = os.path.dirname(path)


def _vectors(function):
    try:
        names = os.listdir(os.path.join(function, 'msi_irqs'))
    except OSError:
        names = None
    if names is not None:
        return tuple(sorted(int(n) for n in names if n.isdigit()))
    legacy = sysfs._int_or_none(sysfs._read(function, 'irq'))
    # 0 is the kernel's "no line assigned".
    return (legacy,) if legacy else ()


def nic_irqs(root, nic, _seen=()):
    """The interrupt numbers ``nic``'s packets arrive by, sorted; () if none.

    Its own device's vectors; for an interface without a device (a
    bridge, a bond, a VLAN) those of the interfaces under it, whose NICs
    carry its packets. A guest's tap among a bridge's ports has no
    device and adds none.
    """
    function = irq_function(root, nic)
    if function is not None:
        return _vectors(function)
    found = set()
    for lower in sysfs._lower_interfaces(root, nic):
        if lower not in _seen:
            found.update(nic_irqs(root, lower, (*_seen, nic)))
    return tuple(sorted(found))


def affinity(root, irq):
    """(smp_affinity_list, effective_affinity_list) of ``irq``, or None.

    None when the vector is gone (its driver unbound); the effective set
    is empty where the kernel does not say.
    """
    base = ('proc', 'irq', str(irq))
    allowed = sysfs._read(root, *base, 'smp_affinity_list')
    if allowed is None:
        return None
    effective = sysfs._read(root, *base, 'effective_affinity_list')
    return (sysfs.parse_cpulist(allowed), sysfs.parse_cpulist(effective))


def isolated_cpus(root):
    """The CPUs the kernel isolates from the host (``isolcpus=``)."""
    return sysfs.parse_cpulist(sysfs._read(root, ISOLATED))
