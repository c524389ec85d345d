"""The page move planner: which windows, which kind, within a budget."""

import errno

from agent.backend import pageplan
from agent.sensors import numamaps
from tests import base as test_base

PAGE = 4096
BASE = 0x7f0000000000


def vma(pages, per_node, start=BASE, name=None, huge=False, page_kb=4):
    return numamaps.Vma(start=start, end=start + pages * page_kb * 1024,
                        policy='default', page_kb=page_kb,
                        pages_per_node=per_node, name=name, huge=huge)


class PlanTest(test_base.TestCase):

    def test_a_mapping_on_source_and_target_only_is_moved_whole(self):
        windows = pageplan.plan([vma(10000, {0: 6000, 1: 4000})], 0, 1,
                                pages=6000, batch_pages=4096)
        self.assertEqual([(BASE, 4096, False, 0),
                          (BASE + 4096 * PAGE, 4096, False, 0),
                          (BASE + 8192 * PAGE, 1808, False, 6000)],
                         [(w.start, w.count, w.select, w.credit)
                          for w in windows])

    def test_a_budget_smaller_than_the_mapping_selects_pages(self):
        windows = pageplan.plan([vma(1000, {0: 1000})], 0, 1, pages=10,
                                batch_pages=512)
        self.assertEqual([True, True], [w.select for w in windows])
        self.assertEqual([0, 0], [w.credit for w in windows])

    def test_pages_on_a_third_node_make_the_mapping_selective(self):
        windows = pageplan.plan([vma(600, {0: 300, 2: 300})], 0, 1, 1000,
                                batch_pages=512)
        self.assertEqual([True, True], [w.select for w in windows])

    def test_largest_source_first_and_stop_when_the_budget_is_spent(self):
        small = vma(1000, {0: 100}, start=BASE)
        large = vma(1000, {0: 900}, start=BASE + 0x1000000)
        third = vma(1000, {0: 50}, start=BASE + 0x2000000)
        windows = pageplan.plan([small, large, third], 0, 1, pages=950,
                                batch_pages=1000)
        self.assertEqual([(large.start, False), (small.start, True)],
                         [(w.start, w.select) for w in windows])

    def test_nothing_on_the_source_plans_nothing(self):
        # What a second run of a completed request sees: idempotent.
        self.assertEqual([], pageplan.plan([vma(100, {1: 100})], 0, 1, 100))

    def test_shared_files_are_never_planned(self):
        vmas = [vma(100, {0: 100}, name='/usr/lib/libc.so.6'),
                vma(100, {0: 100}, start=BASE + 0x100000,
                    name='/memfd:pc.ram\\040(deleted)'),
                vma(100, {0: 100}, start=BASE + 0x200000, name='heap'),
                vma(4, {0: 4}, start=BASE + 0x40000000,
                    name='/dev/hugepages/guest', huge=True, page_kb=2048)]
        windows = pageplan.plan(vmas, 0, 1, 1000, batch_pages=512)
        self.assertEqual([BASE + 0x100000, BASE + 0x200000, BASE + 0x40000000],
                         sorted(w.start for w in windows))
        huge = [w for w in windows if w.page_size == 2 << 20]
        self.assertEqual([range(BASE + 0x40000000, BASE + 0x40800000,
                                2 << 20)], [w.addresses() for w in huge])

    def test_a_mapping_without_extent_is_not_planned(self):
        unknown = numamaps.Vma(BASE, None, 'default', 4, {0: 10})
        self.assertEqual([], pageplan.plan([unknown], 0, 1, 10))

    def test_batches_smaller_than_512_pages_are_refused(self):
        self.assertRaises(ValueError, pageplan.plan, [], 0, 1, 1, 511)


class StatusTest(test_base.TestCase):

    def test_select_takes_source_pages_up_to_the_limit(self):
        addresses = [1, 2, 3, 4, 5]
        nodes = [0, 1, 0, -errno.ENOENT, 0]
        self.assertEqual([1, 3], pageplan.select(addresses, nodes, 0, 2))
        self.assertEqual([1, 3, 5], pageplan.select(addresses, nodes, 0, 9))
        self.assertEqual([], pageplan.select(addresses, nodes, 0, -1))

    def test_a_block_all_on_the_source_is_taken_whole_or_not_at_all(self):
        # Two 2 MiB blocks of 4 KiB pages: the first all on node 0 (it
        # may be one transparent huge page, which moves whole), the
        # second half on node 0.
        span = pageplan.HUGE_PAGE_BYTES // 4096
        base = 0x7f0000000000
        addresses = [base + i * 4096 for i in range(2 * span)]
        nodes = [0] * span + [0, 1] * (span // 2)
        self.assertEqual(addresses[:span] + addresses[span:span + 20:2],
                         pageplan.select(addresses, nodes, 0, span + 10))
        # Less than a block left: the whole block is not taken, single
        # pages of the mixed block are.
        self.assertEqual(addresses[span:span + 20:2],
                         pageplan.select(addresses, nodes, 0, span - 1)[:10])
        self.assertEqual(span // 2,
                         len(pageplan.select(addresses, nodes, 0, span - 1)))

    def test_huge_pages_are_units_of_their_own(self):
        size = pageplan.HUGE_PAGE_BYTES
        addresses = [size * i for i in range(4)]
        self.assertEqual(addresses[:3], pageplan.select(
            addresses, [0, 0, 0, 0], 0, 3, page_size=size))
