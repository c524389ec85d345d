"""Fixture files of a host's I/O path: NICs' vectors, /proc/irq, vhost.

Factory functions over a root directory, as the kernel lays them out:
``sys/class/net/<nic>/device`` a link into ``sys/devices``, the PCI
function's ``msi_irqs/<n>`` entries, ``proc/irq/<n>/*_affinity_list``.
Nothing here touches this machine's own /proc or /sys.
"""

import os

from tests.unit.agent import test_pagemove_backend as guest_files

write = guest_files.write
PCI_ROOT = 'sys/devices/pci0000:3a/0000:3a:00.0'


def _link_device(root, nic, target):
    os.makedirs(os.path.join(root, 'sys/class/net', nic), exist_ok=True)
    os.symlink(os.path.join('../../../..', target),
               os.path.join(root, 'sys/class/net', nic, 'device'))


def pci_nic(root, nic, function='0000:3b:00.0', vectors=(), legacy=None):
    """A PCI NIC raising MSI-X ``vectors``, or one ``legacy`` line."""
    path = f'{PCI_ROOT}/{function}'
    os.makedirs(os.path.join(root, path), exist_ok=True)
    for vector in vectors:
        write(root, f'{path}/msi_irqs/{vector}', 'msix\n')
    if legacy is not None:
        write(root, f'{path}/irq', f'{legacy}\n')
    _link_device(root, nic, path)
    return path


def virtio_nic(root, nic, function='0000:00:03.0', vectors=()):
    """A virtio NIC, raising ``vectors``.

    ``device`` is the virtio device; its parent, the PCI function, raises
    the vectors.
    """
    path = f'{PCI_ROOT}/{function}'
    for vector in vectors:
        write(root, f'{path}/msi_irqs/{vector}', 'msix\n')
    # The virtio device has an irq-less directory of its own.
    write(root, f'{path}/virtio0/features', '0\n')
    _link_device(root, nic, f'{path}/virtio0')
    return path


def irq(root, number, allowed, effective=None):
    write(root, f'proc/irq/{number}/smp_affinity_list', f'{allowed}\n')
    if effective is not None:
        write(root, f'proc/irq/{number}/effective_affinity_list',
              f'{effective}\n')


def read_affinity(root, number):
    with open(os.path.join(root, f'proc/irq/{number}/smp_affinity_list')) \
            as f:
        return f.read().strip()


def thread(root, tid, name, cpus, tgid=None, ppid=1, pid=None):
    """A thread's ``comm``, ``status`` and ``stat``.

    Under its process's ``task/`` too when ``pid`` is given.
    """
    status = (f'Name:\t{name}\nTgid:\t{tgid or tid}\nPid:\t{tid}\n'
              f'PPid:\t{ppid}\nCpus_allowed_list:\t{cpus}\n')
    write(root, f'proc/{tid}/comm', name + '\n')
    write(root, f'proc/{tid}/status', status)
    write(root, f'proc/{tid}/stat', f'{tid} ({name}) S {ppid} 1 1\n')
    if pid is not None:
        write(root, f'proc/{pid}/task/{tid}/comm', name + '\n')


def kthreadd(root, children):
    write(root, 'proc/2/comm', 'kthreadd\n')
    write(root, 'proc/2/task/2/children',
          ''.join(f'{c} ' for c in children))


def process(root, pid, name):
    write(root, f'proc/{pid}/comm', name + '\n')
