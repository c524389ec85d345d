from unittest import mock

import numpy as np

from numa_policy_lab.cluster import evidence
from tests import base as test_base


def _cell(strategy, means, best_static=1.0, scenario='netperf', pages=0,
          digests=(), refusals=0.0, bound=None):
    bounds = () if bound is None else (bound,) * len(means)
    return evidence.Cell(scenario, strategy, tuple(range(len(means))),
                         tuple(means), best_static, pages, 0, 0,
                         guard_refusals=refusals, digests=tuple(digests),
                         bounds=bounds)


def _sources(stream, host, unguarded, scenario='moderate'):
    off = _cell('ours', unguarded, None, scenario)
    return evidence.Sources(scenario, 'ours', True, evidence.rsd(stream),
                            evidence.rsd(host), off)


class FakeOutcome:
    """What ``evidence.cell`` reads from a run, nothing more."""

    def __init__(self, value):
        self.value = value
        self.throughput = np.full((1, 1), value)
        self.hosts, self.rejected = {}, []
        self.pages_moved = self.vcpu_moves = self.guard_refusals = 0
        self.kernel_pages_moved = 0
        self.bound = 1.0

    def mean(self):
        return self.value


class TieTest(test_base.TestCase):

    def _beats(self, cells):
        return [s for t, s in evidence.findings(cells)
                if t == evidence.BEATS]

    def test_a_tie_at_the_bound_says_no_strategy_can_do_better(self):
        cells = [_cell('ours', [0.9, 0.9], 0.9, bound=0.9),
                 _cell('nova-vswitch', [0.9, 0.9], 0.9, bound=0.9)]
        (miss,) = self._beats(cells)
        self.assertIn('ties nova-vswitch', miss)
        self.assertIn('at the best static placement', miss)
        self.assertIn('ours is at the bound (1.000 of it): no strategy can '
                      'do better here', miss)

    def test_a_tie_below_the_bound_does_not_say_nothing_is_left(self):
        # The best static placement is no bound: at it, a strategy that
        # moves pages might still do better.
        cells = [_cell('ours', [0.9, 0.9], 0.9, bound=1.0),
                 _cell('nova-vswitch', [0.9, 0.9], 0.9, bound=1.0)]
        (miss,) = self._beats(cells)
        self.assertIn('at the best static placement', miss)
        self.assertNotIn('no strategy can do better', miss)
        self.assertIn('ours reaches 0.900 of the bound', miss)
        self.assertIn('is not shown', miss)

    def test_loops_that_moved_pages_are_not_said_to_find_nothing(self):
        cells = [_cell('ours', [0.9, 0.9], 0.9, pages=10),
                 _cell('nova-vswitch', [0.9, 0.9], 0.9)]
        (miss,) = self._beats(cells)
        self.assertIn('at the best static placement', miss)
        self.assertNotIn('nothing to improve', miss)

    def test_identical_runs_are_the_same_placements_with_our_reason(self):
        cells = [_cell('ours', [0.8, 0.8], 0.9, 'low', digests=('a', 'b')),
                 _cell('nova-default', [0.8, 0.8], 0.9, 'low',
                       digests=('a', 'b'))]
        (miss,) = self._beats(cells)
        self.assertIn('placed every guest as nova-default did', miss)
        for plan in evidence.boot_reasons('low').values():
            self.assertIn(plan.reason, miss)
        self.assertIn(f'{0.8 / 0.9:.3f} of the best static placement', miss)

    def test_equal_means_from_different_runs_are_a_plain_miss(self):
        cells = [_cell('ours', [0.8, 0.8], 0.9, 'low', digests=('a', 'b')),
                 _cell('nova-default', [0.8, 0.8], 0.9, 'low',
                       digests=('a', 'c'))]
        (miss,) = self._beats(cells)
        self.assertIn('does not beat nova-default', miss)

    def test_a_lead_is_no_finding(self):
        cells = [_cell('ours', [0.9, 0.9], 0.9),
                 _cell('nova-default', [0.8, 0.8], 0.9)]
        self.assertEqual([], evidence.findings(cells))


class BoundFindingTest(test_base.TestCase):

    def test_every_row_above_its_bound_is_a_miss_naming_it(self):
        cells = [_cell('ours', [0.9, 0.9], bound=1.0),
                 _cell('ours, hardware samples', [0.9, 1.01], bound=1.0),
                 _cell('random', [1.2, 0.5], bound=1.0)]
        found = [s for t, s in evidence.findings(cells)
                 if t == evidence.BOUND]
        self.assertEqual(2, len(found))
        self.assertIn('netperf: ours, hardware samples, seed 1, reaches '
                      '1.010000, above the bound', found[0])
        self.assertIn('netperf: random, seed 0', found[1])
        self.assertFalse(evidence.check(cells)[0])

    def test_rounding_at_the_bound_is_no_miss(self):
        cells = [_cell('ours', [1.0 + 1e-12, 0.9], bound=1.0)]
        self.assertEqual([], [s for t, s in evidence.findings(cells)
                              if t == evidence.BOUND])

    def test_fractions_of_both_references(self):
        c = _cell('ours', [0.4, 0.6], best_static=0.4, bound=1.25)
        self.assertAlmostEqual(1.25, c.of_best_static)
        self.assertAlmostEqual(0.4, c.of_bound)
        self.assertIsNone(_cell('ours', [0.5]).of_bound)

    def test_a_cell_takes_every_runs_bound_or_none(self):
        runs = [FakeOutcome(0.5), FakeOutcome(0.6)]
        self.assertEqual((1.0, 1.0), evidence.cell('netperf', 'ours', (0, 1),
                                                   runs, None).bounds)
        runs[1].bound = None
        self.assertEqual((), evidence.cell('netperf', 'ours', (0, 1), runs,
                                           None).bounds)


