"""perf's sample records and events (agent.sensors: perfsamples, perfevents).

Records are built to the kernel's layout (include/uapi/linux/perf_event.h).
The ring buffer is read off a real software event of this process: the
kernel writes it, wrapping many times; no CPU this suite runs on offers
the hardware sampling the agent asks for (tests/host/test_sampling.py
reads real samples with physical addresses on the lab host's two nodes).
"""

import errno
import os
import struct
import threading
import time

import fixtures

from agent.sensors import perfevents
from agent.sensors import perfsamples
from agent.sensors import sysfs
from tests import base as test_base
from tests import fixtures as host_fixtures

TID_ONLY = perfsamples.SAMPLE_TID
FULL = (perfsamples.SAMPLE_TID | perfsamples.SAMPLE_DATA_SRC
        | perfsamples.SAMPLE_PHYS_ADDR)
BLOCK = 128 << 20
# union perf_mem_data_src values.
LOCAL_RAM = (0x80 | 0x02) << 5  # LOC_RAM | HIT
REMOTE_RAM = (0x100 | 0x02) << 5  # REM_RAM1 | HIT
L3_HIT = (0x40 | 0x02) << 5
RAM_BY_NUMBER = 0x0d << 33  # mem_lvl_num RAM, mem_lvl left NA
NOT_AVAILABLE = 0x01 << 5


def sample(pid, tid, data_src=LOCAL_RAM, phys_addr=0):
    """A PERF_RECORD_SAMPLE of sample_type FULL."""
    return (struct.pack('<IHH', perfsamples.RECORD_SAMPLE, 0, 32)
            + struct.pack('<IIQQ', pid, tid, data_src, phys_addr))


def lost(count):
    return (struct.pack('<IHH', perfsamples.RECORD_LOST, 0, 24)
            + struct.pack('<QQ', 1, count))


def throttle():
    return struct.pack('<IHH', 5, 0, 32) + bytes(24)


class DecodeTest(test_base.TestCase):

    def test_a_buffer_of_samples_alone_is_read_at_once(self):
        data = sample(10, 11, phys_addr=BLOCK) + sample(10, 12, phys_addr=1)
        samples, lost_count = perfsamples.decode(data, FULL)
        self.assertIsInstance(samples, perfsamples.Columns)
        self.assertEqual(0, lost_count)
        self.assertEqual(
            [perfsamples.Sample(10, 11, 0, LOCAL_RAM, BLOCK),
             perfsamples.Sample(10, 12, 0, LOCAL_RAM, 1)], list(samples))

    def test_lost_and_other_records_among_samples(self):
        data = (sample(10, 11, phys_addr=5) + lost(7) + throttle()
                + sample(10, 12, phys_addr=6) + lost(2)
                # A record cut short by the copy ends the walk.
                + sample(10, 13)[:20])
        samples, lost_count = perfsamples.decode(data, FULL)
        self.assertEqual([11, 12], [s.tid for s in samples])
        self.assertEqual(9, lost_count)

    def test_a_record_of_impossible_size_ends_the_walk(self):
        data = sample(1, 2, phys_addr=3) + struct.pack('<IHH', 9, 0, 4)
        samples, _ = perfsamples.decode(data + sample(1, 4), FULL)
        self.assertEqual([2], [s.tid for s in samples])

    def test_fields_it_cannot_place_are_refused(self):
        # PERF_SAMPLE_CALLCHAIN: its length varies, the rest would shift.
        self.assertRaises(ValueError, perfsamples.decode, b'',
                          FULL | (1 << 5))

    def test_the_layout_follows_the_kernels_order(self):
        self.assertEqual(('tid', 'addr', 'data_src', 'phys_addr'),
                         perfsamples.sample_layout(
                             FULL | perfsamples.SAMPLE_ADDR))


class DataSourceTest(test_base.TestCase):

    SOURCES = {LOCAL_RAM: True, REMOTE_RAM: True, RAM_BY_NUMBER: True,
               L3_HIT: False, NOT_AVAILABLE: False, 0: False,
               # A miss that names memory without a hit: not served.
               (0x80 | 0x04) << 5: False}

    def test_memory_served_it_or_not(self):
        self.assertEqual(list(self.SOURCES.values()),
                         perfsamples.served_by_memory(
                             list(self.SOURCES)).tolist())

    def test_a_buffer_at_once_reads_the_sources_alike(self):
        ranges = perfsamples.NodeRanges({0: [0]}, BLOCK)
        data = b''.join(sample(1, tid, data_src, 4096)
                        for tid, data_src in enumerate(self.SOURCES, 1))
        at_once = perfsamples.tally(perfsamples.decode(data, FULL)[0],
                                    ranges)
        one_by_one = perfsamples.tally(
            perfsamples.decode(data + throttle(), FULL)[0], ranges)
        self.assertEqual(one_by_one, at_once)
        served = sorted(tid for tid, data_src in enumerate(self.SOURCES, 1)
                        if self.SOURCES[data_src])
        self.assertEqual(served, sorted(at_once))


class NodeRangesTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        # Node 1's memory lies between node 0's blocks and a hole.
        self.ranges = perfsamples.NodeRanges({0: [0, 1, 4], 1: [2, 3]},
                                             BLOCK)

    def test_each_address_on_the_node_of_its_block(self):
        # -1: no block covers it.
        cases = {0: 0, BLOCK - 1: 0, BLOCK: 0, 2 * BLOCK: 1,
                 4 * BLOCK - 1: 1, 4 * BLOCK: 0, 5 * BLOCK: -1,
                 100 * BLOCK: -1}
        self.assertEqual(list(cases.values()),
                         self.ranges.nodes_of(list(cases)).tolist())
        self.assertEqual([-1], perfsamples.NodeRanges({}, BLOCK).nodes_of(
            [BLOCK]).tolist())

    def test_read_from_the_kernels_memory_blocks(self):
        root = self.useFixture(fixtures.TempDir()).path
        host_fixtures.write_memory_blocks(root, {0: [0, 1, 4], 1: [2, 3]})
        blocks, size = sysfs.memory_blocks(root)
        self.assertEqual(({0: [0, 1, 4], 1: [2, 3]}, BLOCK), (blocks, size))
        self.assertEqual(({}, None), sysfs.memory_blocks(
            self.useFixture(fixtures.TempDir()).path))


class TallyTest(test_base.TestCase):

    def test_per_thread_and_node_of_what_memory_served(self):
        ranges = perfsamples.NodeRanges({0: [0], 1: [1]}, BLOCK)
        samples, _ = perfsamples.decode(
            sample(9, 11, LOCAL_RAM, 4096)
            + sample(9, 11, REMOTE_RAM, BLOCK + 4096)
            + sample(9, 11, REMOTE_RAM, BLOCK + 8192)
            + sample(9, 12, L3_HIT, 4096)
            + sample(9, 12, LOCAL_RAM, 0)
            + sample(9, 12, LOCAL_RAM, 9 * BLOCK), FULL)
        self.assertEqual({11: {0: 1, 1: 2}},
                         perfsamples.tally(samples, ranges))
        # An event that says nothing of where data came from: every
        # sample with a known address counts.
        self.assertEqual({11: {0: 1, 1: 2}, 12: {0: 1}},
                         perfsamples.tally(samples, ranges,
                                           memory_only=False))

    def test_merged_across_rings(self):
        counts = {11: {0: 1}}
        perfsamples.merge(counts, {11: {0: 2, 1: 1}, 12: {1: 4}})
        self.assertEqual({11: {0: 3, 1: 1}, 12: {1: 4}}, counts)


class AttrTest(test_base.TestCase):

    def test_fields_where_the_kernel_reads_them(self):
        data = perfevents.attr(11, config=1 << 19, sample_period=4096,
                               sample_type=FULL, flags=0x60, bp_type=2,
                               bp_addr=0x7f00, bp_len=8)
        self.assertEqual(perfevents.ATTR_SIZE, len(data))
        self.assertEqual((11, 112), struct.unpack_from('<II', data, 0))
        self.assertEqual((1 << 19, 4096, FULL),
                         struct.unpack_from('<QQQ', data, 8))
        self.assertEqual(0x60, struct.unpack_from('<Q', data, 40)[0])
        self.assertEqual(2, struct.unpack_from('<I', data, 52)[0])
        self.assertEqual((0x7f00, 8), struct.unpack_from('<QQ', data, 56))

    def test_a_pmus_options_from_its_format_files(self):
        root = self.useFixture(fixtures.TempDir()).path
        host_fixtures.write_ibs_op(root, 11, (
            ('cnt_ctl', 'config:19'), ('l3missonly', 'config:16'),
            ('maxcnt', 'config:0-15'), ('ldlat', 'config1:0-11')))
        formats = perfevents.pmu_formats(root, 'ibs_op')
        self.assertEqual(('config', 0, 15), formats['maxcnt'])
        self.assertEqual(11, perfevents.pmu_type(root, 'ibs_op'))
        self.assertIsNone(perfevents.pmu_type(root, 'cpu'))
        self.assertEqual((1 << 19) | (1 << 16) | 0x10,
                         perfevents.config_with(formats, cnt_ctl=1,
                                                l3missonly=1, maxcnt=0x10,
                                                ldlat=3, absent=1))


class RingTest(test_base.TestCase):
    """A real software event of this process, read as the kernel writes."""

    def test_samples_read_in_order_as_the_buffer_wraps(self):
        event = perfevents.attr(
            perfevents.TYPE_SOFTWARE, config=0,  # PERF_COUNT_SW_CPU_CLOCK
            sample_period=20000, sample_type=TID_ONLY,
            flags=perfevents.FLAG_EXCLUDE_KERNEL | perfevents.FLAG_EXCLUDE_HV)
        tid = threading.get_native_id()
        try:
            fd = perfevents.open_event(event, pid=tid)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                self.skipTest(f'this kernel keeps perf events from this '
                              f'user (kernel.perf_event_paranoid): {exc}')
            raise
        ring = perfevents.Ring(fd, 1)
        self.addCleanup(ring.close)
        record = struct.calcsize('<IHHQ')
        capacity = 4096 // record
        samples = spin = 0
        deadline = time.monotonic() + 60
        while samples < 4 * capacity and time.monotonic() < deadline:
            for _ in range(20000):
                spin += 1
            # Whole records of this thread only, wherever the copy began
            # and wherever the buffer wrapped.
            found, _lost = perfsamples.decode(ring.drain(), TID_ONLY)
            self.assertLessEqual({s.tid for s in found}, {tid})
            self.assertLessEqual({s.pid for s in found}, {os.getpid()})
            samples += len(found)
        self.assertGreaterEqual(samples, 4 * capacity)

    def test_a_power_of_two_of_data_pages(self):
        self.assertRaises(ValueError, perfevents.Ring, -1, 3)
