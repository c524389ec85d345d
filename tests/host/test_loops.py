"""The rebalancing loops' actions carried out on a real kernel.

The agent runs as nova and moves pages through its privsep daemon
started as deployed: ``sudo privsep-helper`` with the project's
sudoers rule, dropping to QEMU's user and group with CAP_SYS_NICE only.
"""

from nova_numa_policy.contracts import policy
from tests.host import base
from tests.labhost import domains
from tests.labhost import kernel

MEMORY_MB = 128
IO_SPECS = {policy.POLICY_KEY: 'first-touch',
            policy.IO_INTENSITY_KEY: 'high'}


class _IoGuestOnNode0(base.LabTestCase):
    """An I/O-intensive guest on node 0, the NIC on node 1."""

    nova_bound = False

    def start_on_node0(self):
        """vCPUs and memory on node 0; its nodeset still allows node 1."""
        # One vCPU: vNUIOA keeps a node's vCPUs to 80 % of its CPUs (two
        # here).
        guest = domains.nova_guest('instance-io', 1, MEMORY_MB, IO_SPECS)
        if self.nova_bound:
            # nova's own bound: [compute] cpu_shared_set is node 0.
            guest.cpuset = set(self.TOPOLOGY.node_cpus(0))
        else:
            domains.kept_by_the_driver(guest, IO_SPECS,
                                       self.TOPOLOGY.node_cpus(0))
        xml = guest.to_xml().replace(
            '</vcpu>', "</vcpu><numatune><memory mode='restrictive' "
                       "nodeset='0-1'/></numatune>")
        started = self.start_guest({}, xml=xml)
        for nodeset in ('0', '0-1'):
            self.set_nodeset(started.name, nodeset)
        return started

    def agent_config(self, **options):
        # Appended to the [numa_policy_loops] section, which ends the base
        # configuration; no pin count: act in the first period.
        return (super().agent_config(**options)
                + f'pages_per_second = {self.pages_per_second}\n'
                  f'hysteresis_pin_count = 0\n' + base.PRIVILEGED)

    def balancing(self, on):
        """Set kernel.numa_balancing for this test (see each test)."""
        self.lab.run(f'echo {int(on)} > /proc/sys/kernel/numa_balancing')
        self.addCleanup(self.lab.run,
                        'echo 1 > /proc/sys/kernel/numa_balancing')


class VnuioaPageMoveTest(_IoGuestOnNode0):
    """The driver kept the guest on node 0; nova allowed every CPU."""

    def test_the_loops_page_budget_bounds_what_the_kernel_moved(self):
        # Without the kernel's NUMA balancing every page is movable.
        self.balancing(False)
        self.pages_per_second = 1000
        budget = self.pages_per_second * 5  # period = 5 s
        guest = self.start_on_node0()
        # Counted once the guest stops touching new pages: the count
        # after the moves must be of the same pages.
        before = self.settled_view(guest).ram.pages
        self.assertEqual({0}, {n for n, p in before.items() if p})
        (report,), (actions,), log = self.run_agent(
            page_migration=True, loops=('vnuioa',))
        after = self.view(guest).ram.pages
        moved = after.get(1, 0)
        # Asked for, within the budget, and carried out by the kernel.
        self.assertIn(['vnuioa', 'MovePages', guest.uuid],
                      [a[:3] for a in actions])
        self.assertGreater(moved, 0.9 * budget, (before, after))
        self.assertLessEqual(moved, budget, (before, after))
        self.assertEqual(sum(before.values()), sum(after.values()))
        # Its vCPU now runs near the NIC, as the kernel restricts it.
        for thread in self.view(guest).vcpu_threads():
            self.assertEqual(self.node_cpus(1), thread.cpus_allowed)
        # And the agent read the guest's memory through its daemon.
        reported = self.reported(report, guest)
        self.assertEqual({'0', '1'}, set(reported.memory_mb_per_node))

    def test_pages_marked_by_numa_balancing_are_skipped_and_said(self):
        # On this kernel (6.1) move_pages neither reports nor moves a page
        # the kernel's NUMA balancing has marked for a hinting fault
        # (-EFAULT) until the guest touches it again; an idle guest's
        # memory stays marked. The agent must say so, not count them.
        self.balancing(True)
        self.pages_per_second = 1000
        budget = self.pages_per_second * 5
        guest = self.start_on_node0()
        self.lab.run('sleep 5')  # a balancing scan or more
        (report,), (actions,), log = self.run_agent(
            page_migration=True, loops=('vnuioa',))
        moved = self.view(guest).ram.pages.get(1, 0)
        self.assertLessEqual(moved, budget)
        if moved < 0.9 * budget:
            self.assertRegex(log, r'\d+ pages not moved now: the kernel\'s '
                                  r'NUMA balancing has marked them')

    def test_periods_move_memory_until_the_remote_share_is_small(self):
        # vNUIOA moves memory while its remote node holds more than twice
        # what the chosen node holds: a budget per period, then nothing.
        self.balancing(False)
        self.pages_per_second = 1000
        budget = self.pages_per_second * 5
        guest = self.start_on_node0()
        total = sum(self.settled_view(guest).ram.pages.values())
        periods = -(-total // (2 * budget)) + 1
        reports, actions, log = self.run_agent(
            periods=periods, page_migration=True, loops=('vnuioa',))
        moves = ['MovePages' in [a[1] for a in period]
                 for period in actions]
        self.assertEqual(False, moves[-1], actions)
        view = self.view(guest)
        # vNUIOA weighs the whole process (guest RAM, QEMU's own memory):
        # it stopped once node 0 held at most twice what node 1 holds.
        process = {}
        for mapping in kernel.mappings(view.numa_maps):
            for node, pages in mapping.pages.items():
                process[node] = process.get(node, 0) + pages
        self.assertLessEqual(process[0], 2 * process[1], process)
        self.assertLessEqual(view.ram.pages.get(1, 0),
                             moves.count(True) * budget)
        self.assertGreater(moves.count(True), 1)


class NovaBoundTest(_IoGuestOnNode0):
    """The same guest, but nova itself allows it only node 0's CPUs."""

    nova_bound = True

    def test_no_pin_leaves_the_cpus_nova_allows(self):
        self.balancing(False)
        self.pages_per_second = 1000
        guest = self.start_on_node0()
        (report,), (actions,), log = self.run_agent(
            page_migration=True, loops=('vnuioa',))
        # VnuioaPageMoveTest's guest, free of nova's bound, went to the
        # NIC's node 1; this one has nowhere better it may go.
        self.assertEqual([], [a for a in actions if a[2] == guest.uuid])
        for thread in self.view(guest).vcpu_threads():
            self.assertEqual(self.node_cpus(0), thread.cpus_allowed)
        self.assertEqual({0}, {n for n, p in
                               self.view(guest).ram.pages.items() if p})
