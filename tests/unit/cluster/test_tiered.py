"""The tiered cluster: nova stock, the kernel's tiering alone, and ours.

Every number here is simulated (lab/numa_policy_lab/cluster/tiered.py):
the model with the CXL figures of sim/constants.py, none measured.
"""

import io
import json
import os

import numpy as np

from numa_policy_lab import cli
from numa_policy_lab.cluster import tiered
from numa_policy_lab.sim import tiers
from numa_policy_lab.sim import topology
from tests import base as test_base

FLAVOR = {f.name: f for f in tiered.FLAVORS}
TOP, TIERED_75 = FLAVOR['latency, top'], FLAVOR['latency, tiered 75 %']
TIERED_25, ANY = FLAVOR['batch, tiered 25 %'], FLAVOR['batch, any']
DRAM_MB = 24576  # xeon2_cxl's two CPU nodes
RESULTS = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'doc',
                       'source', 'results.rst')


def _stream(*flavors):
    return [tiered.arrival(f, f'g{k}') for k, f in enumerate(flavors)]


def _run(strategy, flavors, n_hosts=1, seed=0):
    return tiered.run(strategy, seed, n_hosts=n_hosts,
                      guests=_stream(*flavors))


def _below(host, guest):
    """MB of each segment of ``guest`` on the host's expander."""
    return guest.vm.seg_mb[:, host.sim.tier_node]


def _on_dram(host, guest):
    return guest.vm.seg_mb[:, :host.sim.n_nodes].sum()


