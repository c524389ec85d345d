"""Page moves on a real child process, privsep entry points in-process.

privsep's unit-test convention: with the context out of client mode the
entry points run in the test process (as root here, where the functional
tests run them in a real daemon with only CAP_SYS_NICE). Every check of
agent.privsep.trust runs as in the daemon: the children are guests to it
through pidfiles of a test directory.
"""

import errno
from unittest import mock

import fixtures

from agent.backend import pagemoves
from agent import privsep
from agent.privsep import pagemover
from agent.sensors import numamaps
from nova_numa_policy.contracts import errors
from tests import base as test_base
from tests.unit.agent import memchild


class InProcessPrivsep(fixtures.Fixture):
    """Entry points in this process (root), children as its guests."""

    def _setUp(self):
        privsep.pages.set_client_mode(False)
        self.addCleanup(privsep.pages.set_client_mode, True)
        # Root on purpose, as the daemon refuses to be by default.
        self.useFixture(fixtures.MonkeyPatch(
            'agent.privsep.check_not_root', lambda section=None: None))
        self.guests = self.useFixture(memchild.GuestPidDir())

    def child(self, size, **kwargs):
        return self.useFixture(memchild.MemoryChild(
            size, guests=self.guests, **kwargs))


class PrivilegedCallTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.child = self.useFixture(InProcessPrivsep()).child(16 << 20)

    def test_every_touched_page_is_on_node_0(self):
        nodes = pagemover.page_nodes(self.child.pid, self.child.address,
                                     self.child.pages, memchild.PAGE)
        self.assertEqual([0] * self.child.pages, nodes)

    def test_moving_a_window_reports_each_page_on_its_node(self):
        not_moved, data = pagemover.move_window(
            self.child.pid, self.child.address, 1024, memchild.PAGE, 0)
        self.assertEqual((0, [0] * 1024),
                         (not_moved, pagemover.statuses(data)))

    def test_an_address_outside_any_mapping_is_efault_per_page(self):
        self.assertEqual((0, [-errno.EFAULT]), pagemover.move_addresses(
            self.child.pid, [memchild.PAGE], 0))

    def test_a_node_without_memory_fails_the_call(self):
        exc = self.assertRaises(OSError, pagemover.move_window,
                                self.child.pid, self.child.address, 512,
                                memchild.PAGE, 7)
        self.assertEqual(errno.ENODEV, exc.errno)

    def test_reads_the_mappings(self):
        maps, numa_maps = pagemover.read_mappings(self.child.pid)
        vmas = {v.start: v for v in numamaps.parse(numa_maps, maps)}
        mine = vmas[self.child.address]
        self.assertEqual((self.child.pages, {0: self.child.pages}),
                         (mine.pages, mine.pages_per_node))


class PageMoverTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.child = self.useFixture(InProcessPrivsep()).child(16 << 20)
        self.mover = pagemoves.PageMover(batch_pages=1024)

    def test_a_whole_move_counts_the_mappings_source_pages(self):
        # One node here: node 0 to node 0 still walks every page in the
        # kernel, which reports each on node 0.
        result = self.mover.move(self.child.pid, 0, 0, 10 ** 9)
        self.assertGreaterEqual(result.moved, self.child.pages)
        self.assertEqual(0, result.failed)
        self.assertGreaterEqual(result.syscalls, self.child.pages // 1024)

    def test_a_budget_moves_only_that_many_pages(self):
        result = self.mover.move(self.child.pid, 0, 0, 1024)
        # A query and a move of the largest mapping's first window.
        self.assertEqual((1024, 0, 2), (result.moved, result.failed,
                                        result.syscalls))

    def test_a_budget_below_a_huge_page_leaves_whole_blocks_alone(self):
        # Each 2 MiB block of the child is all on node 0, so it may be one
        # transparent huge page, which would move whole: 512 pages for a
        # budget of 100.
        result = self.mover.move(self.child.pid, 0, 0, 100)
        self.assertEqual(0, result.moved)

    def test_a_second_run_changes_nothing(self):
        before = self.mover.mappings(self.child.pid)
        first = self.mover.move(self.child.pid, 0, 0, 10 ** 9)
        second = self.mover.move(self.child.pid, 0, 0, 10 ** 9)
        after = self.mover.mappings(self.child.pid)
        self.assertEqual(
            [v.pages_per_node for v in before if v.start ==
             self.child.address],
            [v.pages_per_node for v in after if v.start ==
             self.child.address])
        self.assertEqual((0, 0), (first.failed, second.failed))

    def test_a_bad_node_is_invalid_node(self):
        exc = self.assertRaises(pagemoves.InvalidNode, self.mover.move,
                                self.child.pid, 0, 7, 1024)
        self.assertIn('node 7 is not a memory node', str(exc))

    def test_a_vanished_process_is_process_gone(self):
        pid = self.child.pid
        self.child.stop()
        exc = self.assertRaises(pagemoves.ProcessGone, self.mover.move, pid,
                                0, 0, 100)
        self.assertIsInstance(exc, errors.DomainGone)

    def test_a_process_gone_between_plan_and_move(self):
        pid = self.child.pid
        real = pagemover.read_mappings(pid)
        self.child.stop()
        with mock.patch.object(pagemover, 'read_mappings',
                               return_value=real):
            self.assertRaises(pagemoves.ProcessGone, self.mover.move, pid,
                              0, 0, 100)


class SupportedTest(test_base.TestCase):

    def test_this_kernel_has_move_pages(self):
        self.assertTrue(pagemover.supported())

    def test_an_unknown_machine_has_none(self):
        with mock.patch('platform.machine', return_value='sparc64'):
            self.assertFalse(pagemover.supported())
