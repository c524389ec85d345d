"""A lab host with a lower memory tier, as its own kernel tiers it.

``TIERED_NODES``: two CPU nodes and a memory-only node 2 made of an
emulated NVDIMM, which the lab host gives the kernel as system RAM
through dax/kmem at boot (tests/labhost/slowmem.sh). Debian 12's kernel
6.1 then puts node 2 in a memory tier of its own below the CPU nodes'.
This proves the mechanism the tiers build on, not a speed: the
emulated NVDIMM is as fast as the emulated DRAM.
"""

import re

from tests.host import base
from tests.labhost import kernel
from tests.labhost import topology as topology_mod


def _tier_rank(name):
    """A tier directory's number: smaller is faster (the kernel's ABI)."""
    return int(re.fullmatch(r'memory_tier(\d+)', name).group(1))


class MemoryTiersTest(base.LabTestCase):

    TOPOLOGY = topology_mod.TIERED_NODES

    def test_the_memory_only_node_is_a_lower_tier(self):
        seen = self.lab.call('tests.labhost.inside:memory_tiers')
        self.addDetail('memory-tiers', base.text(repr(seen)))
        slow = self.TOPOLOGY.slow_node
        cpu_nodes = set(range(self.TOPOLOGY.nodes))
        tiers = sorted((_tier_rank(name), kernel.cpulist(nodes))
                       for name, nodes in seen['tiers'].items())
        # The CPU nodes' DRAM on top, the NVDIMM's node alone below.
        self.assertEqual([cpu_nodes, {slow}], [nodes for _, nodes in tiers])
        self.assertEqual(cpu_nodes, kernel.cpulist(seen['has_cpu']))
        self.assertEqual(cpu_nodes | {slow},
                         kernel.cpulist(seen['has_memory']))
        # Its memory online, most of the NVDIMM (the rest holds its
        # pages' memory map, and kmem takes whole 128 MiB blocks).
        total_kb = int(re.search(r'MemTotal:\s+(\d+) kB',
                                 seen['nodes'][str(slow)]['meminfo'])[1])
        self.assertGreaterEqual(total_kb, 256 * 1024)
        self.assertLessEqual(total_kb, self.TOPOLOGY.slow_memory_mb * 1024)
        # The SLIT as QEMU wrote it.
        for node in cpu_nodes:
            row = seen['nodes'][str(node)]['distance'].split()
            self.assertEqual(self.TOPOLOGY.slow_distance, int(row[slow]))
        self.assertIn(seen['demotion_enabled'].strip(), ('true', 'false'))

    def test_the_agent_reports_the_memory_only_node_without_cpus(self):
        (report,), _, log = self.run_agent(dry_run=True)
        self.assertNotIn('Traceback', log)
        nodes = {n.id: n for n in report.numa_nodes}
        slow = self.TOPOLOGY.slow_node
        self.assertEqual(set(range(self.TOPOLOGY.nodes)) | {slow},
                         set(nodes))
        self.assertEqual([], list(nodes[slow].cpus))
        self.assertGreaterEqual(nodes[slow].memory_total_mb, 256)
        self.assertEqual(
            [self.TOPOLOGY.slow_distance] * self.TOPOLOGY.nodes
            + [topology_mod.LOCAL_DISTANCE], list(nodes[slow].distances))
        # The kernel's tiers as ranks: memory_tier4's CPU nodes on top,
        # memory_tier22's node 2 the next; demotion as the kernel says.
        self.assertEqual(
            dict.fromkeys(range(self.TOPOLOGY.nodes), 0) | {slow: 1},
            {node_id: node.memory_tier for node_id, node in nodes.items()})
        self.assertIn(report.memory_demotion, (True, False))

    def test_home_never_chooses_the_memory_only_node(self):
        # Today's rule, tier-blind otherwise: a home is where a guest's
        # vCPUs can run, so never a node without CPUs.
        guest = self.start_guest({'hw:numa_policy': 'home'}, vcpus=2,
                                 memory_mb=128)
        (report,), _, log = self.run_agent()
        self.assertNotIn('Traceback', log)
        self.assertNotIn(self.TOPOLOGY.slow_node, guest.plan.tune.nodes)
        view = self.view(guest)
        self.assert_kernel_follows(view, guest.plan.tune)
        self.assertEqual(0, view.ram.pages.get(self.TOPOLOGY.slow_node, 0))
        self.assertEqual('home', self.reported(report, guest).applied_policy)
