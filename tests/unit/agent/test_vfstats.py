"""SR-IOV VF traffic from the PF: XML, sysfs, netlink, backend.

The netlink tests ask this machine's kernel about its loopback link,
which has no VFs; the VF list is then built here as the kernel's uapi
(linux/if_link.h) lays it out, since no test machine has an SR-IOV NIC.
"""

import errno
import os
import socket
import struct

import fixtures

from agent.backend import libvirt_backend
from agent.backend import settings
from agent.sensors import vfstats
from tests import base as test_base
from tests.unit.agent import base

VF = '0000:3b:02.1'
PF = '0000:3b:00.0'
VF_INTERFACE = (
    "<devices><interface type='hostdev' managed='yes'>"
    "<mac address='fa:16:3e:00:00:01'/><source>"
    "<address type='pci' domain='0x0000' bus='0x3b' slot='0x02' "
    "function='0x1'/></source></interface></devices>")


def nla(kind, payload):
    """One netlink attribute, padded to 4 bytes."""
    length = 4 + len(payload)
    return struct.pack('=HH', length, kind) + payload + bytes(
        -length % 4)


def vf_info(index, rx_bytes, tx_bytes, rx_packets, tx_packets):
    mac = struct.pack('=I', index) + bytes(32)
    stats = b''.join(nla(kind, struct.pack('=Q', value)) for kind, value in (
        (0, rx_packets), (1, tx_packets), (2, rx_bytes), (3, tx_bytes),
        (4, 7), (5, 9)))
    # Nested attributes carry NLA_F_NESTED (0x8000) in their type.
    return nla(1 | 0x8000, nla(1, mac) + nla(8 | 0x8000, stats))


def write_vf_tree(root, vfs=2, pf_interface='ens1f0'):
    """sysfs of a PF with ``vfs`` VFs, VF 1 being ``VF``."""
    devices = os.path.join(root, vfstats.PCI_DEVICES)
    pf = os.path.join(devices, PF)
    os.makedirs(os.path.join(pf, 'net', pf_interface))
    for index in range(vfs):
        address = f'0000:3b:02.{index}'
        os.makedirs(os.path.join(devices, address))
        os.symlink(f'../{PF}', os.path.join(devices, address, 'physfn'))
        os.symlink(f'../{address}', os.path.join(pf, f'virtfn{index}'))


class XmlTest(test_base.TestCase):

    def test_vf_interfaces_give_their_pci_address(self):
        xml = f'<domain>{VF_INTERFACE}</domain>'
        self.assertEqual([VF], vfstats.vf_addresses(xml))

    def test_other_interfaces_and_devices_give_nothing(self):
        xml = ("<domain><devices><interface type='bridge'><target "
               "dev='tap1'/></interface><hostdev mode='subsystem' "
               "type='pci'><source><address domain='0x0000' bus='0x5e' "
               "slot='0x00' function='0x0'/></source></hostdev>"
               "</devices></domain>")
        self.assertEqual([], vfstats.vf_addresses(xml))


class SysfsTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path

    def test_a_vf_is_found_under_its_pf(self):
        write_vf_tree(self.root)
        self.assertEqual(('ens1f0', 1), vfstats.vf_of(self.root, VF))
        self.assertEqual(('ens1f0', 0),
                         vfstats.vf_of(self.root, '0000:3b:02.0'))

    def test_a_device_that_is_no_vf_or_absent_gives_none(self):
        write_vf_tree(self.root)
        self.assertIsNone(vfstats.vf_of(self.root, PF))
        self.assertIsNone(vfstats.vf_of(self.root, '0000:99:00.0'))


class NetlinkTest(test_base.TestCase):

    def test_the_vf_list_gives_each_vfs_bytes_and_packets(self):
        link = nla(3, b'ens1f0\0') + nla(22 | 0x8000, vf_info(
            0, 100, 200, 3, 4) + vf_info(1, 5000, 7000, 10, 20))
        self.assertEqual({0: (300, 7), 1: (12000, 30)},
                         vfstats.vf_traffic(link))

    def test_a_link_without_vfs_gives_nothing(self):
        self.assertEqual({}, vfstats.vf_traffic(nla(3, b'lo\0')))
        self.assertEqual({}, vfstats.vf_traffic(b''))

    def test_a_truncated_attribute_ends_the_walk(self):
        whole = nla(3, b'ens1f0\0') + nla(4, b'abcd')
        self.assertEqual([(3, b'ens1f0\0')],
                         vfstats.attribute_list(whole[:-2]))

    def test_this_kernel_answers_for_its_loopback_link(self):
        # The request and the walk of the answer, on a real kernel: the
        # loopback link's name comes back among its attributes, and it
        # has no VF.
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW,
                           socket.NETLINK_ROUTE) as sock:
            sock.bind((0, 0))
            sock.send(vfstats.request('lo'))
            link = vfstats.parse_reply(sock.recv(vfstats.RECEIVE_BYTES))
        self.assertEqual(b'lo\0', vfstats.attributes(link)[3])
        self.assertEqual({}, vfstats.query('lo'))

    def test_a_link_that_does_not_exist_is_the_kernels_enodev(self):
        exc = self.assertRaises(OSError, vfstats.query, 'nosuchpf0')
        self.assertEqual(errno.ENODEV, exc.errno)


class BackendVfTest(base.TestDriverHostTest):
    """HOME_FROM_NOVA with a VF of ens1f0; the PF's counters are given."""

    def domains(self):
        result = base.domains()
        result[1] = result[1].replace('</domain>', VF_INTERFACE + '</domain>')
        return result

    def setUp(self):
        super().setUp()
        write_vf_tree(self.root)
        self.clock = base.FakeClock()
        self.counters = {'ens1f0': {1: (0, 0), 0: (0, 0)}}
        self.asked = []
        self.backend = libvirt_backend.LibvirtBackend(
            self.connection, paths=settings.HostPaths(root=self.root),
            timing=settings.Timing(clock=self.clock, sleep=self.advance),
            helpers=settings.Helpers(vf_traffic=self.vf_traffic))

    def advance(self, seconds):
        self.clock.now += seconds

    def vf_traffic(self, pf):
        self.asked.append(pf)
        if pf not in self.counters:
            raise OSError(errno.ENODEV, 'No such device')
        return self.counters[pf]

    def io_rate(self, uuid=base.HOME_FROM_NOVA):
        return {i.uuid: i for i in self.backend.observe().instances}[
            uuid].io_rate

    def test_a_vf_guests_rate_comes_from_its_pfs_counters(self):
        self.assertEqual(0.0, self.io_rate())
        # 5 s later: VF 1 moved 3 MB in 1000 packets, VF 0 (another
        # guest's) much more, which is not this guest's.
        self.counters['ens1f0'] = {1: (3_000_000, 1000), 0: (9e9, 9e6)}
        self.clock.now += 5.0
        self.assertEqual(3_000_000 / 1500 / 5, self.io_rate())
        self.assertEqual(0.0, self.io_rate(base.NO_POLICY))

    def test_the_pf_is_asked_once_per_observation(self):
        self.io_rate()
        asked = len(self.asked)
        self.io_rate()
        self.assertEqual(asked + 1, len(self.asked))

    def test_a_pf_the_kernel_does_not_know_reads_as_silent(self):
        self.counters = {}
        self.assertEqual(0.0, self.io_rate())
        self.clock.now += 5.0
        self.assertEqual(0.0, self.io_rate())
