"""A lab host with a lower memory tier, as its own kernel tiers it.

``TIERED_NODES``: two CPU nodes and a memory-only node 2 made of an
emulated NVDIMM, which the lab host gives the kernel as system RAM
through dax/kmem at boot (tests/labhost/slowmem.sh). Debian 12's kernel
6.1 then puts node 2 in a memory tier of its own below the CPU nodes'.
This proves the mechanism the tiers build on, not a speed: the
emulated NVDIMM is as fast as the emulated DRAM.
"""

import os
import re

from tests.host import base
from tests.labhost import kernel
from tests.labhost import machine
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


HOG = os.path.join(machine.PROJECT, 'tests', 'labhost', 'hog.py')
STOP_HOG = "pkill -f '[l]ab-hog' || true"
DEMOTION = '/sys/kernel/mm/numa/demotion_enabled'
# Beyond the bound node's free memory, what the hog asks for: the kernel
# must reclaim about this much on the node to make room.
PRESSURE_MB = 200
HOG_TIMEOUT = 300


class DemotionTest(base.LabTestCase):
    """What the kernel's demotion does to a guest bound to a CPU node."""

    TOPOLOGY = topology_mod.TIERED_NODES

    def demotion_on(self):
        was = self.lab.call('tests.labhost.inside:read_file', DEMOTION)
        self.lab.run(f'echo true > {DEMOTION}')
        self.addCleanup(self.lab.run, f'echo {was.strip()} > {DEMOTION}')

    def vmstat(self):
        text = self.lab.call('tests.labhost.inside:read_file', '/proc/vmstat')
        return {name: int(value) for name, value in
                (line.split() for line in text.splitlines())
                if name.startswith('pgdemote')}

    def node_free_mb(self, node):
        seen = self.lab.call('tests.labhost.inside:memory_tiers')
        return int(re.search(r'MemFree:\s+(\d+) kB',
                             seen['nodes'][str(node)]['meminfo'])[1]) // 1024

    def press(self, node, megabytes):
        """A hog bound to ``node`` touching ``megabytes``, until the end."""
        # Not named like the hog: STOP_HOG's pattern would match the rm.
        out = f'/tmp/pressure-{node}.out'
        self.lab.run(f'python3 -S {HOG} lab-hog {node} {megabytes} '
                     f'> {out} 2>&1 &')
        self.addCleanup(self.lab.run, f'{STOP_HOG}; rm -f {out}')
        self.eventually(
            lambda: self.lab.run(f'cat {out}', check=False).stdout,
            lambda text: 'filled' in text or 'Error' in text,
            f'the hog filled {megabytes} MB on node {node}', HOG_TIMEOUT)

    def pressed(self, guest):
        """The guest's view once its home node was pressed; demotions.

        A hog bound to the node asks for all its free memory and
        ``PRESSURE_MB`` more; returns the guest's view before and after,
        and the kernel's demotion counters' rise meanwhile.
        """
        (home,) = guest.plan.tune.nodes
        before = self.settled_view(guest)
        counted = self.vmstat()
        self.press(home, self.node_free_mb(home) + PRESSURE_MB)
        after = self.view(guest)
        demoted = {k: v - counted.get(k, 0)
                   for k, v in self.vmstat().items()}
        self.addDetail('pressed', base.text(repr({
            'home': home, 'tune': guest.plan.tune,
            'pages_before': before.ram.pages, 'pages_after': after.ram.pages,
            'policy': after.ram.policy, 'cpuset_mems': after.cpuset_mems,
            'pgdemote': demoted})))
        return before, after, demoted

    def test_the_kernel_demotes_a_guest_bound_to_a_cpu_node(self):
        """Neither the guest's mbind nor its cgroup's cpuset.mems hold.

        Linux 6.1's reclaim demotes a page to the next tier's node
        whatever the process's memory policy and cpuset say (seen: 86 %
        of a 256 MB guest bound to node 0 moved to node 2 by kswapd).
        A guest that must stay on the top tier is held there by the
        agent, not by its binding.
        """
        self.demotion_on()
        guest = self.start_guest({'hw:numa_policy': 'home'}, vcpus=1,
                                 memory_mb=256)
        (home,) = guest.plan.tune.nodes
        slow = self.TOPOLOGY.slow_node
        before, after, demoted = self.pressed(guest)
        self.assertEqual({home}, {n for n, p in before.ram.pages.items()
                                  if p})
        # Bound as the driver wrote it, by the memory policy and by the
        # cpuset of the guest's vCPU and emulator cgroups.
        self.assertEqual(('bind', {home}),
                         kernel.memory_policy(after.ram.policy))
        self.assertEqual({home}, {node for path, mems in
                                  after.cpuset_mems.items() if mems
                                  for node in kernel.cpulist(mems)})
        self.assertGreater(after.ram.pages.get(slow, 0), 0, after.ram.pages)
        self.assertGreater(sum(demoted.values()), 0, demoted)

    def test_the_agent_moves_a_top_guests_demoted_pages_back(self):
        """``top``: what the kernel demoted goes back to the top tier.

        The same pressure demotes the guest's pages; once it is gone the
        agent, in one period, finds them on the lower tier's node and
        moves them back to the guest's node, as the kernel then shows.
        """
        self.demotion_on()
        guest = self.start_guest({'hw:numa_policy': 'home',
                                  'hw:numa_memory_tiers': 'top'},
                                 vcpus=1, memory_mb=256)
        (home,) = guest.plan.tune.nodes
        slow = self.TOPOLOGY.slow_node
        _, demoted, _ = self.pressed(guest)
        self.assertGreater(demoted.ram.pages.get(slow, 0), 0,
                           demoted.ram.pages)
        self.lab.run(STOP_HOG)
        (report,), _, log = self.run_agent(page_migration=True)
        self.assertNotIn('Traceback', log)
        self.assertIn(f'on lower-tier node {slow} moved back to node {home}',
                      log)
        back = self.eventually(
            lambda: self.view(guest).ram.pages,
            lambda pages: pages.get(slow, 0) == 0,
            f'no page of the guest left on node {slow}', 60)
        self.addDetail('pages-back', base.text(repr(back)))
        # Every page it had is on its home node again.
        self.assertEqual(sum(demoted.ram.pages.values()), back.get(home, 0))
        self.assertEqual('applied',
                         self.reported(report, guest).enforcement)
