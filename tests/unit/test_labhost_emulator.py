"""The lab host's emulator and its SR-IOV shape, without booting one."""

import os
import shutil
import tempfile

import fixtures

from tests import base as test_base
from tests.labhost import emulator
from tests.labhost import initramfs
from tests.labhost import tools
from tests.labhost import topology


def _args(shape, accel='tcg'):
    return topology.qemu_args(shape, '/boot/vmlinuz', '/tmp/initrd',
                              'console=ttyS0', (), accel=accel,
                              qemu=('/opt/qemu', '-L', '/opt/share'))


def _device(args, prefix):
    return [a for a in args if a.startswith(prefix)]


class SlowMemoryShapeTest(test_base.TestCase):

    def test_the_tiered_shape_has_a_memory_only_node_of_an_nvdimm(self):
        args = _args(topology.TIERED_NODES)
        self.assertEqual('q35,nvdimm=on', args[args.index('-machine') + 1])
        self.assertEqual('2048M,slots=1,maxmem=2560M',
                         args[args.index('-m') + 1])
        self.assertIn('node,nodeid=2', args)
        # Farther from both CPU nodes than they are from each other.
        self.assertEqual(
            ['dist,src=0,dst=2,val=30', 'dist,src=1,dst=2,val=30'],
            _device(args, 'dist,src=')[1:])
        self.assertEqual(['nvdimm,id=nvdimm0,memdev=slowmem,node=2'],
                         _device(args, 'nvdimm,'))
        self.assertEqual(2, topology.TIERED_NODES.slow_node)

    def test_a_plain_shape_has_no_nvdimm(self):
        args = _args(topology.TWO_NODES)
        self.assertEqual('q35', args[args.index('-machine') + 1])
        self.assertEqual('2048M', args[args.index('-m') + 1])
        self.assertEqual([], _device(args, 'nvdimm'))
        self.assertIsNone(topology.TWO_NODES.slow_node)

    def test_slow_memory_nearer_than_a_cpu_node_is_refused(self):
        self.assertRaisesRegex(
            ValueError, 'farther than every CPU node',
            topology.dataclasses.replace, topology.TWO_NODES,
            slow_memory_mb=512, slow_distance=21)
        self.assertRaisesRegex(
            ValueError, 'a multiple of 128 MiB',
            topology.dataclasses.replace, topology.TWO_NODES,
            slow_memory_mb=500, slow_distance=30)


class SriovShapeTest(test_base.TestCase):

    def test_the_sriov_shape_has_an_igb_nic_behind_an_iommu(self):
        args = _args(topology.SRIOV_NODES)
        self.assertEqual(['/opt/qemu', '-L', '/opt/share'], args[:3])
        self.assertEqual(['igb,netdev=net0,bus=rp0,romfile='],
                         _device(args, 'igb'))
        # The IOMMU comes before the PCI devices it translates for.
        self.assertLess(args.index('intel-iommu,intremap=off'),
                        args.index('igb,netdev=net0,bus=rp0,romfile='))
        self.assertIn('intel_iommu=on', args[args.index('-append') + 1])
        self.assertEqual('tcg,thread=single', args[args.index('-accel') + 1])
        self.assertEqual(('igb',), topology.devices_needed(
            topology.SRIOV_NODES))

    def test_other_shapes_keep_virtio_and_no_iommu(self):
        args = _args(topology.TWO_NODES)
        self.assertEqual([], _device(args, 'igb'))
        self.assertEqual([], _device(args, 'intel-iommu'))
        self.assertEqual(['virtio-net-pci,netdev=net0,bus=rp0,romfile='],
                         _device(args, 'virtio-net-pci'))
        self.assertEqual('console=ttyS0', args[args.index('-append') + 1])
        self.assertEqual('tcg,thread=single', args[args.index('-accel') + 1])
        self.assertEqual('kvm', _args(topology.SRIOV_NODES, 'kvm')[
            _args(topology.SRIOV_NODES, 'kvm').index('-accel') + 1])
        self.assertEqual((), topology.devices_needed(topology.TWO_NODES))

    def test_an_sriov_nic_needs_a_node(self):
        self.assertRaises(ValueError, topology.LabTopology, 'x', 1, 1, 64,
                          ((10,),), None, True)


class FetchTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.cache = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.cache)
        self.commands = []

    def fake_run(self, args, check=False, cwd=None):
        self.commands.append(args)
        if args[0] == 'apt-get' and args[-len(emulator.PACKAGES) - 1] == (
                'download'):
            for package in emulator.PACKAGES:
                open(os.path.join(cwd, f'{package}.deb'), 'w').close()
        if args[0] == 'dpkg-deb':
            # What unpacking qemu-system-x86 leaves.
            binary = os.path.join(args[-1], 'usr/bin', emulator.SYSTEM_QEMU)
            os.makedirs(os.path.dirname(binary), exist_ok=True)
            open(binary, 'w').close()

    def test_apt_fetches_the_suites_packages_into_the_cache_alone(self):
        root = emulator.fetch(self.cache, run=self.fake_run)
        self.assertEqual(emulator.unpacked_dir(self.cache), root)
        self.assertTrue(os.path.exists(
            os.path.join(root, 'usr/bin', emulator.SYSTEM_QEMU)))
        update, download, *unpacks = self.commands
        self.assertEqual('update', update[-1])
        self.assertEqual([f'{p}/bookworm-backports'
                          for p in emulator.PACKAGES],
                         download[-len(emulator.PACKAGES):])
        for command in (update, download):
            options = ' '.join(command)
            # Its own source list and lists: the system's are not used.
            self.assertIn('Dir::Etc::SourceParts=/nonexistent', options)
            self.assertNotIn('/etc/apt', options)
        self.assertEqual(len(emulator.PACKAGES), len(unpacks))
        # Nothing of the work directory is left beside the tree.
        self.assertEqual([os.path.basename(root)], os.listdir(self.cache))

    def test_an_unpacked_tree_is_not_fetched_again(self):
        emulator.fetch(self.cache, run=self.fake_run)
        self.commands.clear()
        emulator.fetch(self.cache, run=self.fake_run)
        self.assertEqual([], self.commands)

    def test_a_failed_download_leaves_no_tree(self):
        def failing(args, check=False, cwd=None):
            if 'download' in args:
                raise OSError('no network')

        self.assertRaises(OSError, emulator.fetch, self.cache, run=failing)
        self.assertEqual([], os.listdir(self.cache))


class IrqbalanceFetchTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.cache = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.cache)
        self.commands = []
        # This machine's own irqbalance, present or not.
        self.system = os.path.join(self.cache, 'system-irqbalance')
        self.useFixture(fixtures.MonkeyPatch(
            'tests.labhost.tools.SYSTEM_IRQBALANCE', self.system))

    def fake_run(self, args, check=False, cwd=None):
        self.commands.append(args)
        if 'download' in args:
            open(os.path.join(cwd, 'irqbalance.deb'), 'w').close()
        if args[0] == 'dpkg-deb':
            binary = os.path.join(args[-1], self.system[1:])
            os.makedirs(os.path.dirname(binary), exist_ok=True)
            open(binary, 'w').close()

    def test_unpacked_from_bookworm_where_this_machine_has_none(self):
        command = tools.fetch_irqbalance(self.cache, run=self.fake_run)
        self.assertEqual(os.path.join(tools.irqbalance_dir(self.cache),
                                      self.system[1:]), command)
        self.assertEqual(command, tools.irqbalance_command(self.cache))
        update, download, unpack = self.commands
        self.assertEqual(['irqbalance/bookworm'], download[-1:])
        self.assertNotIn('/etc/apt', ' '.join(update + download))

    def test_this_machines_own_is_used_and_nothing_fetched(self):
        open(self.system, 'w').close()
        self.assertEqual(self.system,
                         tools.fetch_irqbalance(self.cache, run=self.fake_run))
        self.assertEqual([], self.commands)

    def test_without_either_the_lab_says_how_to_get_one(self):
        exc = self.assertRaises(initramfs.LabUnavailable,
                                tools.irqbalance_command, self.cache)
        self.assertIn('tests.labhost.emulator fetch', str(exc))


class DevicesTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        if shutil.which(emulator.SYSTEM_QEMU) is None:
            self.skipTest(f'{emulator.SYSTEM_QEMU} is not installed '
                          f'(apt-get install qemu-system-x86)')

    def test_qemu_is_asked_which_devices_it_has(self):
        system = emulator.Emulator((emulator.SYSTEM_QEMU,))
        self.assertTrue(emulator.has_device(system, 'virtio-net-pci'))
        self.assertFalse(emulator.has_device(system, 'no-such-nic'))

    def test_without_the_device_anywhere_the_lab_host_says_how_to_get_it(
            self):
        cache = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, cache)
        exc = self.assertRaises(initramfs.LabUnavailable,
                                emulator.for_devices, ('no-such-nic',),
                                cache)
        self.assertIn('tests.labhost.emulator fetch', str(exc))
        self.assertIn('no-such-nic', str(exc))

    def test_devices_every_qemu_has_need_no_other_emulator(self):
        self.assertEqual((emulator.SYSTEM_QEMU,), emulator.for_devices(
            ('virtio-net-pci',), tempfile.gettempdir()).command)
