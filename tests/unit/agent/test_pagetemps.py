"""Which pages a guest wrote (soft-dirty), and moves by it: pure and faked.

:mod:`agent.backend.pagetemps` through a fake page daemon, the pure
:func:`agent.privsep.pagemover.written_states`, and the kernel's own
promotion as :mod:`nova_numa_policy.contracts.memtiers` reads it.
"""

import errno

import numpy

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import memtiers as tier_files

from agent.backend import pagetemps
from agent.privsep import pagemover
from agent.sensors import numamaps
from tests import base as test_base

PAGE = 4096
# 2 MiB aligned: select() then takes each page of a window on its own.
START = 0x7f0000000000
NP, NW, W = pagetemps.NOT_PRESENT, pagetemps.NOT_WRITTEN, pagetemps.WRITTEN


def vma(pages=8, name=None, page_kb=4, resident=None, huge=False,
        start=START, end=True):
    return numamaps.Vma(
        start=start, end=start + pages * page_kb * 1024 if end else None,
        policy='default', page_kb=page_kb,
        pages_per_node={0: pages} if resident is None else resident,
        name=name, huge=huge)


def address(k):
    return START + k * PAGE


class WindowsTest(test_base.TestCase):

    def test_a_resident_anonymous_mapping_is_one_window(self):
        self.assertEqual([(START, 8)], pagetemps.windows([vma()]))

    def test_a_mapping_is_split_by_the_batch(self):
        self.assertEqual([(START, 4), (address(4), 4), (address(8), 2)],
                         pagetemps.windows([vma(pages=10)], batch_pages=4))

    def test_heap_and_memfd_guest_ram_are_taken(self):
        self.assertEqual(
            [(START, 2), (START + (1 << 20), 3)],
            pagetemps.windows([vma(pages=2, name='heap'),
                               vma(pages=3, name='/memfd:pc.ram',
                                   start=START + (1 << 20))]))

    def test_shared_files_are_never_taken(self):
        self.assertEqual([], pagetemps.windows(
            [vma(name='/usr/lib/x86_64-linux-gnu/libc.so.6')]))

    def test_hugetlbfs_pages_are_not_measured(self):
        self.assertEqual([], pagetemps.windows(
            [vma(pages=2, page_kb=2048, huge=True)]))

    def test_mappings_without_resident_pages_are_skipped(self):
        self.assertEqual([], pagetemps.windows(
            [vma(resident={}), vma(resident={0: 0, 1: 0})]))

    def test_a_mapping_whose_extent_is_unknown_is_skipped(self):
        self.assertEqual([], pagetemps.windows([vma(end=False)]))


class PureCountsTest(test_base.TestCase):

    def test_written_pages_are_counted_per_node(self):
        nodes = [0, 0, 1, -errno.ENOENT, 1, 2, 2]
        states = bytes([W, NW, W, W, NP, W, W])
        self.assertEqual({0: 1, 1: 1, 2: 2},
                         pagetemps.written_per_node(nodes, states))

    def test_a_window_with_nothing_written_counts_nothing(self):
        self.assertEqual({}, pagetemps.written_per_node(
            [0, 1], bytes([NW, NP])))

    def test_matching_hides_every_page_of_another_state(self):
        self.assertEqual(
            [0, -1, -1, -errno.ENOENT],
            pagetemps.matching([0, 1, 0, -errno.ENOENT],
                               bytes([W, NW, NP, W]), W))

    def test_matching_keeps_the_unwritten_for_a_cold_pick(self):
        self.assertEqual([-1, 1, -1], pagetemps.matching(
            [0, 1, 2], bytes([W, NW, NP]), NW))


class WrittenStatesTest(test_base.TestCase):

    def test_present_and_soft_dirty_bits_give_one_byte_per_page(self):
        present, dirty = 1 << 63, 1 << 55
        entries = numpy.array(
            [0, present, present | dirty, dirty, present | 0x1234,
             present | dirty | 0x1234], dtype=numpy.uint64)
        self.assertEqual(bytes([NP, NW, W, NP, NW, W]),
                         pagemover.written_states(entries))

    def test_the_daemon_and_the_agent_agree_on_the_states(self):
        self.assertEqual(
            (pagemover.NOT_PRESENT, pagemover.NOT_WRITTEN, pagemover.WRITTEN),
            (NP, NW, W))


# (node, state) of the 8 pages of the guest's one mapping; page 7 absent.
PAGES = [(0, W), (0, NW), (2, W), (0, NW), (0, W), (1, W), (0, NW),
         (-errno.ENOENT, NP)]


