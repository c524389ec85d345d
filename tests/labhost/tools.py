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
import shutil
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


# sshd: the cloud tier's lab hosts may run one (tests/labhost/network.py,
# SshAccess) so that tempest's whitebox checks reach them. This machine
# must not run one (it would listen beyond the loopback), so it never
# gets Debian's openssh-server: bookworm's is unpacked into the cache,
# with openssh-client (ssh-keygen, for the host key and the key pair)
# and the libraries sshd links against that this machine lacks.
SSH_PACKAGES = ('openssh-server', 'openssh-client')
SSHD = 'usr/sbin/sshd'
SSH_KEYGEN = 'usr/bin/ssh-keygen'
LIBRARY_DIRS = ('usr/lib/x86_64-linux-gnu', 'lib/x86_64-linux-gnu')
# The libraries sshd (and those it links) needs beyond a minimal Debian
# system's, by soname: the package each comes in. One not listed here
# and missing stops the fetch, naming it.
SSHD_LIBRARIES = {
    'libwrap.so.0': 'libwrap0',
    'libnsl.so.2': 'libnsl2',
    'libtirpc.so.3': 'libtirpc3',
    'libgssapi_krb5.so.2': 'libgssapi-krb5-2',
    'libkrb5.so.3': 'libkrb5-3',
    'libk5crypto.so.3': 'libk5crypto3',
    'libkrb5support.so.0': 'libkrb5support0',
    'libkeyutils.so.1': 'libkeyutils1',
    'libcom_err.so.2': 'libcom-err2',
}


def ssh_dir(cache=None):
    return os.path.join(cache or emulator.cache_dir(), f'openssh-{SUITE}')


def library_path(root):
    """LD_LIBRARY_PATH for the programs unpacked at ``root``."""
    return ':'.join(os.path.join(root, d) for d in LIBRARY_DIRS)


def missing_libraries(ldd_output):
    """The sonames ldd reports as 'not found', in order, once each."""
    missing = []
    for line in ldd_output.splitlines():
        name, _, where = line.strip().partition(' => ')
        if where.strip() == 'not found' and name not in missing:
            missing.append(name)
    return missing


def packages_for(sonames):
    """The packages that bring ``sonames``.

    :raises ValueError: for a soname SSHD_LIBRARIES does not know.
    """
    unknown = [s for s in sonames if s not in SSHD_LIBRARIES]
    if unknown:
        raise ValueError(f'sshd needs {", ".join(unknown)}, which this '
                         f'machine lacks and the lab does not fetch')
    return tuple(dict.fromkeys(SSHD_LIBRARIES[s] for s in sonames))


def _ldd(program, root, run):
    result = run(['ldd', program], capture_output=True, text=True,
                 env={**os.environ, 'LD_LIBRARY_PATH': library_path(root)})
    return missing_libraries(result.stdout)


def ssh_tools(cache=None):
    """(sshd, ssh-keygen, LD_LIBRARY_PATH) of the cache's OpenSSH.

    :raises initramfs.LabUnavailable: when it was not fetched, saying
        how to.
    """
    root = ssh_dir(cache)
    sshd = os.path.join(root, SSHD)
    if not os.path.exists(sshd):
        raise initramfs.LabUnavailable(
            f'no sshd for the lab host: `python -m tests.labhost.emulator '
            f'fetch` unpacks {SUITE}\'s into {root}')
    return sshd, os.path.join(root, SSH_KEYGEN), library_path(root)


def fetch_sshd(cache=None, run=subprocess.run):
    """Unpack sshd (and what it lacks here) into the cache; its path.

    The libraries are found with ldd, as this machine's loader would
    find them, until none is missing: each round unpacks the packages
    of those still missing into a tree of their own, then moves it in.
    """
    root = ssh_dir(cache)
    sshd = os.path.join(root, SSHD)
    if not os.path.exists(sshd):
        emulator.unpack(SUITE, SSH_PACKAGES, root, run)
    for _ in range(len(SSHD_LIBRARIES)):
        missing = _ldd(sshd, root, run)
        if not missing:
            return sshd
        extra = emulator.unpack(SUITE, packages_for(missing),
                                root + '.libraries', run)
        _merge(extra, root)
    raise ValueError(f'sshd still lacks {", ".join(missing)}')


def _merge(extra, root):
    # dpkg-deb trees share their directories: copy files over, then
    # drop the extra tree.
    shutil.copytree(extra, root, symlinks=True, dirs_exist_ok=True)
    shutil.rmtree(extra)