class TinyStreamTest(test_base.TestCase):
    """Hand-made streams on one host: who is placed, where its pages go."""

    # Three guests fill the DRAM, then a top guest arrives.
    FULL_THEN_TOP = (ANY, ANY, ANY, TOP)

    def test_ours_refuses_a_top_guest_where_the_top_tier_is_full(self):
        hosts, refused = _run(tiered.MEASURED_FREE, self.FULL_THEN_TOP)
        self.assertEqual(['g3'], [g.name for g in refused])
        self.assertEqual(['g0', 'g1', 'g2'],
                         [g.name for g in hosts[0].guests])
        self.assertIsNone(refused[0].vm)

    def test_stock_puts_the_same_top_guest_on_the_lower_tier(self):
        hosts, refused = _run(tiered.STOCK, self.FULL_THEN_TOP)
        self.assertEqual([], refused)
        host = hosts[0]
        first, top = host.guests[:3], host.guests[3]
        # First-touch in arrival order: the DRAM to the first three ...
        for g in first:
            self.assertEqual(0.0, _below(host, g).sum())
        # ... the top guest's every page, hot ones too, to the expander.
        np.testing.assert_allclose(top.sizes, _below(host, top))
        self.assertGreater(1.0 - top.throughput, 0.4)

    def test_what_if_counts_the_demotable_pages_free(self):
        hosts, refused = _run(tiered.DEMOTABLE_FREE, self.FULL_THEN_TOP)
        self.assertEqual([], refused)
        host = hosts[0]
        top = host.guests[3]
        self.assertEqual(0.0, _below(host, top).sum())
        # The any guests make the room: 8 GiB of their coldest pages.
        self.assertAlmostEqual(
            8192.0, sum(_below(host, g).sum() for g in host.guests[:3]))
        for g in host.guests[:3]:
            self.assertEqual(0.0, _below(host, g)[:-1].sum())

    def test_any_guests_cold_pages_are_no_room_for_ours(self):
        # Their writes are not measured: the DRAM they fill is taken.
        hosts, refused = _run(tiered.OURS, self.FULL_THEN_TOP)
        self.assertEqual(['g3'], [g.name for g in refused])

    # Three batch guests at 25 % fill the DRAM, then a top guest.
    TIERED_THEN_TOP = (TIERED_25, TIERED_25, TIERED_25, TOP)

    def test_tiered_guests_cold_pages_above_their_floors_make_room(self):
        _, before = _run(tiered.MEASURED_FREE, self.TIERED_THEN_TOP)
        self.assertEqual(['g3'], [g.name for g in before])
        hosts, refused = _run(tiered.OURS, self.TIERED_THEN_TOP)
        self.assertEqual([], refused)
        host = hosts[0]
        self.assertEqual(0.0, _below(host, host.guests[3]).sum())

    # Their working sets (26.3 GiB) exceed the DRAM (24 GiB).
    EIGHT = (TOP, TIERED_25) * 4

    def test_the_kernel_demotes_a_latency_guests_hot_pages(self):
        hosts, refused = _run(tiered.KERNEL, self.EIGHT)
        self.assertEqual([], refused)
        host = hosts[0]
        memory = sum(g.memory_mb for g in host.guests)
        cold = sum(g.sizes[-1] for g in host.guests)
        hot = sum(g.sizes[:-1].sum() for g in host.guests)
        share = (memory - DRAM_MB - cold) / hot
        for g in host.guests:
            # Every cold page down, and the same share of every guest's
            # hot pages, whatever it asked for.
            self.assertAlmostEqual(g.sizes[-1], _below(host, g)[-1])
            self.assertAlmostEqual(share * g.sizes[:-1].sum(),
                                   _below(host, g)[:-1].sum())
        latency = [g for g in host.guests if g.klass == TOP.name]
        self.assertTrue(all(_below(host, g)[:-1].sum() > 0
                            for g in latency))

    def test_kernel_tiering_is_the_tiers_any_mode_on_each_host(self):
        hosts, _ = _run(tiered.KERNEL, self.EIGHT)
        host = hosts[0]
        expected = tiers.blind_demotion(host.guests, DRAM_MB)
        for g, lower in zip(host.guests, expected):
            np.testing.assert_allclose(lower, _below(host, g), atol=1e-6)

    def test_ours_keeps_top_guests_whole_on_the_dram(self):
        hosts, refused = _run(tiered.MEASURED_FREE, self.EIGHT)
        host = hosts[0]
        # The first three fill the DRAM (their pages above the floors
        # count as taken); the top guests after them are refused, a
        # tiered 25 % one needs 2 GiB of it and has none either.
        self.assertEqual(['g0', 'g1', 'g2'], [g.name for g in host.guests])
        self.assertEqual(['g3', 'g4', 'g5', 'g6', 'g7'],
                         [g.name for g in refused])
        for g in host.guests:
            if g.klass == TOP.name:
                self.assertEqual(0.0, _below(host, g).sum())
                self.assertAlmostEqual(g.memory_mb, _on_dram(host, g))

    # A tiered 75 % guest, then batch guests that ask nothing of the
    # tiers: their working sets alone exceed the DRAM it leaves.
    FLOOR = (TIERED_75,) + (ANY,) * 7

    def test_ours_keeps_the_floor_where_reclaim_takes_hot_pages(self):
        hosts, refused = _run(tiered.MEASURED_FREE, self.FLOOR)
        self.assertEqual([], refused)
        host = hosts[0]
        kept, others = host.guests[0], host.guests[1:]
        self.assertAlmostEqual(6144.0, _on_dram(host, kept))
        self.assertEqual(0.0, _below(host, kept)[:-1].sum())
        # The any guests gave every cold page and some hot ones.
        for g in others:
            self.assertAlmostEqual(g.sizes[-1], _below(host, g)[-1])
            self.assertGreater(_below(host, g)[:-1].sum(), 0.0)

    def test_the_kernel_alone_takes_the_same_guests_hot_pages(self):
        hosts, _ = _run(tiered.KERNEL, self.FLOOR)
        host = hosts[0]
        guest = host.guests[0]
        self.assertGreater(_below(host, guest)[:-1].sum(), 0.0)
        ours = _run(tiered.MEASURED_FREE, self.FLOOR)[0][0].guests[0]
        self.assertLess(1.0 - ours.throughput, 1.0 - guest.throughput)


def _host(flavors, expander_mb=49152):
    """One host holding ``flavors``' guests, its expander that large."""
    sim = topology.with_lower_tier(topology.xeon2(), memory_mb=expander_mb,
                                   attached_node=0)
    host = tiered.Host('h', sim, _stream(*flavors))
    for cpu, g in enumerate(host.guests):
        g.cpu = cpu
    return host