class FakeDaemon:
    """The page daemon's entry points over ``pages`` [(node, state)]."""

    def __init__(self, pages, not_moved=0):
        self.nodes = {address(k): node for k, (node, _) in enumerate(pages)}
        self.written = {address(k): s for k, (_, s) in enumerate(pages)}
        self.states = dict(self.written)
        self.not_moved = not_moved
        self.cleared = []
        self.moves = []
        self.queries = 0

    def page_nodes(self, pid, start, count, page_size):
        self.queries += 1
        return [self.nodes[start + k * page_size] for k in range(count)]

    def page_writes(self, pid, start, count, page_size):
        return bytes(self.states[start + k * page_size]
                     for k in range(count))

    def write_again(self):
        """The guest writes the pages ``pages`` said were written."""
        self.states = dict(self.written)

    def clear_writes(self, pid):
        self.cleared.append(pid)
        self.states = {a: (NW if s else NP) for a, s in self.states.items()}

    def move_addresses(self, pid, addresses, node):
        self.moves.append((pid, [(a - START) // PAGE for a in addresses],
                           node))
        for a in addresses:
            self.nodes[a] = node
        return self.not_moved, [node] * len(addresses)


class FakeMover:

    def __init__(self, daemon, vmas, batch_pages=4):
        self._daemon = daemon
        self.vmas = vmas
        self.batch_pages = batch_pages

    def daemon(self):
        return self._daemon

    def mappings(self, pid):
        return self.vmas


class PageTemperatureTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.daemon = FakeDaemon(PAGES)
        # Two windows of 4 pages: 0-3 and 4-7.
        self.temps = pagetemps.PageTemperature(
            FakeMover(self.daemon, [vma(resident={0: 5, 1: 1, 2: 1})]))

    def test_the_first_census_of_a_process_says_nothing(self):
        # Every page is born written: the first reading cannot tell hot
        # from cold; a new process of the same guest starts over.
        self.assertIsNone(self.temps.census('u1', 42))
        self.assertIsNotNone(self.temps.census('u1', 42))
        self.assertIsNone(self.temps.census('u1', 43))

    def test_the_census_gives_mb_written_per_node(self):
        self.temps.census('u1', 42)
        self.daemon.write_again()
        self.assertEqual({0: 2 / 256, 1: 1 / 256, 2: 1 / 256},
                         self.temps.census('u1', 42))

    def test_the_census_clears_the_bits_once(self):
        self.temps.census('u1', 42)
        self.assertEqual([42], self.daemon.cleared)

    def test_a_cold_move_takes_only_unwritten_pages_of_the_source(self):
        self.temps.census('u1', 42)
        self.assertEqual(3, self.temps.move('u1', 42, 0, 2, 10,
                                            backend.PICK_COLD))
        self.assertEqual([(42, [1, 3], 2), (42, [6], 2)], self.daemon.moves)

    def test_a_hot_move_takes_only_written_pages_of_the_source(self):
        self.temps.census('u1', 42)
        self.assertEqual(2, self.temps.move('u1', 42, 0, 1, 10,
                                            backend.PICK_HOT))
        self.assertEqual([(42, [0], 1), (42, [4], 1)], self.daemon.moves)

    def test_hot_first_takes_written_pages_before_unwritten(self):
        self.temps.census('u1', 42)
        self.assertEqual(3, self.temps.move('u1', 42, 0, 1, 3,
                                            backend.PICK_HOT_FIRST))
        self.assertEqual([(42, [0], 1), (42, [4], 1), (42, [1], 1)],
                         self.daemon.moves)

    def test_a_move_stops_at_its_page_limit(self):
        self.temps.census('u1', 42)
        self.assertEqual(2, self.temps.move('u1', 42, 0, 2, 2,
                                            backend.PICK_COLD))
        self.assertEqual([(42, [1, 3], 2)], self.daemon.moves)

    def test_pages_the_kernel_did_not_move_are_not_counted(self):
        self.daemon.not_moved = 1
        self.temps.census('u1', 42)
        self.assertEqual(1, self.temps.move('u1', 42, 0, 2, 10,
                                            backend.PICK_COLD))

    def test_no_move_without_a_census(self):
        self.assertEqual(0, self.temps.move('u1', 42, 0, 2, 10,
                                            backend.PICK_COLD))
        self.assertEqual((0, []), (self.daemon.queries, self.daemon.moves))

    def test_no_move_with_the_census_of_another_process(self):
        self.temps.census('u1', 41)
        self.assertEqual(0, self.temps.move('u1', 42, 0, 2, 10,
                                            backend.PICK_COLD))
        self.assertEqual([], self.daemon.moves)

    def test_a_forgotten_guest_has_no_census(self):
        self.temps.census('u1', 42)
        self.temps.forget_all_but({'u2'})
        self.assertEqual(0, self.temps.move('u1', 42, 0, 2, 10,
                                            backend.PICK_COLD))


class PromotionTest(test_base.TestCase):

    def test_the_tiering_bit_of_numa_balancing_promotes(self):
        for text, expected in (('0', False), ('1', False), ('2', True),
                               ('3\n', True), (None, None)):
            with self.subTest(text):
                self.assertIs(expected, tier_files.parse_promotion(text))

    def test_a_text_that_is_not_a_number_is_refused(self):
        exc = self.assertRaises(ValueError, tier_files.parse_promotion, 'x')
        self.assertEqual("numa_balancing reads 'x'", str(exc))

    def test_memory_tiers_carries_the_promotion(self):
        self.assertEqual(
            (backend.MemoryTiers(ranks={0: 0}, demotion=False,
                                 promotion=True), {}),
            tier_files.memory_tiers({'memory_tier4': '0'}, 'false', '2'))

    def test_without_the_text_promotion_is_unsaid(self):
        found, problems = tier_files.memory_tiers({'memory_tier4': '0'},
                                                  'true')
        self.assertEqual((None, {}), (found.promotion, problems))

    def test_a_bad_text_is_left_unsaid_and_said_why(self):
        found, problems = tier_files.memory_tiers({'memory_tier4': '0'},
                                                  'true', 'x')
        self.assertEqual(backend.MemoryTiers(ranks={0: 0}, demotion=True),
                         found)
        self.assertEqual({'promotion': "numa_balancing reads 'x'"},
                         problems)

    def test_the_kernel_tiers_when_it_demotes_or_promotes(self):
        for demotion, promotion, expected in (
                (None, None, False), (False, False, False),
                (True, None, True), (None, True, True)):
            with self.subTest(demotion=demotion, promotion=promotion):
                self.assertIs(expected, backend.MemoryTiers(
                    demotion=demotion, promotion=promotion).kernel_tiers)
