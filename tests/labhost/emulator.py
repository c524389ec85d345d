"""The QEMU that emulates a lab host's hardware.

Most lab hosts boot in this machine's own QEMU (Debian's
``qemu-system-x86``). A lab host with an SR-IOV NIC needs QEMU's ``igb``
device, an Intel 82576 with virtual functions, which QEMU has since 8.0;
Debian 12 ships 7.2. Such a lab host boots in the QEMU of Debian's
``bookworm-backports`` instead, unpacked into a cache of the lab's own
(:func:`fetch`): nothing is installed system-wide, and libvirtd inside
the lab host still runs this machine's QEMU for its domains.

``python -m tests.labhost.emulator fetch`` (run by ``tox -e host``)
downloads it with apt, which checks the archive's signatures, unless
this machine's QEMU already has every device a lab host needs; and the
programs lab hosts run that this machine need not have
(:mod:`tests.labhost.tools`: irqbalance, sshd).
"""

import dataclasses
import glob
import os
import shutil
import subprocess
import sys
import tempfile

from tests.labhost import initramfs

SYSTEM_QEMU = 'qemu-system-x86_64'
CACHE_ENV = 'NUMA_POLICY_LAB_CACHE'
SUITE = 'bookworm-backports'
MIRROR = 'http://deb.debian.org/debian'
# The emulator, the modules it loads, its option ROMs and the firmware
# it was built with.
PACKAGES = ('qemu-system-x86', 'qemu-system-common', 'qemu-system-data',
            'seabios')
# Devices lab hosts may need beyond what every QEMU has.
DEVICES = ('igb',)
PROBE_TIMEOUT = 30


@dataclasses.dataclass(frozen=True)
class Emulator:
    """How to start one QEMU: its command and environment additions."""

    command: tuple
    env: tuple = ()  # (name, value) pairs

    def environ(self):
        return {**os.environ, **dict(self.env)}


def cache_dir():
    default = os.path.join(os.path.expanduser('~'), '.cache',
                           'nova-numa-policy', 'lab')
    return os.environ.get(CACHE_ENV) or default


def unpacked_dir(cache=None):
    return os.path.join(cache or cache_dir(), f'qemu-{SUITE}')


def from_tree(root):
    """The QEMU unpacked under ``root`` (a Debian package tree)."""
    return Emulator(
        command=(os.path.join(root, 'usr/bin', SYSTEM_QEMU),
                 '-L', os.path.join(root, 'usr/share/qemu'),
                 '-L', os.path.join(root, 'usr/share/seabios')),
        # Its modules, not those of this machine's QEMU: a module of
        # another build is refused.
        env=(('QEMU_MODULE_DIR',
              os.path.join(root, 'usr/lib/x86_64-linux-gnu/qemu')),))


def has_device(emulator, device):
    """Whether ``emulator`` knows the device model ``device``."""
    try:
        result = subprocess.run(
            [*emulator.command, '-machine', 'none', '-device',
             f'{device},help'], capture_output=True,
            timeout=PROBE_TIMEOUT, env=emulator.environ())
    except (OSError, subprocess.TimeoutExpired):
        return False
    # QEMU exits 0 for a device it does not know, saying so on stderr.
    return f'{device} options:'.encode() in result.stdout


def for_devices(devices, cache=None):
    """The emulator for a lab host that needs ``devices``.

    This machine's QEMU where it has them all, else the unpacked one.

    :raises initramfs.LabUnavailable: when neither has them, saying how
        to get one that does.
    """
    system = Emulator(command=(SYSTEM_QEMU,))
    if all(has_device(system, d) for d in devices):
        return system
    root = unpacked_dir(cache)
    fetched = from_tree(root)
    if os.path.exists(fetched.command[0]) and all(
            has_device(fetched, d) for d in devices):
        return fetched
    raise initramfs.LabUnavailable(
        f'no QEMU here has the device(s) {", ".join(devices)} this lab '
        f'host needs (QEMU 8.0 or later): `python -m '
        f'tests.labhost.emulator fetch` unpacks {SUITE}\'s into {root}')