class ColdVacatedTest(test_base.TestCase):
    """The view of ``ours`` (report 1.9's demotable memory), on one host."""

    HOSTS = {
        'any guests': (ANY,) * 3,
        'top and tiered 25 %': (TOP, TIERED_25) * 4,
        'tiered 75 % and any': (TIERED_75,) + (ANY,) * 7,
        'every flavor': (TOP, TIERED_75, TIERED_25, ANY) * 2,
        'tiered 75 % and two any': (TIERED_75, ANY, ANY),
    }

    def _check(self, host):
        view = tiered.cold_vacated_parts(host)
        held = tiered.held_parts(host)
        floors = tiered._floors(host)
        for g, seen, ours, floor in zip(host.guests, view, held, floors):
            # No hot page lower than ours puts it ...
            np.testing.assert_allclose(ours[:-1], seen[:-1], atol=1e-6)
            # ... no page of the floor, and no page above it ours holds
            # on the DRAM the view moves, beyond its cold ones.
            self.assertGreaterEqual(seen[-1], ours[-1] - 1e-6)
            self.assertLessEqual(seen.sum(), g.memory_mb - floor + 1e-6)
            above = tiers.demoted(g.sizes, g.memory_mb - floor)
            self.assertLessEqual(seen[-1], above[-1] + 1e-6)
        # Never more counted down than the expander holds.
        room = host.sim.memory_mb_by_node()[host.sim.tier_node]
        self.assertLessEqual(sum(v.sum() for v in view), room + 1e-6)
        return view, held

    def test_never_a_hot_page_never_beyond_the_expander(self):
        for name, flavors in self.HOSTS.items():
            for expander_mb in (49152, 40960, 8192, 4096, 0.0):
                host = _host(flavors, expander_mb)
                if host.claimed_mb() > host.sim.memory_mb_by_node().sum():
                    continue  # nova's RAM filter would refuse one of them
                with self.subTest(host=name, expander_mb=expander_mb):
                    self._check(host)

    def test_every_tiered_cold_page_above_its_floor_where_room_allows(self):
        host = _host((TOP, TIERED_75, TIERED_25, ANY))
        view, held = self._check(host)
        for g, seen, floor in zip(host.guests[1:3], view[1:3],
                                  tiered._floors(host)[1:3]):
            above = tiers.demoted(g.sizes, g.memory_mb - floor)
            self.assertAlmostEqual(above[-1], seen[-1])
        self.assertEqual(0.0, view[0].sum())  # the top guest: no floor above
        # The any guest's pages stay where ours puts them.
        np.testing.assert_allclose(held[3], view[3])

    def test_a_small_expander_caps_the_room_in_proportion(self):
        host = _host((TIERED_25,) * 3, expander_mb=4096)
        view, held = self._check(host)
        # Ours demotes nothing (24 GiB of pages, 24 GiB of DRAM) ...
        self.assertAlmostEqual(0.0, sum(h.sum() for h in held))
        # ... the view counts the expander's 4 GiB, a third per guest.
        for seen in view:
            self.assertAlmostEqual(4096.0 / 3, seen[-1])

    def test_it_places_as_many_guests_as_ours_or_more(self):
        streams = [TinyStreamTest.FULL_THEN_TOP, TinyStreamTest.EIGHT,
                   TinyStreamTest.FLOOR, TinyStreamTest.TIERED_THEN_TOP
                   ] + list(self.HOSTS.values())
        for flavors in streams:
            with self.subTest(flavors=[f.name for f in flavors]):
                ours = _run(tiered.MEASURED_FREE, flavors)[1]
                cold = _run(tiered.OURS, flavors)[1]
                self.assertLessEqual(len(cold), len(ours))
        self.assertLess(len(_run(tiered.OURS,
                                 TinyStreamTest.TIERED_THEN_TOP)[1]),
                        len(_run(tiered.MEASURED_FREE,
                                 TinyStreamTest.TIERED_THEN_TOP)[1]))


