"""Which kernel a lab host boots: this machine's, or a newer one, cached.

By default a lab host boots this machine's installed Debian kernel
(:func:`tests.labhost.initramfs.find_kernel`; 6.1 on Debian 12), and
nothing here runs. ``NUMA_POLICY_LAB_KERNEL`` selects another:

* ``6.12``: Debian's 6.12 for bookworm, unpacked into the lab's cache
  (``<cache>/linux-6.12``, the cache of :mod:`tests.labhost.emulator`)
  by ``python -m tests.labhost.labkernel fetch``;
* an absolute path: a tree laid out as a kernel package unpacks
  (``boot/vmlinuz-<version>``, ``lib/modules/<version>`` with its
  ``modules.dep``).

Newer kernels tier a CPU-less node from the firmware's HMAT and have
DAMON (doc/source/labhost.rst, "A newer kernel"); 6.1 does neither.

The fetch is pinned to a package name pattern, not one version: the
newest ``linux-image-6.12.<n>+deb12-amd64-unsigned`` that Debian's
``bookworm-security`` archive holds when it runs (the security archive
keeps few versions, so one pinned version would stop being there). apt
downloads it and checks it against the archive's signed index; it is
unpacked, and its module index made with this machine's ``depmod``
(the package leaves that to its install script), in the cache only:
nothing is installed, nothing of this machine's boot changes. An
unpacked tree is kept and used as it is: remove the directory to fetch
again.

Inside the lab host its modules must be where ``modprobe`` looks,
``/lib/modules/<version>``, which this machine's root (the lab host's,
read-only) lacks: the lab host binds the cache's module tree there
(:func:`module_tree_settings`, ``guest.sh``).
"""

import os
import re
import subprocess
import sys
import tempfile

from tests.labhost import emulator
from tests.labhost import initramfs

KERNEL_ENV = 'NUMA_POLICY_LAB_KERNEL'
# The value that names the cached 6.12 (the only one fetched here).
SERIES = '6.12'
MIRROR = 'http://deb.debian.org/debian-security'
SUITE = 'bookworm-security'
# Debian's generic amd64 flavour, without the signed shim's packaging:
# the lab boots the image directly (-kernel), no bootloader checks it.
PACKAGE_PREFIX = 'linux-image-6.12.'
PACKAGE = re.compile(r'linux-image-(6\.12\.\d+)\+deb12-amd64-unsigned')
# Where modprobe looks for a kernel's modules, in the lab host too.
SYSTEM_MODULES = '/lib/modules'


def unpacked_dir(cache=None):
    return os.path.join(cache or emulator.cache_dir(), f'linux-{SERIES}')


def in_tree(root):
    """The kernel unpacked under ``root``, with its modules.

    :raises initramfs.LabUnavailable: when ``root`` holds none.
    """
    return initramfs.find_kernel(boot=os.path.join(root, 'boot'),
                                 modules=os.path.join(root, 'lib/modules'))


def selected(value=None, cache=None):
    """The kernel ``value`` (else ``NUMA_POLICY_LAB_KERNEL``) selects.

    Unset or empty: this machine's installed kernel, as always.

    :raises initramfs.LabUnavailable: for a value naming no kernel, or
        a kernel that is not there yet (saying how to fetch it).
    """
    if value is None:
        value = os.environ.get(KERNEL_ENV, '')
    if not value:
        return initramfs.find_kernel()
    if value == SERIES:
        root = unpacked_dir(cache)
        how = f'`python -m {__spec__.name} fetch` unpacks it into {root}'
    elif os.path.isabs(value):
        root, how = value, 'unpack a kernel package there'
    else:
        raise initramfs.LabUnavailable(
            f'{KERNEL_ENV}={value}: neither {SERIES} nor an absolute path')
    try:
        return in_tree(root)
    except initramfs.LabUnavailable as exc:
        raise initramfs.LabUnavailable(
            f'{KERNEL_ENV}={value}: {exc}; {how}') from None


def module_tree_settings(kernel):
    """config.sh values for guest.sh: where the kernel's modules are.

    None for a kernel whose modules are already under /lib/modules (this
    machine's own); else the directory guest.sh binds over /lib/modules,
    so that modprobe finds the modules the initramfs did not load
    (dax/kmem, vhost, tun, Open vSwitch...).
    """
    tree = os.path.dirname(os.path.abspath(kernel.modules_dir))
    if tree == SYSTEM_MODULES:
        return {}
    return {'LAB_MODULES': tree}


def newest_package(names):
    """The newest name matching :data:`PACKAGE` in ``names``; None."""
    found = [(initramfs.version_key(match.group(1)), match.group(0))
             for match in map(PACKAGE.fullmatch, names) if match]
    return max(found)[1] if found else None


def kernel_version(package):
    """uname -r of the kernel a :data:`PACKAGE` package holds."""
    return package[len('linux-image-'):-len('-unsigned')]


def fetch(cache=None, run=subprocess.run):
    """Unpack the newest pinned 6.12 into the cache; its tree's path."""
    root = unpacked_dir(cache)
    try:
        in_tree(root)
        return root
    except initramfs.LabUnavailable:
        pass
    os.makedirs(os.path.dirname(root), exist_ok=True)
    # A failure leaves no half tree: the work directory goes with it.
    with tempfile.TemporaryDirectory(dir=os.path.dirname(root)) as work:
        tree = _download_and_unpack(work, run)
        os.rename(tree, root)
    return root


def _download_and_unpack(work, run):
    options = emulator.apt_workspace(work, SUITE, run, MIRROR)
    listed = run(['apt-cache', *options, 'pkgnames', PACKAGE_PREFIX],
                 check=True, capture_output=True, text=True).stdout
    package = newest_package(listed.split())
    if package is None:
        raise initramfs.LabUnavailable(
            f'{SUITE} lists no package like {PACKAGE.pattern}')
    debs = os.path.join(work, 'debs')
    run(['apt-get', *options, 'download', package], check=True, cwd=debs)
    emulator.unpack_debs(work, run)
    tree = os.path.join(work, 'tree')
    # modules.dep, which the initramfs and modprobe read: made by the
    # package's install script on a real install, here by depmod in the
    # tree alone (-b: its base directory).
    run(['depmod', '-b', tree, kernel_version(package)], check=True)
    return tree


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv != ['fetch']:
        print(f'usage: python -m {__spec__.name} fetch', file=sys.stderr)
        return 2
    root = fetch()
    kernel = in_tree(root)
    print(f'lab kernel {kernel.version}: {kernel.image} '
          f'({KERNEL_ENV}={SERIES})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