def apt_options(work):
    """apt options that use only ``work``: no system list or cache."""
    return ['-q', '-o', f'Dir::Etc::SourceList={work}/sources.list',
            '-o', 'Dir::Etc::SourceParts=/nonexistent',
            '-o', f'Dir::State::Lists={work}/lists',
            '-o', f'Dir::Cache={work}/cache',
            '-o', 'Debug::NoLocking=1',
            '-o', 'APT::Sandbox::User=root']


def fetch(cache=None, run=subprocess.run):
    """Unpack the suite's QEMU into the cache; its path."""
    root = unpacked_dir(cache)
    if os.path.exists(os.path.join(root, 'usr/bin', SYSTEM_QEMU)):
        return root
    return unpack(SUITE, PACKAGES, root, run)


def unpack(suite, packages, root, run=subprocess.run):
    """Download ``packages`` of ``suite`` and unpack them at ``root``.

    apt downloads the packages and checks them against the archive's
    signed index (this machine's Debian keyring). Unpacked into a
    temporary directory first, so a failure leaves no half tree.
    """
    os.makedirs(os.path.dirname(root), exist_ok=True)
    with tempfile.TemporaryDirectory(dir=os.path.dirname(root)) as work:
        options = apt_workspace(work, suite, run)
        run(['apt-get', *options, 'download',
             *(f'{p}/{suite}' for p in packages)], check=True,
            cwd=os.path.join(work, 'debs'))
        unpack_debs(work, run)
        os.rename(os.path.join(work, 'tree'), root)
    return root


def apt_workspace(work, suite, run=subprocess.run, mirror=MIRROR):
    """``work`` made apt's own for ``suite`` of ``mirror``: options.

    Downloads go to ``work``/debs, :func:`unpack_debs` unpacks them
    into ``work``/tree.
    """
    for sub in ('lists/partial', 'cache/archives/partial', 'debs', 'tree'):
        os.makedirs(os.path.join(work, sub))
    with open(os.path.join(work, 'sources.list'), 'w') as f:
        f.write(f'deb {mirror} {suite} main\n')
    options = apt_options(work)
    run(['apt-get', *options, 'update'], check=True)
    return options


def unpack_debs(work, run=subprocess.run):
    """Every package downloaded into ``work``/debs, into ``work``/tree."""
    for deb in sorted(glob.glob(os.path.join(work, 'debs', '*.deb'))):
        run(['dpkg-deb', '-x', deb, os.path.join(work, 'tree')], check=True)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv != ['fetch']:
        print(f'usage: python -m {__spec__.name} fetch', file=sys.stderr)
        return 2
    _fetch_qemu()
    _fetch_irqbalance()
    _fetch_sshd()
    return 0


def _fetch_qemu():
    system = Emulator(command=(SYSTEM_QEMU,))
    if shutil.which(SYSTEM_QEMU) and all(
            has_device(system, d) for d in DEVICES):
        print(f'{SYSTEM_QEMU} has {", ".join(DEVICES)}: nothing to fetch')
        return
    try:
        root = fetch()
    except (OSError, subprocess.CalledProcessError) as exc:
        # Not fatal here: the lab hosts that need it say so, and fail
        # where they must run (NUMA_POLICY_REQUIRE_LAB=1).
        print(f'warning: could not fetch {SUITE}\'s QEMU: {exc}',
              file=sys.stderr)
        return
    print(f'lab QEMU with {", ".join(DEVICES)}: {root}')


def _fetch_irqbalance():
    # Imported here: tools imports this module for its apt helpers.
    from tests.labhost import tools
    try:
        print(f'lab irqbalance: {tools.fetch_irqbalance()}')
    except (OSError, subprocess.CalledProcessError) as exc:
        # As for QEMU: the tests that run it fail where they must run.
        print(f'warning: could not fetch irqbalance: {exc}',
              file=sys.stderr)


def _fetch_sshd():
    from tests.labhost import tools
    try:
        print(f'lab sshd: {tools.fetch_sshd()}')
    except (OSError, ValueError, subprocess.CalledProcessError) as exc:
        # Only the lab hosts asked to run sshd need it; they say so.
        print(f'warning: could not fetch sshd: {exc}', file=sys.stderr)


if __name__ == '__main__':
    sys.exit(main())
