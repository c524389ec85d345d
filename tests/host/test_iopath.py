"""The I/O path on a real kernel: a NIC's vectors and a guest's threads.

The lab host's NIC (``eth0``, virtio-net behind an expander bridge on
node 1) raises three MSI-X vectors: its configuration's, ``input.0``'s
and ``output.0``'s. Before each test they are routed to CPU 0, on node
0, where a boot default or an operator may have left them. The guest is
flavored I/O-intensive (``hw:numa_io_intensity=high``), its vCPU kept
to node 1 and its interface plugged into a Linux bridge over ``eth0``;
the agent runs the ``iopath`` loop with its steering daemon, installed
as on a compute node.

What is checked is the kernel's word: ``/proc/irq/N`` (where a vector
may go and where it goes: on x86 a vector moves at its next interrupt,
so traffic comes first), the counts of ``/proc/interrupts`` growing on
those CPUs under traffic (pings from the lab host to QEMU's own user
network through the bridge: nothing leaves QEMU), the emulator threads'
``Cpus_allowed_list``, and irqbalance's own list of the IRQs it leaves
alone.

Under emulation libvirt opens no vhost-net device: it uses vhost only
for KVM domains (``qemuInterfaceOpenVhostNet`` returns at once for any
other), so a lab guest has no vhost worker. The agent's handling of
vhost workers is proven on /proc trees in the unit tests.

Emulated nodes are equally fast: this proves where the interrupts and
threads go, not what it gains (the simulator estimates that).
"""

from nova.virt.libvirt import config as vconfig

from nova_numa_policy.contracts import policy
from tests.host import base
from tests.labhost import deploy
from tests.labhost import domains
from tests.labhost import kernel
from tests.labhost import tools

NIC = 'eth0'
BRIDGE = 'br-lab'
# The lab host's address on QEMU's user network, and QEMU's own there.
LAB_ADDRESS = '10.0.2.15/24'
QEMU_ADDRESS = '10.0.2.2'
# Where the vectors are before each test: CPU 0, on node 0.
FOUND = '0'
PINGS = 20
WARM_UP_PINGS = 3
# irqbalance's rounds (one a second here) the steered vectors must
# survive, each after a forced rescan of its interrupt tree.
ROUNDS = 3


class _IoPathTest(base.LabTestCase):

    def setUp(self):
        super().setUp()
        # The guest's tap device: libvirt opens /dev/net/tun.
        self.lab.run('modprobe tun')
        self.lab.run(f'ip link add {BRIDGE} type bridge && '
                     f'ip link set {NIC} master {BRIDGE} && '
                     f'ip link set {NIC} up && ip link set {BRIDGE} up && '
                     f'ip addr add {LAB_ADDRESS} dev {BRIDGE}')
        self.addCleanup(self.lab.run, f'ip link del {BRIDGE}')
        for vector in self.vectors():
            self.lab.call('tests.labhost.inside:set_irq_affinity',
                          vector.irq, FOUND)
            self.addCleanup(self.lab.call,
                            'tests.labhost.inside:set_irq_affinity',
                            vector.irq, _cpus(vector.affinity))
        deploy.install(self.lab)

    def vectors(self):
        return kernel.vectors(self.lab.call(
            'tests.labhost.inside:nic_interrupts', NIC))

    def ping(self, count):
        self.lab.run(f'busybox ping -q -c {count} -i 0.05 {QEMU_ADDRESS}',
                     timeout=120)

    def traffic(self):
        """The vectors before and after pings through the bridge.

        A few pings first: on x86 a vector whose affinity changed is
        moved by its next interrupt, which the old CPU still takes.
        """
        self.ping(WARM_UP_PINGS)
        before = self.vectors()
        self.ping(PINGS)
        return before, self.vectors()

    @staticmethod
    def fired(before, after):
        """The vectors that delivered interrupts between the two reads.

        Only those say where the kernel delivers now: x86 moves a vector
        at its next interrupt, and the configuration vector of a virtio
        NIC fires at no packet.
        """
        counts = {v.irq: sum(v.counts.values()) for v in before}
        return [v for v in after if sum(v.counts.values()) > counts[v.irq]]

    def start_io_guest(self):
        """An I/O-intensive guest on the bridge, its vCPU on node 1.

        Started on every CPU, its emulator threads too, then its vCPU
        pinned to node 1's last CPU, as an earlier loop would have.
        """
        specs = {policy.POLICY_KEY: 'first-touch',
                 policy.IO_INTENSITY_KEY: 'high'}
        guest = domains.kept_by_the_driver(
            domains.nova_guest('instance-io', 1, 64, specs), specs,
            self.node_cpus(0, 1))
        interface = vconfig.LibvirtConfigGuestInterface()
        interface.net_type = 'bridge'
        interface.source_dev = BRIDGE
        interface.model = 'virtio'
        interface.mac_addr = '52:54:00:1a:b0:01'
        guest.add_device(interface)
        started = self.start_guest({}, xml=guest.to_xml())
        self.lab.call('tests.labhost.inside:pin_vcpu', started.name, 0,
                      max(self.node_cpus(1)))
        return started

    def agent_config(self, **options):
        return (super().agent_config(
            interfaces=f'physnet1:{BRIDGE}', io_path_steering=True,
            **options))

    def steer(self, periods=1):
        return self.run_agent(periods=periods, loops=('iopath',))

    def assert_delivered_on(self, cpus):
        """Every vector routed to one CPU of ``cpus``; delivered there.

        Returns the vectors after the traffic.
        """
        before, after = self.traffic()
        fired = self.fired(before, after)
        self.assertTrue(fired, after)
        for vector in after:
            self.assertEqual(1, len(vector.affinity), vector)
            self.assertLessEqual(vector.affinity, cpus, vector)
        for vector in fired:
            self.assertLessEqual(vector.effective, cpus, vector)
        # The traffic's interrupts landed there, and nowhere else.
        others = frozenset(after[0].counts) - cpus
        self.assertGreater(sum(v.delivered_on(cpus) for v in after),
                           sum(v.delivered_on(cpus) for v in before))
        self.assertEqual(sum(v.delivered_on(others) for v in before),
                         sum(v.delivered_on(others) for v in after))
        return after


