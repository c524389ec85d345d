"""The lab host's kernel: which one boots, its modules, its fetch."""

import os
import shutil
import subprocess
import tempfile

import fixtures

from tests import base as test_base
from tests.labhost import emulator
from tests.labhost import initramfs
from tests.labhost import labkernel
from tests.labhost import machine
from tests.labhost import topology

VERSION = '6.12.117+deb12-amd64'
PACKAGE = f'linux-image-{VERSION}-unsigned'


def make_tree(root, version=VERSION):
    """What unpacking a kernel package and depmod leave under ``root``."""
    modules = os.path.join(root, 'lib/modules', version)
    os.makedirs(modules)
    os.makedirs(os.path.join(root, 'boot'), exist_ok=True)
    open(os.path.join(root, 'boot', f'vmlinuz-{version}'), 'w').close()
    with open(os.path.join(modules, 'modules.dep'), 'w') as f:
        f.write('kernel/fs/9p/9p.ko.xz: kernel/net/9p/9pnet.ko.xz\n'
                'kernel/net/9p/9pnet.ko.xz:\n')
    return modules


class SelectionTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.cache = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.cache)
        self.useFixture(fixtures.EnvironmentVariable(labkernel.KERNEL_ENV))
        self.installed = initramfs.Kernel('6.1.0-57-amd64',
                                          '/boot/vmlinuz-6.1.0-57-amd64',
                                          '/lib/modules/6.1.0-57-amd64')
        self.useFixture(fixtures.MockPatch(
            'tests.labhost.initramfs.find_kernel',
            side_effect=self.find_kernel))

    def find_kernel(self, boot='/boot', modules='/lib/modules'):
        # The installed kernel for the default paths; a real look
        # anywhere else (the cache's tree).
        if boot == '/boot':
            return self.installed
        return self.real_find_kernel(boot, modules)

    real_find_kernel = staticmethod(initramfs.find_kernel)

    def test_unset_or_empty_boots_this_machines_kernel(self):
        self.assertEqual(self.installed, labkernel.selected(cache=self.cache))
        self.assertEqual(self.installed,
                         labkernel.selected('', cache=self.cache))

    def test_the_series_boots_the_cached_tree(self):
        modules = make_tree(labkernel.unpacked_dir(self.cache))
        self.useFixture(fixtures.EnvironmentVariable(
            labkernel.KERNEL_ENV, labkernel.SERIES))
        kernel = labkernel.selected(cache=self.cache)
        self.assertEqual(VERSION, kernel.version)
        self.assertEqual(modules, kernel.modules_dir)
        self.assertEqual(os.path.join(labkernel.unpacked_dir(self.cache),
                                      'boot', f'vmlinuz-{VERSION}'),
                         kernel.image)

    def test_the_series_not_fetched_says_how_to_fetch_it(self):
        exc = self.assertRaises(initramfs.LabUnavailable, labkernel.selected,
                                labkernel.SERIES, self.cache)
        self.assertIn('tests.labhost.labkernel fetch', str(exc))
        self.assertIn(labkernel.unpacked_dir(self.cache), str(exc))

    def test_an_absolute_path_is_a_tree_of_its_own(self):
        root = os.path.join(self.cache, 'elsewhere')
        make_tree(root, '6.15.0-1-amd64')
        self.assertEqual('6.15.0-1-amd64',
                         labkernel.selected(root, self.cache).version)

    def test_anything_else_is_refused(self):
        exc = self.assertRaises(initramfs.LabUnavailable, labkernel.selected,
                                'newest', self.cache)
        self.assertIn(labkernel.KERNEL_ENV, str(exc))

    def test_the_lab_host_boots_the_selected_kernel(self):
        self.useFixture(fixtures.MockPatch('shutil.which',
                                           return_value='/usr/bin/qemu'))
        self.useFixture(fixtures.MockPatch(
            'tests.labhost.initramfs.find_busybox'))
        self.useFixture(fixtures.EnvironmentVariable(
            emulator.CACHE_ENV, self.cache))
        self.assertEqual(self.installed, machine.check_available())
        self.useFixture(fixtures.EnvironmentVariable(
            labkernel.KERNEL_ENV, labkernel.SERIES))
        self.assertRaises(initramfs.LabUnavailable, machine.check_available)
        make_tree(labkernel.unpacked_dir(self.cache))
        self.assertEqual(VERSION, machine.check_available().version)


