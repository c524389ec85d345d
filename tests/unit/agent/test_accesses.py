"""What tiered guests read, by DAMON: pure, on a fake sysfs, and faked.

:mod:`agent.backend.accesses` (which regions count as accessed within a
period, the daemon's client), :mod:`agent.privsep.damon` (what it writes
to DAMON's sysfs, on a tree of files standing in for it; the real one is
the lab host's, ``tests/host/test_tiers.py``) and the census of
:mod:`agent.backend.pagetemps` with reads seen.
"""

import os

import fixtures

from nova_numa_policy.contracts import backend

from agent.backend import accesses
from agent.backend import pagetemps
from agent.privsep import damon
from tests import base as test_base
from tests.unit.agent import test_pagetemps as faked

MB = 1 << 20
# Half a second: the aggregation of an agent whose period is that.
AGGR = 500000


class AccessedRangesTest(test_base.TestCase):

    def test_a_region_idle_for_a_whole_period_is_cold(self):
        # 10 s period: 20 aggregations of half a second.
        regions = [(0, MB, 0, 20), (MB, 2 * MB, 0, 19), (2 * MB, 3 * MB,
                                                         3, 400)]
        self.assertEqual([(MB, 3 * MB)],
                         accesses.accessed_ranges(regions, 10.0, AGGR))

    def test_neighbours_merge_and_order_does_not_matter(self):
        regions = [(4 * MB, 5 * MB, 1, 0), (0, MB, 1, 0), (MB, 2 * MB, 0, 0)]
        self.assertEqual([(0, 2 * MB), (4 * MB, 5 * MB)],
                         accesses.accessed_ranges(regions, 10.0, AGGR))

    def test_one_aggregation_a_period_of_500_samples(self):
        self.assertEqual((10000, 5000000), accesses.intervals(5.0))
        # Bounded: a sample of 5 ms at least, an aggregation of a minute
        # at most (then idle means idle for that many aggregations).
        self.assertEqual((5000, 500000), accesses.intervals(0.5))
        self.assertEqual((100000, 60000000), accesses.intervals(300.0))
        # A region idle over one whole aggregation of a period is cold.
        sample, aggregation = accesses.intervals(5.0)
        self.assertEqual([(0, MB)], accesses.accessed_ranges(
            [(0, MB, 0, 0), (MB, 2 * MB, 0, 1)], 5.0, aggregation))

    def test_pages_of_a_window_inside_the_ranges(self):
        ranges = [(8192, 16384), (20480, 24576)]
        self.assertEqual(
            [False, False, True, True, False, True, False],
            accesses.accessed_pages(ranges, 0, 7, 4096))
        self.assertEqual([False] * 3, accesses.accessed_pages([], 0, 3, 4096))

    def test_reads_make_unwritten_pages_hot_and_nothing_else(self):
        states = bytes([faked.NP, faked.NW, faked.W, faked.NW])
        self.assertEqual(bytes([faked.NP, faked.W, faked.W, faked.NW]),
                         pagetemps.with_accesses(states,
                                                 [True, True, True, False]))
        self.assertIs(states, pagetemps.with_accesses(states, None))


