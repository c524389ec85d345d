"""One reading of a host's nodes for the agent and the driver extension.

On a host numbering its nodes 0, 1, 8 and 9, as some firmware does, the
agent (libvirt capabilities, or sysfs where they list no nodes) and the
driver extension (the same capabilities) must build the same nodes, with
distance rows in node order that HostTopology.distance reads by id.
"""

import os

import fixtures

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import topology
from nova_numa_policy.decisions import enforcement
from nova_numa_policy.virt import driver

from agent.sensors import discovery
from agent.sensors import sysfs
from tests import base as test_base

IDS = (0, 1, 8, 9)
# Two sockets of two nodes each: 0-1 and 8-9 near, across sockets far.
SLIT = {(a, b): 10 if a == b else 12 if (a < 8) == (b < 8) else 30
        for a in IDS for b in IDS}


def cpus(node):
    return (2 * IDS.index(node), 2 * IDS.index(node) + 1)


def capabilities(with_distances=True):
    cells = []
    for node in IDS:
        siblings = ''.join(f"<sibling id='{other}' "
                           f"value='{SLIT[node, other]}'/>" for other in IDS)
        cpu_list = ''.join(f"<cpu id='{cpu}'/>" for cpu in cpus(node))
        cells.append(
            f"<cell id='{node}'><memory unit='KiB'>2097152</memory>"
            + (f'<distances>{siblings}</distances>' if with_distances
               else '')
            + f"<cpus num='2'>{cpu_list}</cpus></cell>")
    return ('<capabilities><host><topology><cells num="4">'
            + ''.join(cells) + '</cells></topology></host></capabilities>')


def sysfs_tree(root):
    for node in IDS:
        base = os.path.join(root, sysfs.NODE_DIR, f'node{node}')
        os.makedirs(base)
        files = {
            'cpulist': ','.join(map(str, cpus(node))),
            'meminfo': f'Node {node} MemTotal: 2097152 kB\n',
            'distance': ' '.join(str(SLIT[node, o]) for o in IDS),
        }
        for name, text in files.items():
            with open(os.path.join(base, name), 'w') as f:
                f.write(text + '\n')
    return root


class SparseNodeIdsTest(test_base.TestCase):

    def test_distances_are_read_by_id(self):
        host = backend.HostTopology(
            nodes=topology.nodes_from_capabilities(capabilities()))
        self.assertEqual(IDS, tuple(n.id for n in host.nodes))
        for a in IDS:
            for b in IDS:
                self.assertEqual(SLIT[a, b], host.distance(a, b), (a, b))
        self.assertEqual((4, 5), host.node(8).cpus)

    def test_agent_driver_and_sysfs_build_the_same_nodes(self):
        caps = capabilities()
        root = sysfs_tree(self.useFixture(fixtures.TempDir()).path)
        by_driver = driver.host_topology(caps).nodes
        self.assertEqual(by_driver,
                         discovery.discover(caps, root, {}, {}).nodes)
        # sysfs alone, where libvirt lists no cells.
        self.assertEqual(by_driver, discovery.discover(
            '<capabilities/>', root, {}, {}).nodes)

    def test_missing_distances_are_the_slit_defaults(self):
        host = backend.HostTopology(
            nodes=topology.nodes_from_capabilities(capabilities(False)))
        self.assertEqual((10, 20), (host.distance(8, 8),
                                    host.distance(1, 9)))

    def test_a_nic_near_node_nine_draws_the_guest_there(self):
        host = driver.host_topology(capabilities(), topology.physnet_nics(
            {'physnet1': [9]}))
        tune = enforcement.boot_tune(
            policy.resolve({policy.POLICY_KEY: 'first-touch',
                            policy.NIC_LOCALITY_KEY: 'required'}),
            host, memory_mb=512, vcpus=2)
        self.assertEqual(('preferred', frozenset({9}), frozenset({6, 7})),
                         (tune.mode, tune.nodes, tune.cpus))

    def test_with_node_nine_busy_the_guest_goes_to_its_neighbour(self):
        host = driver.host_topology(capabilities(), topology.physnet_nics(
            {'physnet1': [9]}))
        busy_nine = tuple(backend.NodeUsage(n, 0.95 if n == 9 else 0.0,
                                            2048) for n in IDS)
        tune = enforcement.boot_tune(
            policy.resolve({policy.POLICY_KEY: 'first-touch',
                            policy.NIC_LOCALITY_KEY: 'preferred'}),
            host, busy_nine, memory_mb=512, vcpus=1)
        # Node 8 is node 9's socket neighbour (12), nodes 0-1 are far (30).
        self.assertEqual(frozenset({8}), tune.nodes)