class ModuleTreeTest(test_base.TestCase):

    def test_this_machines_modules_need_no_bind(self):
        kernel = initramfs.Kernel('6.1.0-57-amd64', '/boot/x',
                                  '/lib/modules/6.1.0-57-amd64')
        self.assertEqual({}, labkernel.module_tree_settings(kernel))

    def test_a_cached_kernels_tree_is_bound_over_lib_modules(self):
        kernel = initramfs.Kernel(
            VERSION, '/c/linux-6.12/boot/x',
            f'/c/linux-6.12/lib/modules/{VERSION}')
        # The parent: /lib/modules/<version> does not exist to bind on.
        self.assertEqual({'LAB_MODULES': '/c/linux-6.12/lib/modules'},
                         labkernel.module_tree_settings(kernel))

    def test_built_in_modules_are_not_loaded(self):
        modules = initramfs.parse_modules_dep(
            'kernel/fs/9p/9p.ko.xz: kernel/fs/netfs/netfs.ko.xz\n'
            'kernel/fs/netfs/netfs.ko.xz:\n')
        builtin = initramfs.parse_modules_builtin(
            'kernel/drivers/virtio/virtio_pci.ko\n'
            'kernel/drivers/virtio/virtio_pci_legacy_dev.ko\n')
        self.assertEqual(['netfs', '9p'], initramfs.load_order(
            modules, ('virtio_pci', '9p'), builtin))
        # Without the list, a built-in module is a missing one.
        self.assertRaises(initramfs.LabUnavailable, initramfs.load_order,
                          modules, ('virtio_pci', '9p'))

    def test_a_kernel_without_a_builtin_list_builds_none_in(self):
        self.assertEqual(frozenset(), initramfs.read_builtin('/nonexistent'))


class PackageTest(test_base.TestCase):

    def test_the_newest_generic_unsigned_image_of_the_series(self):
        names = ['linux-image-6.12.9+deb12-amd64-unsigned',
                 'linux-image-6.12.117+deb12-amd64-unsigned',
                 'linux-image-6.12.38+deb12-amd64-unsigned',
                 # Other flavours, debug symbols, other series: not these.
                 'linux-image-6.12.120+deb12-cloud-amd64-unsigned',
                 'linux-image-6.12.120+deb12-rt-amd64-unsigned',
                 'linux-image-6.12.120+deb12-amd64-dbg',
                 'linux-image-6.13.1+deb12-amd64-unsigned']
        self.assertEqual('linux-image-6.12.117+deb12-amd64-unsigned',
                         labkernel.newest_package(names))

    def test_none_matching_is_none(self):
        self.assertIsNone(labkernel.newest_package(
            ['linux-image-6.1.0-57-amd64-unsigned']))

    def test_the_kernels_release_is_the_packages_middle(self):
        self.assertEqual(VERSION, labkernel.kernel_version(PACKAGE))


class FetchTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.cache = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.cache)
        self.commands = []

    def fake_run(self, args, check=False, cwd=None, capture_output=False,
                 text=False):
        self.commands.append(args)
        stdout = ''
        if args[0] == 'apt-cache':
            stdout = (f'linux-image-6.12.115+deb12-amd64-unsigned\n'
                      f'{PACKAGE}\nlinux-image-6.12-amd64-dbg\n')
        if 'download' in args:
            open(os.path.join(cwd, f'{args[-1]}.deb'), 'w').close()
        if args[0] == 'dpkg-deb':
            tree = args[-1]
            os.makedirs(os.path.join(tree, 'boot'))
            open(os.path.join(tree, 'boot', f'vmlinuz-{VERSION}'),
                 'w').close()
            os.makedirs(os.path.join(tree, 'lib/modules', VERSION))
        if args[0] == 'depmod':
            open(os.path.join(args[2], 'lib/modules', args[3],
                              'modules.dep'), 'w').close()
        return subprocess.CompletedProcess(args, 0, stdout, '')

    def test_the_newest_listed_is_downloaded_unpacked_and_indexed(self):
        root = labkernel.fetch(self.cache, run=self.fake_run)
        self.assertEqual(labkernel.unpacked_dir(self.cache), root)
        update, listing, download, unpack, depmod = self.commands
        self.assertEqual(PACKAGE, download[-1])
        for command in (update, listing, download):
            # Its own source list: the security archive, nothing else.
            self.assertIn('Dir::Etc::SourceParts=/nonexistent',
                          ' '.join(command))
        self.assertEqual(['depmod', '-b'], depmod[:2])
        self.assertEqual(VERSION, depmod[-1])
        self.assertEqual(VERSION, labkernel.in_tree(root).version)
        # Nothing of the work directory is left beside the tree.
        self.assertEqual([os.path.basename(root)], os.listdir(self.cache))

    def test_an_unpacked_kernel_is_not_fetched_again(self):
        labkernel.fetch(self.cache, run=self.fake_run)
        self.commands.clear()
        labkernel.fetch(self.cache, run=self.fake_run)
        self.assertEqual([], self.commands)

    def test_no_matching_package_leaves_no_tree(self):
        def listing_nothing(args, **kwargs):
            return subprocess.CompletedProcess(args, 0, '', '')

        self.assertRaises(initramfs.LabUnavailable, labkernel.fetch,
                          self.cache, run=listing_nothing)
        self.assertEqual([], os.listdir(self.cache))


class HmatShapeTest(test_base.TestCase):

    def args(self, shape):
        return topology.qemu_args(shape, '/k', '/i', 'console=ttyS0', ())

    def test_the_memory_only_node_is_plain_memory_with_an_hmat(self):
        args = self.args(topology.HMAT_NODES)
        self.assertEqual('q35,hmat=on', args[args.index('-machine') + 1])
        # Its RAM is the machine's: no NVDIMM, no hot-plug slot.
        self.assertEqual('2560M', args[args.index('-m') + 1])
        self.assertFalse([a for a in args if a.startswith('nvdimm')])
        self.assertIn('node,nodeid=2,memdev=mem2,initiator=0', args)
        self.assertEqual({}, machine.slow_memory_settings(
            topology.HMAT_NODES))

    def test_each_cpu_node_sees_the_memory_only_node_slower(self):
        args = self.args(topology.HMAT_NODES)
        figures = {}
        for arg in args:
            if arg.startswith('hmat-lb,'):
                words = dict(w.split('=') for w in arg.split(',')[1:])
                pair = (int(words['initiator']), int(words['target']))
                kind = words['data-type']
                figures[pair, kind] = words.get('latency') or words.get(
                    'bandwidth')
        self.assertEqual(12, len(figures))
        for cpu_node in (0, 1):
            own = int(figures[(cpu_node, cpu_node), 'access-latency'])
            slow = int(figures[(cpu_node, 2), 'access-latency'])
            self.assertGreater(slow, own)
            self.assertLess(
                int(figures[(cpu_node, 2), 'access-bandwidth'][:-1]),
                int(figures[(cpu_node, cpu_node),
                            'access-bandwidth'][:-1]))
        # The CPU nodes' own memory alike: the kernel's DRAM reference.
        self.assertEqual(figures[(0, 0), 'access-latency'],
                         figures[(1, 1), 'access-latency'])

    def test_the_nvdimm_shape_keeps_its_boot_work_and_no_hmat(self):
        args = self.args(topology.TIERED_NODES)
        self.assertFalse([a for a in args if a.startswith('hmat-lb')])
        self.assertEqual({'LAB_SLOW_NODE': '2'},
                         machine.slow_memory_settings(
                             topology.TIERED_NODES))

    def test_an_unknown_kind_is_refused(self):
        self.assertRaisesRegex(
            ValueError, 'slow memory kind',
            topology.dataclasses.replace, topology.TIERED_NODES,
            slow_memory_kind='cxl')
