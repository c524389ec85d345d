"""The lab host's initramfs, built from what this machine has installed.

An installed Debian kernel (``linux-image-amd64``) and its modules, and a
static busybox (``busybox-static``): nothing is downloaded. (Or a newer
kernel unpacked into the lab's cache, when one is selected:
:mod:`tests.labhost.labkernel`.) The initramfs holds busybox, the
virtio and 9p modules the guest needs to mount this machine's root file
system (those the kernel does not build in), and ``init.sh`` as
``/init``.

The archive is written here (the "newc" cpio format the kernel unpacks),
so building it needs neither root nor cpio.
"""

import dataclasses
import gzip
import io
import lzma
import os
import re
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
INIT_SCRIPT = os.path.join(HERE, 'init.sh')
BUSYBOX_PATHS = ('/bin/busybox', '/usr/bin/busybox')
# What the guest needs: virtio PCI devices, the 9p file systems over
# them, the NIC, bridges over it, and overlays (a writable /etc). Their
# dependencies come from modules.dep.
WANTED_MODULES = ('virtio_pci', '9pnet_virtio', '9p', 'virtio_net', 'bridge',
                  'overlay')
_MODULE_SUFFIX = re.compile(r'\.ko(\.xz|\.zst|\.gz)?$')


class LabUnavailable(Exception):
    """This machine cannot boot a lab host; the message says what lacks."""


@dataclasses.dataclass(frozen=True)
class Kernel:
    version: str
    image: str
    modules_dir: str


def version_key(version):
    return [int(p) if p.isdigit() else p
            for p in re.split(r'(\d+)', version)]


def find_kernel(boot='/boot', modules='/lib/modules'):
    """The newest kernel image whose modules are installed too."""
    try:
        names = os.listdir(boot)
    except FileNotFoundError:
        names = []
    found = []
    for name in names:
        if not name.startswith('vmlinuz-'):
            continue
        version = name[len('vmlinuz-'):]
        modules_dir = os.path.join(modules, version)
        image = os.path.join(boot, name)
        if (os.path.exists(os.path.join(modules_dir, 'modules.dep'))
                and os.access(image, os.R_OK)):
            found.append(Kernel(version, image, modules_dir))
    if not found:
        raise LabUnavailable(
            f'no readable kernel image in {boot} with its modules in '
            f'{modules} (apt-get install linux-image-amd64)')
    return max(found, key=lambda k: version_key(k.version))


def module_name(path):
    return _MODULE_SUFFIX.sub('', os.path.basename(path)).replace('-', '_')


def parse_modules_dep(text):
    """{module name: (path, [dependency names])} from modules.dep."""
    modules = {}
    for line in text.splitlines():
        path, sep, deps = line.partition(':')
        if not sep:
            continue
        modules[module_name(path)] = (
            path, [module_name(d) for d in deps.split()])
    return modules


def parse_modules_builtin(text):
    """The names of modules.builtin: modules built into the kernel."""
    return frozenset(module_name(line) for line in text.split())


def load_order(modules, wanted, builtin=frozenset()):
    """``wanted`` and their dependencies, each after what it needs.

    A module in ``builtin`` needs no loading: one kernel builds in what
    another makes a module (virtio_pci is a module in Debian's 6.1 and
    built in in its 6.12).
    """
    order = []

    def visit(name, path):
        if name in order or name in builtin:
            return
        if name in path:
            raise LabUnavailable(f'module dependency cycle: {path}')
        if name not in modules:
            raise LabUnavailable(f'kernel module {name} is not installed')
        for dep in modules[name][1]:
            visit(dep, path + (name,))
        order.append(name)

    for name in wanted:
        visit(name, ())
    return order


def read_module(path):
    """A module file's bytes, decompressed: busybox's insmod wants ELF."""
    with open(path, 'rb') as f:
        data = f.read()
    if path.endswith('.xz'):
        return lzma.decompress(data)
    if path.endswith('.gz'):
        return gzip.decompress(data)
    if path.endswith('.zst'):
        raise LabUnavailable(f'{path}: zstd-compressed modules are not '
                             f'supported')
    return data


def is_static_elf(path):
    """Whether ``path`` is an ELF executable with no program interpreter."""
    with open(path, 'rb') as f:
        header = f.read(64)
        if header[:4] != b'\x7fELF' or header[4] != 2:
            return False
        phoff, = struct.unpack_from('<Q', header, 0x20)
        phentsize, phnum = struct.unpack_from('<HH', header, 0x36)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    pt_interp = 3
    return all(struct.unpack_from('<I', table, i * phentsize)[0] != pt_interp
               for i in range(phnum))


def find_busybox(paths=BUSYBOX_PATHS):
    for path in paths:
        if os.path.exists(path) and is_static_elf(path):
            return path
    raise LabUnavailable('no static busybox (apt-get install busybox-static)')


class CpioWriter:
    """An archive in the kernel's "newc" cpio format, in memory."""

    def __init__(self):
        self._out = io.BytesIO()
        self._inode = 0

    def _entry(self, name, mode, data=b'', rdev=(0, 0)):
        self._inode += 1
        name_bytes = name.encode() + b'\0'
        fields = (self._inode, mode, 0, 0, 1, 0, len(data), 0, 0,
                  rdev[0], rdev[1], len(name_bytes), 0)
        self._out.write(b'070701' + b''.join(b'%08X' % f for f in fields))
        self._out.write(name_bytes)
        self._pad()
        self._out.write(data)
        self._pad()

    def _pad(self):
        self._out.write(b'\0' * (-self._out.tell() % 4))

    def directory(self, name):
        self._entry(name, 0o040755)

    def file(self, name, data, mode=0o644):
        self._entry(name, 0o100000 | mode, data)

    def char_device(self, name, major, minor):
        self._entry(name, 0o020600, rdev=(major, minor))

    def finish(self):
        self._entry('TRAILER!!!', 0)
        return self._out.getvalue()


def read_builtin(modules_dir):
    """The kernel's built-in modules; none where it lists none."""
    try:
        with open(os.path.join(modules_dir, 'modules.builtin')) as f:
            return parse_modules_builtin(f.read())
    except FileNotFoundError:
        return frozenset()


def build(kernel, busybox, wanted=WANTED_MODULES, init_script=INIT_SCRIPT):
    """The gzip-compressed initramfs for ``kernel``."""
    with open(os.path.join(kernel.modules_dir, 'modules.dep')) as f:
        modules = parse_modules_dep(f.read())
    order = load_order(modules, wanted, read_builtin(kernel.modules_dir))
    archive = CpioWriter()
    for directory in ('bin', 'dev', 'proc', 'sys', 'newroot', 'lib',
                      'lib/modules'):
        archive.directory(directory)
    archive.char_device('dev/console', 5, 1)
    with open(busybox, 'rb') as f:
        archive.file('bin/busybox', f.read(), 0o755)
    with open(init_script, 'rb') as f:
        archive.file('init', f.read(), 0o755)
    for name in order:
        path = os.path.join(kernel.modules_dir, modules[name][0])
        archive.file(f'lib/modules/{name}.ko', read_module(path))
    archive.file('lib/modules/order', ('\n'.join(order) + '\n').encode())
    return gzip.compress(archive.finish(), compresslevel=1)
