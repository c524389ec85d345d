"""Reading a host's I/O path: NIC vectors, irqbalance, vhost, interfaces.

Every reader runs on a fixture tree (tests/unit/agent/iopath_files.py).
"""

import os

import fixtures

from agent.sensors import guestio
from agent.sensors import irqbalance
from agent.sensors import irqs
from agent.sensors import vhost
from tests import base as test_base
from tests.unit.agent import iopath_files as files


class Tree(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path


class NicVectorsTest(Tree):

    def test_a_pci_nic_raises_its_functions_msix_vectors(self):
        files.pci_nic(self.root, 'ens1f0', vectors=(121, 120, 122))
        self.assertEqual((120, 121, 122), irqs.nic_irqs(self.root, 'ens1f0'))

    def test_a_virtio_nics_vectors_are_its_pci_parents(self):
        files.virtio_nic(self.root, 'eth0', vectors=(40, 41))
        self.assertEqual((40, 41), irqs.nic_irqs(self.root, 'eth0'))
        self.assertTrue(irqs.irq_function(self.root, 'eth0').endswith(
            '0000:00:03.0'))

    def test_without_msi_the_legacy_line(self):
        files.pci_nic(self.root, 'eno1', function='0000:3c:00.0', legacy=17)
        self.assertEqual((17,), irqs.nic_irqs(self.root, 'eno1'))
        files.pci_nic(self.root, 'eno2', function='0000:3c:00.1', legacy=0)
        self.assertEqual((), irqs.nic_irqs(self.root, 'eno2'))

    def test_msi_before_a_legacy_line_further_down(self):
        path = files.pci_nic(self.root, 'ens1f0', vectors=(120,))
        files.write(self.root, path.rsplit('/', 1)[0] + '/irq', '16\n')
        self.assertEqual((120,), irqs.nic_irqs(self.root, 'ens1f0'))

    def test_an_interface_without_a_device_has_none(self):
        files.write(self.root, 'sys/class/net/br0/bridge/stp_state', '0\n')
        self.assertEqual((), irqs.nic_irqs(self.root, 'br0'))
        self.assertEqual((), irqs.nic_irqs(self.root, 'absent'))

    def test_a_bridge_has_its_nics_vectors_and_not_its_taps(self):
        files.virtio_nic(self.root, 'eth0', vectors=(30, 29, 31))
        files.pci_nic(self.root, 'ens1f0', vectors=(120,))
        # br0 over a bond of eth0 and ens1f0, and a guest's tap.
        for upper, lowers in (('br0', ('bond0', 'vnet0')),
                              ('bond0', ('eth0', 'ens1f0'))):
            files.write(self.root, f'sys/class/net/{upper}/ifindex', '8\n')
            for lower in lowers:
                files.write(self.root, f'sys/class/net/{lower}/ifindex',
                            '9\n')
                os.symlink(f'../{lower}', os.path.join(
                    self.root, f'sys/class/net/{upper}/lower_{lower}'))
        self.assertEqual((29, 30, 31, 120), irqs.nic_irqs(self.root, 'br0'))
        self.assertEqual((), irqs.nic_irqs(self.root, 'vnet0'))


class AffinityTest(Tree):

    def test_allowed_and_effective(self):
        files.irq(self.root, 120, '0-3,8', '2')
        self.assertEqual((frozenset({0, 1, 2, 3, 8}), frozenset({2})),
                         irqs.affinity(self.root, 120))

    def test_no_effective_file_is_empty(self):
        files.irq(self.root, 120, '4')
        self.assertEqual((frozenset({4}), frozenset()),
                         irqs.affinity(self.root, 120))

    def test_a_vector_gone_is_none(self):
        self.assertIsNone(irqs.affinity(self.root, 999))

    def test_isolated(self):
        self.assertEqual(frozenset(), irqs.isolated_cpus(self.root))
        files.write(self.root, irqs.ISOLATED, '2-3\n')
        self.assertEqual(frozenset({2, 3}), irqs.isolated_cpus(self.root))


class IrqbalanceTest(Tree):

    def test_banned_irqs_of_a_setup_answer(self):
        answer = ('SLEEP 10 IRQ 120 LOAD 0 DIFF 0 CLASS 5 IRQ 33 LOAD 2 '
                  'DIFF 1 CLASS 2 BANNED 0000000f')
        self.assertTrue(irqbalance.is_setup_reply(answer))
        self.assertEqual({120, 33}, irqbalance.banned_irqs(answer))
        self.assertEqual(frozenset(), irqbalance.banned_irqs(
            'SLEEP 10 BANNED 00000000'))
        self.assertFalse(irqbalance.is_setup_reply(''))

    def test_the_ban_command_is_the_whole_list(self):
        self.assertEqual('settings ban irqs 33 120',
                         irqbalance.ban_command({120, 33}))
        self.assertEqual('settings ban irqs NONE', irqbalance.ban_command(()))
        # irqbalance stops reading at a 0.
        self.assertEqual('settings ban irqs NONE', irqbalance.ban_command({0}))

    def test_running_is_found_by_name(self):
        files.process(self.root, 700, 'irqbalance')
        files.process(self.root, 701, 'sshd')
        files.write(self.root, 'proc/self/comm', 'irqbalance\n')
        self.assertEqual((700,), irqbalance.running(self.root))
        self.assertTrue(irqbalance.alive(self.root, 700))
        self.assertFalse(irqbalance.alive(self.root, 701))
        self.assertFalse(irqbalance.alive(self.root, 702))

    def test_socket_path(self):
        self.assertEqual(self.root + '/run/irqbalance/irqbalance7.sock',
                         irqbalance.socket_path(self.root, 7))


class VhostWorkersTest(Tree):
    PID = 4242

    def test_before_6_4_kernel_threads_children_of_kthreadd(self):
        files.kthreadd(self.root, [3, 900, 901, 902])
        files.thread(self.root, 3, 'rcu_gp', '0-7', ppid=2)
        files.thread(self.root, 900, f'vhost-{self.PID}', '0-7', ppid=2)
        files.thread(self.root, 901, f'vhost-{self.PID}', '4-7', ppid=2)
        files.thread(self.root, 902, 'vhost-77', '0-7', ppid=2)
        self.assertEqual({f'vhost-{self.PID}': (900, 901),
                          'vhost-77': (902,)},
                         vhost.kernel_workers(self.root))
        self.assertEqual((900, 901), vhost.workers(self.root, self.PID))

    def test_without_a_children_file_parents_are_read(self):
        files.thread(self.root, 900, f'vhost-{self.PID}', '0-7', ppid=2)
        files.thread(self.root, 903, f'vhost-{self.PID}', '0-7', ppid=1)
        self.assertEqual((900,), vhost.workers(self.root, self.PID))

    def test_from_6_4_threads_of_qemu_itself(self):
        files.thread(self.root, self.PID, 'qemu-system-x86', '0-7')
        files.thread(self.root, self.PID, 'qemu-system-x86', '0-7',
                     pid=self.PID)
        files.thread(self.root, 4250, f'vhost-{self.PID}', '2-3',
                     tgid=self.PID, pid=self.PID)
        files.thread(self.root, 4251, 'CPU 0/KVM', '0-7', tgid=self.PID,
                     pid=self.PID)

        def no_scan():
            raise AssertionError('kernel threads scanned')
        self.assertEqual((4250,), vhost.workers(self.root, self.PID,
                                                no_scan))
        self.assertEqual(frozenset({2, 3}),
                         vhost.allowed_cpus(self.root, 4250))

    def test_the_kernel_table_is_shared(self):
        table = {f'vhost-{self.PID}': (900,)}
        self.assertEqual((900,), vhost.workers(self.root, self.PID, table))
        self.assertEqual((), vhost.workers(self.root, 1, table))

    def test_a_thread_gone_has_no_cpus(self):
        self.assertIsNone(vhost.allowed_cpus(self.root, 12345))

    def test_a_name_with_parentheses_keeps_its_parent(self):
        files.write(self.root, 'proc/9/stat', '9 (a) b) S 2 9 0\n')
        self.assertEqual(2, vhost.parent(self.root, 9))


GUEST = '''<domain type='kvm'><devices>
<interface type='bridge'><source bridge='br-ex'/><model type='virtio'/>
  <target dev='tap1'/></interface>
<interface type='direct'><source dev='ens1f0.100' mode='bridge'/>
  <model type='virtio'/><driver name='qemu'/></interface>
<interface type='network'><source network='default'/></interface>
<interface type='hostdev'><source><address type='pci' domain='0x0000'
  bus='0x3b' slot='0x02' function='0x1'/></source></interface>
<interface type='vhostuser'><source type='unix' path='/x' mode='server'/>
  <model type='virtio'/></interface>
</devices></domain>'''


class InterfacesTest(test_base.TestCase):

    def test_the_host_side_of_each_interface(self):
        self.assertEqual([('bridge', 'br-ex'), ('direct', 'ens1f0.100'),
                          ('network', 'default')],
                         guestio.interface_sources(GUEST))

    def test_vhost_on_a_virtio_tap_unless_qemu_does_it(self):
        self.assertTrue(guestio.uses_vhost(GUEST))
        no_vhost = GUEST.replace(
            "<target dev='tap1'/>", "<target dev='tap1'/><driver "
            "name='qemu'/>")
        self.assertFalse(guestio.uses_vhost(no_vhost))
        self.assertFalse(guestio.uses_vhost('<domain/>'))
