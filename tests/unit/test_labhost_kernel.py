"""Reading a QEMU process's numa_maps back for the lab's tests (pure)."""

from tests import base as test_base
from tests.host import base
from tests.labhost import kernel

# A tiny TCG guest with a NIC: its translated code (default policy)
# touched more pages than its RAM (bound to node 0) did.
NUMA_MAPS = """\
7f0000000000 default anon=4745 dirty=4745 N0=4745 kernelpagesize_kB=4
7f1000000000 bind:0 anon=3000 dirty=3000 N0=3000 kernelpagesize_kB=4
7f2000000000 default file=/usr/lib/x.so mapped=10 N1=10 kernelpagesize_kB=4
"""


class GuestRamTest(test_base.TestCase):

    def test_the_mapping_of_the_guests_size_is_its_ram(self):
        ram = kernel.guest_ram(NUMA_MAPS, ram_starts=(0x7f1000000000,))
        self.assertEqual(('bind:0', {0: 3000}), (ram.policy, ram.pages))

    def test_without_the_size_the_most_touched_mapping_is_taken(self):
        self.assertEqual('default', kernel.guest_ram(NUMA_MAPS).policy)

    def test_a_size_matching_no_mapping_falls_back(self):
        self.assertEqual(4745, kernel.guest_ram(
            NUMA_MAPS, ram_starts=(0x1234,)).total)


class MemoryPerNodeTest(test_base.TestCase):

    def test_every_mapping_counts_on_its_node(self):
        self.assertEqual({0: (4745 + 3000) * 4 / 1024, 1: 10 * 4 / 1024},
                         kernel.memory_mib_per_node(NUMA_MAPS))

    def test_a_huge_page_mapping_counts_its_page_size(self):
        text = ('7f3000000000 bind:1 file=/dev/hugepages/q huge dirty=2 '
                'N1=2 kernelpagesize_kB=2048\n')
        self.assertEqual({1: 4.0}, kernel.memory_mib_per_node(text))

    def test_no_mapping_is_no_memory(self):
        self.assertEqual({}, kernel.memory_mib_per_node(''))


class InterleaveStepTest(test_base.TestCase):

    def test_base_pages_ask_for_nine_tenths_of_an_even_share(self):
        self.assertEqual(900, base.interleaved_least_pages(2000, 2))

    def test_huge_pages_allow_one_step_under_an_even_share(self):
        # Three 2 MiB pages over two nodes: 512 and 1024 base pages.
        least = base.interleaved_least_pages(1536, 2, base.HUGE_PAGE_PAGES)
        self.assertEqual(256, least)
        self.assertEqual(1, base.interleaved_least_pages(
            1024, 2, base.HUGE_PAGE_PAGES))
        # Many huge pages: the base-page rule again.
        self.assertEqual(9000, base.interleaved_least_pages(
            20000, 2, base.HUGE_PAGE_PAGES))


class AssertInterleavedTest(test_base.TestCase):

    def check(self, pages, nodes, step=base.HUGE_PAGE_PAGES):
        base.LabTestCase.assert_interleaved(self, pages, nodes, step)

    def test_fewer_huge_pages_than_nodes_need_two_nodes(self):
        # Three 2 MiB pages on a four-node host (seen in the cloud).
        self.check({0: 1024, 1: 512}, {0, 1, 2, 3})
        self.assertRaises(self.failureException, self.check,
                          {0: 1536}, {0, 1, 2, 3})

    def test_pages_off_the_interleaved_nodes_fail(self):
        self.assertRaises(self.failureException, self.check,
                          {0: 1024, 5: 512}, {0, 1, 2, 3})

    def test_enough_pages_need_each_node_s_share(self):
        self.check({0: 768, 1: 768}, {0, 1})
        self.assertRaises(self.failureException, self.check,
                          {0: 1536}, {0, 1})
