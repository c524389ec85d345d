"""numa_maps parsing and per-node memory, on texts the kernel writes."""

import os

import fixtures

from agent.sensors import numamaps
from tests import base as test_base

# A qemu-like process: guest RAM anonymous on two nodes, a hugetlbfs
# mapping, a memfd, a library, heap and stack. Captured shapes from a
# 6.x kernel, trimmed.
NUMA_MAPS = '''\
55d0c3a00000 default file=/usr/bin/qemu-system-x86_64 mapped=812 N0=812 \
kernelpagesize_kB=4
55d0c5a2b000 default heap anon=2045 dirty=2045 N0=1024 N1=1021 \
kernelpagesize_kB=4
7f3a40000000 default anon=262144 dirty=262144 active=0 N0=196608 N1=65536 \
kernelpagesize_kB=4
7f3b00000000 interleave:0-1 file=/dev/hugepages/guest huge \
dirty=4 N0=2 N1=2 kernelpagesize_kB=2048
7f3c00000000 bind:1 file=/memfd:pc.ram\\040(deleted) dirty=512 N1=512 \
kernelpagesize_kB=4
7f3d00000000 default
7ffd5e2f0000 default stack anon=33 dirty=33 N0=33 kernelpagesize_kB=4
'''
MAPS = '''\
55d0c3a00000-55d0c3d2c000 r-xp 00000000 fd:01 1234 /usr/bin/qemu-system-x86_64
55d0c5a2b000-55d0c622b000 rw-p 00000000 00:00 0                  [heap]
7f3a40000000-7f3a80000000 rw-p 00000000 00:00 0
7f3b00000000-7f3b00800000 rw-s 00000000 00:2f 99 /dev/hugepages/guest
7f3c00000000-7f3c00200000 rw-s 00000000 00:01 7 /memfd:pc.ram (deleted)
7f3d00000000-7f3d00001000 ---p 00000000 00:00 0
7ffd5e2f0000-7ffd5e311000 rw-p 00000000 00:00 0                  [stack]
'''


class ParseTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.vmas = {v.start: v for v in numamaps.parse(NUMA_MAPS, MAPS)}

    def test_every_mapping_with_its_extent_and_pages_per_node(self):
        ram = self.vmas[0x7f3a40000000]
        self.assertEqual((0x7f3a80000000, 'default', 4, {0: 196608, 1: 65536}),
                         (ram.end, ram.policy, ram.page_kb,
                          ram.pages_per_node))
        self.assertEqual(262144, ram.pages)
        self.assertEqual(7, len(self.vmas))

    def test_names_and_huge_pages(self):
        huge = self.vmas[0x7f3b00000000]
        self.assertEqual((True, 2048, 4), (huge.huge, huge.page_kb,
                                           huge.pages))
        self.assertEqual('heap', self.vmas[0x55d0c5a2b000].name)
        self.assertEqual('stack', self.vmas[0x7ffd5e2f0000].name)
        self.assertEqual('/memfd:pc.ram\\040(deleted)',
                         self.vmas[0x7f3c00000000].name)
        self.assertIsNone(self.vmas[0x7f3a40000000].name)

    def test_a_mapping_with_no_resident_page(self):
        empty = self.vmas[0x7f3d00000000]
        self.assertEqual(({}, 1), (empty.pages_per_node, empty.pages))

    def test_without_maps_the_extent_is_unknown(self):
        vmas = numamaps.parse(NUMA_MAPS)
        self.assertEqual({None}, {v.end for v in vmas})
        self.assertEqual({0}, {v.pages for v in vmas})

    def test_a_mapping_gone_between_the_two_reads_has_no_extent(self):
        maps = MAPS.replace('7f3a40000000-7f3a80000000', '7f3a50000000-'
                            '7f3a80000000')
        vmas = {v.start: v for v in numamaps.parse(NUMA_MAPS, maps)}
        self.assertIsNone(vmas[0x7f3a40000000].end)

    def test_empty_and_garbage_lines(self):
        self.assertEqual([], numamaps.parse(''))
        self.assertEqual([], numamaps.parse(None))
        self.assertEqual([], numamaps.parse('\n7f00\n'))


class MemoryPerNodeTest(test_base.TestCase):

    def test_every_mapping_counts_with_its_page_size(self):
        vmas = numamaps.parse(NUMA_MAPS, MAPS)
        kb0 = (812 + 1024 + 196608 + 33) * 4 + 2 * 2048
        kb1 = (1021 + 65536 + 512) * 4 + 2 * 2048
        self.assertEqual({0: kb0 / 1024, 1: kb1 / 1024},
                         numamaps.memory_mb_per_node(vmas))

    def test_no_mappings_no_memory(self):
        self.assertEqual({}, numamaps.memory_mb_per_node([]))


class ReadTest(test_base.TestCase):

    def test_reads_under_a_root(self):
        root = self.useFixture(fixtures.TempDir()).path
        os.makedirs(os.path.join(root, 'proc', '42'))
        with open(os.path.join(root, 'proc', '42', 'numa_maps'), 'w') as f:
            f.write(NUMA_MAPS)
        self.assertEqual(NUMA_MAPS, numamaps.read(root, 42))
        self.assertIsNone(numamaps.read(root, 43))

    def test_reads_this_process(self):
        vmas = numamaps.parse(numamaps.read('/', os.getpid()),
                              numamaps.read('/', os.getpid(), 'maps'))
        # The interpreter's heap is resident somewhere.
        self.assertTrue(any(v.name == 'heap' and v.pages_per_node
                            for v in vmas))
        self.assertTrue(all(v.end is not None for v in vmas))


class MemoryFromTextTest(test_base.TestCase):
    """The agent's per-period shortcut gives what the full parse gives."""

    def test_the_shortcut_matches_the_parse(self):
        self.assertEqual(
            numamaps.memory_mb_per_node(numamaps.parse(NUMA_MAPS)),
            numamaps.memory_mb_from_text(NUMA_MAPS))
        self.assertEqual({0: (812 + 1024 + 196608 + 33) * 4 / 1024
                          + 2 * 2,
                          1: (1021 + 65536 + 512) * 4 / 1024 + 2 * 2},
                         numamaps.memory_mb_from_text(NUMA_MAPS))

    def test_the_shortcut_matches_on_this_process(self):
        text = numamaps.read('/', os.getpid())
        self.assertEqual(
            numamaps.memory_mb_per_node(numamaps.parse(text)),
            numamaps.memory_mb_from_text(text))

    def test_nothing_resident_is_nothing(self):
        self.assertEqual({}, numamaps.memory_mb_from_text(
            '7f3d00000000 default\n'))
        self.assertEqual({}, numamaps.memory_mb_from_text(None))
