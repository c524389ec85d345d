"""SR-IOV VFs on a real kernel: how the agent finds a guest's VF and reads it.

The sriov-nodes lab host's NIC is QEMU's igb (an Intel 82576 with
SR-IOV) on node 1, behind an emulated IOMMU; Debian 12's QEMU (7.2) has
no such NIC, so this lab host boots in a newer one
(tests/labhost/emulator.py), while the domains inside still run in
Debian 12's. The kernel's igb driver makes VFs on request, and a domain
takes one as nova's ``vnic_type=direct`` ports do: an ``<interface
type='hostdev'>`` that libvirt binds to vfio-pci.

The igb driver keeps no traffic counters per VF (it has no
``ndo_get_vf_stats``), so the kernel reports zeros for each VF. These
tests prove how a guest's VF is found, that its PF is asked, and that
the kernel's answer is read as iproute2 reads it; not that any VF's
traffic is counted: that needs a NIC whose driver counts it (mlx5, ice,
i40e, bnxt), none of which QEMU emulates.
"""

import json

from tests.host import base
from tests.labhost import domains
from tests.labhost import topology as topology_mod

VFS = 2
GUEST_VF = 1
GUEST_MAC = '52:54:00:5a:1e:01'


def _counter(stats, name):
    # iproute2 6.1 names the transmit side's counters tx_bytes and
    # tx_packets in its JSON, the receive side's bytes and packets.
    return stats[name] if name in stats else stats[f'tx_{name}']


def iproute2_traffic(vfinfo):
    """{VF index: [bytes, packets]} as iproute2 reads the kernel's."""
    traffic = {}
    for vf in vfinfo:
        rx, tx = vf['stats']['rx'], vf['stats']['tx']
        traffic[str(vf['vf'])] = [
            _counter(rx, 'bytes') + _counter(tx, 'bytes'),
            _counter(rx, 'packets') + _counter(tx, 'packets')]
    return traffic


class SriovTest(base.LabTestCase):
    TOPOLOGY = topology_mod.SRIOV_NODES

    def setUp(self):
        super().setUp()
        self.nic = self.lab.call('tests.labhost.inside:prepare_sriov', VFS,
                                 timeout=180)
        # The PF's link and its VFs stay for the next test.
        self.lab_fixture.keep_as_settled()

    def sriov_view(self):
        view = self.lab.call('tests.labhost.inside:sriov_view',
                             self.nic['pf_address'])
        self.addDetail('sriov-view', base.text(repr(view)))
        return view

    def start_vf_guest(self, vf_address):
        guest = domains.nova_guest('instance-vf', 1, 64, {})
        guest.add_device(domains.vf_interface(GUEST_MAC, vf_address))
        return self.start_guest({}, xml=guest.to_xml())

    def test_each_vf_maps_to_its_pf_and_index_as_the_kernel_links_them(self):
        view = self.sriov_view()
        # What the kernel says: the PF's virtfn<N> links.
        self.assertEqual({str(n) for n in range(VFS)}, set(view['links']))
        for index, address in view['links'].items():
            self.assertEqual([self.nic['pf'], int(index)],
                             view['mapped'][address], address)
        self.assertIsNone(view['mapped'][self.nic['pf_address']])
        # The kernel's answer for the PF, read by the agent's own request,
        # is iproute2's: every VF, with the driver's (zero) counters.
        self.assertEqual(iproute2_traffic(view['iproute2']), view['agent'])
        self.assertEqual(set(view['links']), set(view['agent']))

    def test_every_device_spec_form_names_the_pf(self):
        # The ids as this kernel reads them off the emulated 82576.
        pf = self.nic['pf_address']
        vf = self.sriov_view()['links'][str(GUEST_VF)]
        ids = {address: [self.lab.read(f'/sys/bus/pci/devices/{address}/'
                                       f'{name}').strip()[2:]
                         for name in ('vendor', 'device')]
               for address in (pf, vf)}
        (vendor, vf_product), pf_product = ids[vf], ids[pf][1]
        self.assertNotEqual(pf_product, vf_product)
        domain, bus, rest = pf.split(':')
        slot = rest.split('.')[0]
        specs = {
            'the VFs by vendor and product':
                {'vendor_id': vendor, 'product_id': vf_product},
            'the PF by vendor and product':
                {'vendor_id': vendor, 'product_id': pf_product},
            'an address pattern': {'address': f'*:{bus}:{slot}.*'},
            'an address of regular expressions':
                {'address': {'domain': domain, 'bus': bus, 'slot': slot,
                             'function': '[0-7]'}},
            'the PF by name': {'devname': self.nic['pf']},
            'a VF by address': {'address': vf},
        }
        for form, spec in specs.items():
            text = json.dumps(dict(spec, physical_network='physnet1'))
            self.assertEqual(
                [['physnet1', pf]],
                self.lab.call('tests.labhost.inside:sriov_uplinks', [text]),
                form)
        # Without a physnet, no uplink.
        self.assertEqual([], self.lab.call(
            'tests.labhost.inside:sriov_uplinks',
            [json.dumps(specs['the VFs by vendor and product'])]))

    def test_a_guest_on_a_vf_has_its_pf_asked_and_is_left_alone(self):
        vf_address = self.sriov_view()['links'][str(GUEST_VF)]
        guest = self.start_vf_guest(vf_address)
        # What the kernel says: libvirt gave the guest that VF (bound to
        # vfio-pci, its QEMU holding the VF's IOMMU group open), and set
        # the guest's MAC on that VF of the PF.
        driver = self.lab.run(
            f'readlink -f /sys/bus/pci/devices/{vf_address}/driver').stdout
        self.assertEqual('vfio-pci', driver.strip().rsplit('/', 1)[-1])
        group = self.lab.run(
            f'readlink /sys/bus/pci/devices/{vf_address}/iommu_group'
        ).stdout.strip().rsplit('/', 1)[-1]
        held = self.lab.run(f'ls -l /proc/{guest.pid}/fd').stdout
        self.assertIn(f'/dev/vfio/{group}', held)
        macs = {str(vf['vf']): vf.get('address')
                for vf in self.sriov_view()['iproute2']}
        self.assertEqual(GUEST_MAC, macs[str(GUEST_VF)])

        seen = self.lab.call('tests.labhost.inside:observe_with_vf_reads',
                             guest.uuid, timeout=180)
        self.addDetail('observed', base.text(repr(seen)))
        # The agent found the guest's VF and asked its PF, once.
        self.assertEqual([self.nic['pf']], list(seen['asked']))
        self.assertIn(str(GUEST_VF), seen['asked'][self.nic['pf']])
        # Zero counters read as a silent guest, and a guest with a
        # passthrough device is not the loops' to move.
        self.assertEqual(0.0, seen['io_rate'])
        self.assertIn('passthrough', seen['hands_off_reason'])