class StudyTest(test_base.TestCase):

    def test_the_stream(self):
        guests = tiered.stream(0)
        self.assertEqual(len(tiered.FLAVORS) * tiered.GUESTS_PER_FLAVOR,
                         len(guests))
        self.assertEqual(len(guests), len({g.name for g in guests}))
        sim = topology.xeon2_cxl()
        memory = sum(g.memory_mb for g in guests)
        hot = sum(g.sizes[:-1].sum() for g in guests)
        # Fits the cluster's memory; its working sets exceed the DRAM.
        self.assertLessEqual(memory,
                             tiered.N_HOSTS * sim.memory_mb_by_node().sum())
        self.assertGreater(hot, tiered.N_HOSTS * DRAM_MB)
        self.assertEqual(tiered.N_HOSTS * sim.n_cpus, len(guests))

    def test_deterministic_per_seed(self):
        def placements(strategy, seed):
            hosts, refused = tiered.run(strategy, seed)
            return ([(h.name, g.name, g.cpu, g.throughput)
                     for h in hosts for g in h.guests],
                    [g.name for g in refused])
        for strategy in tiered.STRATEGIES:
            self.assertEqual(placements(strategy, 3),
                             placements(strategy, 3))
        self.assertNotEqual([g.name for g in tiered.stream(3)],
                            [g.name for g in tiered.stream(4)])
        self.assertEqual(tiered.rows(range(2)), tiered.rows(range(2)))

    def test_every_strategy_keeps_to_the_hosts_capacity(self):
        for strategy in tiered.STRATEGIES:
            hosts, refused = tiered.run(strategy, 1)
            placed = sum(len(h.guests) for h in hosts)
            self.assertEqual(len(tiered.stream(1)), placed + len(refused))
            for h in hosts:
                used = sum(g.vm.seg_mb.sum(axis=0) for g in h.guests)
                self.assertTrue(np.all(
                    used <= h.sim.memory_mb_by_node() + 1e-6), strategy)
                self.assertEqual(len(h.guests), len({g.cpu
                                                     for g in h.guests}))

    def test_rows(self):
        rows = {r.strategy: r for r in tiered.rows(range(2))}
        self.assertEqual(list(tiered.STRATEGIES), list(rows))
        stock, kernel = rows[tiered.STOCK], rows[tiered.KERNEL]
        ours = rows[tiered.MEASURED_FREE]
        what_if, cold = rows[tiered.DEMOTABLE_FREE], rows[tiered.OURS]
        for r in (stock, kernel):
            self.assertEqual(r.guests, sum(r.placed.values()))
            self.assertEqual(0.0, r.floors_gib)
        # The same guests on the same hosts, pages placed otherwise.
        self.assertAlmostEqual(stock.lower_gib, kernel.lower_gib)
        self.assertGreater(kernel.tput, stock.tput)
        self.assertLess(sum(ours.placed.values()),
                        sum(what_if.placed.values()))
        self.assertLessEqual(sum(ours.placed.values()),
                             sum(cold.placed.values()))
        self.assertLessEqual(sum(cold.placed.values()),
                             sum(what_if.placed.values()))
        self.assertGreater(ours.floors_gib, 0.0)
        self.assertLessEqual(ours.floors_gib, ours.dram_gib)
        for k in (TOP.name, TIERED_75.name):
            self.assertLess(ours.slowdown[k], kernel.slowdown[k])
        body = tiered.flavor_table(list(rows.values())).splitlines()[3:-1]
        self.assertEqual(len(rows) * len(tiered.FLAVORS), len(body))
        self.assertTrue(all(line.startswith('simulated') for line in body))


class CliTest(test_base.TestCase):

    def _run(self, argv):
        out = io.StringIO()
        return cli.main(['simulate', 'tiered-cluster'] + argv,
                        out), out.getvalue()

    def test_text_says_simulated(self):
        rc, text = self._run(['--seeds', '1'])
        self.assertEqual(0, rc)
        self.assertTrue(text.startswith('SIMULATED'))
        self.assertIn('seeds 0..0', text.splitlines()[0])
        for name in tiered.STRATEGIES:
            self.assertIn(f'simulated  {name}', text)

    def test_json(self):
        rc, text = self._run(['--seed', '2', '--seeds', '2', '--json'])
        self.assertEqual(0, rc)
        report = json.loads(text)
        self.assertIs(True, report['simulated'])
        self.assertEqual([2, 3], report['seeds'])
        self.assertEqual(list(tiered.STRATEGIES),
                         [r['strategy'] for r in report['rows']])
        for r in report['rows']:
            self.assertEqual(sorted(f.name for f in tiered.FLAVORS),
                             sorted(r['slowdown']))


class ResultsPageTest(test_base.TestCase):
    """doc/source/results.rst shows what the command prints, 10 seeds."""

    def test_the_tables_are_the_commands_output(self):
        with open(RESULTS) as f:
            page = f.read()
        rows = tiered.rows(range(10))
        tables = (tiered.cluster_table(rows), tiered.flavor_table(rows))
        # Not assertIn, whose message would print the whole page: the
        # tables the page lacks (or has with other numbers), if any.
        self.assertEqual([], [t for t in tables if t not in page])
        self.assertIn('``numa-policy-lab simulate tiered-cluster '
                      '--seeds 10``', page)
