"""Discovery on a real kernel: nodes, distances, CPUs, the NIC's node."""

from nova_numa_policy.contracts import topology
from tests.host import base
from tests.labhost import kernel
from tests.labhost import topology as topology_mod


class DiscoveryTest(base.LabTestCase):
    """The agent's report against the kernel's sysfs and QEMU's shape."""

    def kernel_nodes(self):
        nodes = {}
        for node in range(self.TOPOLOGY.nodes):
            base_dir = f'/sys/devices/system/node/node{node}'
            nodes[node] = (
                kernel.cpulist(self.lab.read(f'{base_dir}/cpulist')),
                tuple(int(d) for d in
                      self.lab.read(f'{base_dir}/distance').split()))
        return nodes

    def test_nodes_cpus_and_distances_are_the_kernels(self):
        (report,), _, _ = self.run_agent(dry_run=True)
        kernel_nodes = self.kernel_nodes()
        reported = {n.id: (frozenset(n.cpus), tuple(n.distances))
                    for n in report.numa_nodes}
        self.assertEqual(kernel_nodes, reported)
        # And the kernel's are the machine QEMU was asked for.
        self.assertEqual(
            {node: (frozenset(self.TOPOLOGY.node_cpus(node)),
                    self.TOPOLOGY.distances[node])
             for node in range(self.TOPOLOGY.nodes)}, reported)

    def test_the_nic_is_on_its_expander_bridges_node(self):
        # A virtio NIC: its PCI function, the virtio device's parent,
        # holds the node.
        node = self.lab.run(
            'cat "$(readlink -f /sys/class/net/eth0/device)/../numa_node"'
        ).stdout.strip()
        self.assertEqual(str(self.TOPOLOGY.nic_node), node)
        (report,), _, _ = self.run_agent(dry_run=True)
        self.assertEqual([('eth0', self.TOPOLOGY.nic_node, 'physnet1')],
                         [(n.name, n.numa_node, n.physnet)
                          for n in report.nics])
        # The same list, handed over to the driver extension.
        self.assertEqual(
            [('eth0', self.TOPOLOGY.nic_node, 'physnet1')],
            [(n.name, n.numa_node, n.physnet) for n in
             topology.parse_uplinks(self.lab.read(base.UPLINKS_FILE))])

    def test_a_bridge_over_the_nic_is_on_the_nics_node(self):
        self.lab.run('ip link add br-lab type bridge && '
                     'ip link set eth0 master br-lab')
        self.addCleanup(self.lab.run, 'ip link del br-lab')
        (report,), _, _ = self.run_agent(dry_run=True,
                                         interfaces='physnet1:br-lab')
        self.assertEqual([('br-lab', self.TOPOLOGY.nic_node)],
                         [(n.name, n.numa_node) for n in report.nics])


class DiscoveryFourNodesTest(DiscoveryTest):
    TOPOLOGY = topology_mod.FOUR_NODES