class SteeringTest(_IoPathTest):

    def test_the_vectors_and_the_emulator_follow_the_guest_and_go_back(self):
        node1 = self.node_cpus(1)
        guest = self.start_io_guest()
        (report,), (actions,), log = self.steer()
        steered = [a for a in actions if a[1] == 'SteerIrq']
        self.assertEqual(len(self.vectors()), len(steered), actions)
        self.assertIn(['iopath', 'PinEmulator', guest.uuid],
                      [a[:3] for a in actions])
        # The kernel delivers every vector on node 1, one CPU each, the
        # vectors spread over the node's CPUs.
        vectors = self.assert_delivered_on(node1)
        self.assertEqual(node1, frozenset().union(
            *(v.affinity for v in vectors)))
        # The emulator threads run on node 1 too.
        for thread in self.view(guest).emulator_threads():
            self.assertLessEqual(thread.cpus_allowed, node1, thread)
        # The report says what was steered and why.
        (nic,) = report.nics
        self.assertEqual((BRIDGE, 1), (nic.name, nic.numa_node))
        self.assertIn('steered to node 1', nic.irq_steering)
        self.assertEqual(sorted(v.irq for v in vectors), sorted(nic.irqs))
        # The guest leaves: the vectors go back to what was found.
        self.lab.call('tests.labhost.inside:remove_domains')
        (report,), (actions,), log = self.steer()
        self.assertEqual(len(steered),
                         len([a for a in actions if a[1] == 'SteerIrq']),
                         actions)
        for vector in self.assert_delivered_on(frozenset({0})):
            self.assertEqual(frozenset({0}), vector.affinity, vector)
        self.assertIn('no I/O-intensive guest uses it',
                      report.nics[0].irq_steering)


class IrqbalanceTest(_IoPathTest):

    def start_irqbalance(self):
        irqbalance = self.lab.call('tests.labhost.inside:start_irqbalance',
                                   tools.irqbalance_command())
        self.addCleanup(self.lab.call, 'tests.labhost.inside:stop_irqbalance')
        return irqbalance['socket']

    def irqbalance(self, socket, command):
        return self.lab.call('tests.labhost.inside:irqbalance_says', socket,
                             command)

    def test_irqbalance_leaves_the_steered_vectors_alone_until_given_back(
            self):
        node1 = self.node_cpus(1)
        socket = self.start_irqbalance()
        # irqbalance places the vectors itself first.
        found = self.eventually(
            self.vectors, lambda vs: all(v.affinity != {0} for v in vs),
            'irqbalance placing the NIC\'s vectors', timeout=60)
        self.start_io_guest()
        self.steer()
        steered = self.assert_delivered_on(node1)
        irqs = frozenset(v.irq for v in steered)
        self.assertLessEqual(irqs, kernel.banned_irqs(
            self.irqbalance(socket, 'setup')))
        # Rounds of irqbalance, each after a rescan that re-places every
        # vector it balances: the steered ones stay where they are.
        for _ in range(ROUNDS):
            self.irqbalance(socket, 'settings cpus NULL')
            self.lab.run('sleep 1.5')
            self.assertEqual(
                {v.irq: v.affinity for v in steered},
                {v.irq: v.affinity for v in self.assert_delivered_on(node1)})
        # The guest leaves: the vectors are given back as found (the
        # kernel's side of that is SteeringTest's: irqbalance may place
        # them again at once) and irqbalance balances them again.
        self.lab.call('tests.labhost.inside:remove_domains')
        _, (actions,), _ = self.steer()
        restored = {a[3] for a in actions if a[1] == 'SteerIrq'}
        self.assertEqual(len(found), len(restored), actions)
        self.assertFalse(irqs & kernel.banned_irqs(
            self.irqbalance(socket, 'setup')))


def _cpus(cpus):
    return ','.join(str(cpu) for cpu in sorted(cpus))