class FindingsTest(test_base.TestCase):

    def test_each_miss_names_its_target(self):
        cells = [_cell('ours', [0.5, 0.9]), _cell('random', [0.9, 0.9])]
        targets = sorted(t for t, _ in evidence.findings(cells))
        self.assertEqual(sorted([evidence.FRACTION, evidence.SPREAD,
                                 evidence.BEATS]), targets)

    def test_check_is_the_sentences_of_the_findings(self):
        cells = [_cell('ours', [0.5, 0.9]), _cell('random', [0.9, 0.9])]
        met, misses = evidence.check(cells)
        self.assertFalse(met)
        self.assertEqual([s for _, s in evidence.findings(cells)], misses)

    def test_a_spread_miss_names_the_guard_when_it_accounts_for_it(self):
        cells = [_cell('ours', [0.4, 0.5], None, 'moderate', refusals=12),
                 _cell('nova-default', [0.3, 0.4], None, 'moderate')]
        spreads = {'moderate': _sources([0.4, 0.5], [0.4, 0.45],
                                        [0.5, 0.5])}
        (miss,) = [s for t, s in evidence.findings(cells, spreads)
                   if t == evidence.SPREAD]
        self.assertIn('the guard accounts for the miss', miss)
        self.assertIn('refused 12 loop actions per run', miss)
        self.assertIn('nova-default spreads '
                      f'{100 * evidence.rsd([0.3, 0.4]):.2f} %', miss)

    def test_a_spread_miss_names_the_stream_when_it_dominates(self):
        cells = [_cell('ours', [0.4, 0.5], None, 'moderate')]
        spreads = {'moderate': _sources([0.4, 0.5], [0.45, 0.46],
                                        [0.4, 0.5])}
        (miss,) = [s for _, s in evidence.findings(cells, spreads)]
        self.assertIn('the stream accounts for most of it', miss)
        self.assertNotIn('the guard accounts', miss)

    def test_a_spread_miss_names_the_hosts_when_they_dominate(self):
        cells = [_cell('ours', [0.4, 0.5], None, 'moderate')]
        spreads = {'moderate': _sources([0.45, 0.46], [0.4, 0.5],
                                        [0.4, 0.5])}
        (miss,) = [s for _, s in evidence.findings(cells, spreads)]
        self.assertIn('the hosts account for most of it', miss)


class SourcesTest(test_base.TestCase):

    def test_one_seed_varies_at_a_time_and_the_guard_goes_off(self):
        calls = []

        def run_one(scenario, strategy, seed, stream_seed=None, guard=None):
            calls.append((seed, stream_seed, guard))
            stream = seed if stream_seed is None else stream_seed
            # Distinct effects: the stream's in tenths, the hosts' in
            # hundredths, the guard's in thousandths.
            return FakeOutcome(1.0 + stream / 10 + seed / 100
                               + (guard is not None) / 1000)

        with mock.patch.object(evidence, 'run_one', run_one):
            found = evidence.sources('netperf', 'ours', [0, 1, 2])
        self.assertAlmostEqual(evidence.rsd([1.0, 1.1, 1.2]),
                               found.stream_rsd)
        self.assertAlmostEqual(evidence.rsd([1.0, 1.01, 1.02]),
                               found.host_rsd)
        self.assertEqual((1.001, 1.111, 1.221),
                         tuple(round(m, 6) for m in found.unguarded.means))
        self.assertEqual({evidence.UNGUARDED}, {g for _, _, g in calls
                                                if g is not None})
        self.assertTrue(found.same_flavors)


class DigestTest(test_base.TestCase):

    def test_a_digest_follows_throughput_and_hosts(self):
        a, b = FakeOutcome(0.5), FakeOutcome(0.5)
        self.assertEqual(evidence.digest(a), evidence.digest(b))
        b.hosts = {'guest': 1}
        self.assertNotEqual(evidence.digest(a), evidence.digest(b))
        self.assertNotEqual(evidence.digest(a),
                            evidence.digest(FakeOutcome(0.6)))


class BootReasonsTest(test_base.TestCase):

    def test_small_first_touch_flavors_are_left_to_the_kernel(self):
        plan = evidence.boot_reasons('io-mixed')['memcached']
        self.assertIsNone(plan.tune)
        self.assertIn("kernel's default", plan.reason)

    def test_first_touch_flavors_over_several_nodes_get_dealt_vcpus(self):
        plans = evidence.boot_reasons('low')
        self.assertTrue(plans)
        for plan in plans.values():
            self.assertIsNone(plan.tune.mode)
            self.assertEqual(12, len(plan.tune.vcpu_pins))
            self.assertIn('dealt', plan.reason)

    def test_nic_preferring_flavors_get_a_tune(self):
        plans = evidence.boot_reasons('netperf')
        self.assertTrue(all(p.tune is not None for p in plans.values()))