class SysfsTree(fixtures.Fixture):
    """DAMON's admin tree as plain files, each kdamond's made on demand."""

    def _setUp(self):
        self.root = self.useFixture(fixtures.TempDir()).path
        self.admin = os.path.join(self.root, 'admin')
        self.marker = os.path.join(self.root, 'marker')
        os.makedirs(os.path.join(self.admin, 'kdamonds'))
        self.write('kdamonds/nr_kdamonds', '0')

    def write(self, path, text):
        path = os.path.join(self.admin, path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(text + '\n')

    def read(self, path):
        with open(os.path.join(self.admin, path)) as f:
            return f.read().strip()

    def kdamonds(self, count):
        """The files of ``count`` kdamonds, as writing nr_kdamonds makes."""
        for index in range(count):
            for path, _ in damon.setup_writes(self.admin, index, 1, 1, 1):
                self.write(os.path.relpath(path, self.admin), '0')
            self.write(f'kdamonds/{index}/state', 'off')


class DamonSysfsTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.tree = self.useFixture(SysfsTree())

    def start(self, pids):
        self.tree.kdamonds(len(pids))
        damon.start_watching(pids, 10000, AGGR, admin=self.tree.admin,
                             marker=self.tree.marker)

    def test_one_kdamond_per_guest_each_on_with_a_stat_scheme(self):
        self.start([41, 42])
        self.assertEqual('2', self.tree.read('kdamonds/nr_kdamonds'))
        for index, pid in enumerate((41, 42)):
            ctx = f'kdamonds/{index}/contexts/0'
            self.assertEqual('on', self.tree.read(f'kdamonds/{index}/state'))
            self.assertEqual('vaddr', self.tree.read(f'{ctx}/operations'))
            self.assertEqual(str(pid), self.tree.read(
                f'{ctx}/targets/0/pid_target'))
            self.assertEqual('stat', self.tree.read(
                f'{ctx}/schemes/0/action'))
            self.assertEqual(str(AGGR), self.tree.read(
                f'{ctx}/monitoring_attrs/intervals/aggr_us'))
        self.assertEqual({41: 0, 42: 1}, damon.watched(self.tree.admin,
                                                       self.tree.marker))

    def test_someone_elses_kdamonds_are_left_alone(self):
        self.tree.kdamonds(1)
        self.tree.write('kdamonds/nr_kdamonds', '1')
        self.tree.write('kdamonds/0/state', 'on')
        self.assertRaises(damon.DamonBusy, damon.start_watching, [42],
                          10000, AGGR, admin=self.tree.admin,
                          marker=self.tree.marker)
        self.assertEqual('on', self.tree.read('kdamonds/0/state'))
        self.assertEqual({}, damon.watched(self.tree.admin,
                                           self.tree.marker))

    def test_no_guest_left_removes_the_kdamonds_and_the_marker(self):
        self.start([42])
        damon.start_watching([], 0, 0, admin=self.tree.admin,
                             marker=self.tree.marker)
        self.assertEqual('0', self.tree.read('kdamonds/nr_kdamonds'))
        self.assertEqual('off', self.tree.read('kdamonds/0/state'))
        self.assertFalse(os.path.exists(self.tree.marker))

    def test_the_max_is_written_before_the_min(self):
        paths = [os.path.basename(path) for path, _ in damon.setup_writes(
            '/admin', 0, 42, 10000, AGGR)]
        self.assertLess(paths.index('max'), paths.index('min'))

    def test_tried_regions_read_sorted(self):
        self.start([42])
        tried = 'kdamonds/0/contexts/0/schemes/0/tried_regions'
        for index, (start, end, nr, age) in enumerate(
                ((8192, 12288, 0, 9), (0, 4096, 2, 1))):
            for name, value in (('start', start), ('end', end),
                                ('nr_accesses', nr), ('age', age)):
                self.tree.write(f'{tried}/{index}/{name}', str(value))
        self.tree.write(f'{tried}/total_bytes', '8192')
        self.assertEqual([(0, 4096, 2, 1), (8192, 12288, 0, 9)],
                         damon.tried_regions(0, admin=self.tree.admin))
        self.assertEqual('update_schemes_tried_regions',
                         self.tree.read('kdamonds/0/state'))

    def test_intervals_out_of_bounds_are_refused(self):
        self.assertEqual((10000, AGGR), damon.intervals('10000', AGGR))
        for sample, aggregation in ((10, AGGR), (10000, 100),
                                    (10000, 10 ** 9)):
            self.assertRaises(ValueError, damon.intervals, sample,
                              aggregation)


class FakeAccessDaemon:
    """The access daemon's entry points: regions per pid, as given."""

    def __init__(self, regions, fail=None):
        self.regions_of = regions
        self.fail = fail
        self.watches = []

    def watch(self, pids, sample_us, aggr_us):
        if self.fail:
            raise self.fail
        self.watches.append(list(pids))
        return pids

    def regions(self, pid):
        return self.regions_of.get(pid)

    def release(self):
        self.watches.append('released')


class AccessMonitorTest(test_base.TestCase):

    def monitor(self, daemon):
        monitor = accesses.AccessMonitor(period=10.0)
        monitor.daemon = lambda: daemon
        return monitor

    def test_damon_restarts_only_when_the_guests_change(self):
        daemon = FakeAccessDaemon({})
        monitor = self.monitor(daemon)
        monitor.follow({42})
        monitor.follow({42})
        monitor.follow({41, 42})
        self.assertEqual([[42], [41, 42]], daemon.watches)

    def test_a_refusal_is_said_once_and_reads_are_not_used(self):
        log = self.useFixture(fixtures.FakeLogger())
        monitor = self.monitor(FakeAccessDaemon(
            {}, fail=damon.DamonBusy('not ours')))
        monitor.follow({42})
        monitor.follow({41})
        self.assertIsNone(monitor.accessed(42))
        self.assertEqual(1, log.output.count('DAMON not used'))

    def test_a_kernel_without_damon_is_asked_once(self):
        log = self.useFixture(fixtures.FakeLogger())
        daemon = FakeAccessDaemon({}, fail=damon.NoDamon('no DAMON here'))
        monitor = self.monitor(daemon)
        monitor.follow({42})
        daemon.fail = None
        monitor.follow({41, 42})
        self.assertEqual([], daemon.watches)
        self.assertIn('no DAMON here', log.output)

    def test_the_daemon_says_so_where_the_kernel_has_no_damon(self):
        tree = self.useFixture(SysfsTree())
        self.assertRaisesRegex(
            damon.NoDamon, 'no DAMON sysfs interface', damon.start_watching,
            [42], 10000, AGGR, admin=os.path.join(tree.root, 'none'),
            marker=tree.marker)

    def test_what_a_watched_guest_accessed(self):
        monitor = self.monitor(FakeAccessDaemon(
            {42: [(0, MB, 1, 0), (MB, 2 * MB, 0, 100)]}))
        self.assertIsNone(monitor.accessed(42))  # not watched yet
        monitor.follow({42})
        self.assertEqual([(0, MB)], monitor.accessed(42))


class CensusWithReadsTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.daemon = faked.FakeDaemon(faked.PAGES)
        # Page 1 (unwritten, node 0) is read: DAMON saw its region.
        read = (faked.address(1), faked.address(2))
        self.access = FakeAccessDaemon({42: [(*read, 3, 0)]})
        monitor = accesses.AccessMonitor(period=10.0)
        monitor.daemon = lambda: self.access
        self.temps = pagetemps.PageTemperature(
            faked.FakeMover(self.daemon, [faked.vma(
                resident={0: 5, 1: 1, 2: 1})]), monitor)

    def test_a_page_only_read_counts_as_hot_and_stays(self):
        self.temps.census('u1', 42)
        self.daemon.write_again()
        self.assertEqual({0: 3 / 256, 1: 1 / 256, 2: 1 / 256},
                         self.temps.census('u1', 42))
        self.assertEqual(2, self.temps.move('u1', 42, 0, 2, 10,
                                            backend.PICK_COLD))
        self.assertEqual([(42, [3], 2), (42, [6], 2)], self.daemon.moves)

    def test_damon_follows_the_guests_censused_and_forgets_the_gone(self):
        self.temps.census('u1', 42)
        self.temps.census('u2', 43)
        self.temps.forget_all_but({'u2'})
        self.temps.close()
        self.temps.close()
        self.assertEqual([[42], [42, 43], [43], 'released'],
                         self.access.watches)
