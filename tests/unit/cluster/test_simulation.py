import os
import subprocess
import sys
from unittest import mock

import numpy as np

from nova_numa_policy.contracts import locality
from nova_numa_policy.loops import runner as loop_runner
from numa_policy_lab.cluster import evidence
from numa_policy_lab.cluster import scenarios
from numa_policy_lab.cluster import simulation
from numa_policy_lab.cluster import strategies
from tests import base as test_base

# Prints the digest of one run whose loops act and whose kernel draws
# matter, for the same run in another interpreter.
_DIGEST = ('from numa_policy_lab.cluster import evidence; '
           "print(evidence.digest(evidence.run_one('moderate', 'ours', 2)))")


class DeterminismTest(test_base.TestCase):

    def _run(self, seed, strategy='ours', scenario='low',
             signal=locality.SIGNAL_HINTING_FAULTS):
        spec = scenarios.SCENARIOS[scenario].build(seed)
        return simulation.run(spec, strategy, seed, signal=signal)

    def test_same_seed_gives_the_same_numbers(self):
        a, b = self._run(3), self._run(3)
        np.testing.assert_array_equal(a.throughput, b.throughput)
        self.assertEqual(a.hosts, b.hosts)
        self.assertEqual(a.pages_moved, b.pages_moved)
        self.assertEqual(a.mean(), b.mean())

    def test_same_seed_gives_the_same_numbers_when_loops_act(self):
        # On counters Carrefour spreads moderate's shared data.
        a, b = (self._run(2, scenario='moderate',
                          signal=locality.SIGNAL_COUNTERS) for _ in 'ab')
        self.assertGreater(a.pages_moved, 0)
        self.assertTrue(evidence.same_outcome(a, b))
        self.assertEqual(evidence.digest(a), evidence.digest(b))

    def test_same_seed_gives_the_same_numbers_when_the_kernel_acts(self):
        # nova's scattered vCPUs: the kernel brings memory to them.
        a, b = (self._run(2, 'nova-default', 'moderate') for _ in 'ab')
        self.assertGreater(a.kernel_pages_moved, 0)
        self.assertTrue(evidence.same_outcome(a, b))
        self.assertEqual(evidence.digest(a), evidence.digest(b))

    def _digest_in_process(self, hash_seed):
        env = dict(os.environ, PYTHONHASHSEED=str(hash_seed))
        out = subprocess.run([sys.executable, '-c', _DIGEST], env=env,
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()

    def test_same_seed_gives_the_same_numbers_in_other_processes(self):
        # Another interpreter and another order of sets and dicts of
        # strings: nothing but the seed may decide the numbers.
        here = evidence.digest(evidence.run_one('moderate', 'ours', 2))
        self.assertEqual([here, here], [self._digest_in_process(1),
                                        self._digest_in_process(2)])

    def test_another_seed_gives_another_stream(self):
        # The seed must matter, or the RSD over seeds would prove nothing.
        a, b = self._run(3, 'random'), self._run(4, 'random')
        self.assertNotEqual(a.hosts, b.hosts)


class StreamTest(test_base.TestCase):

    def test_final_flavors_do_not_depend_on_the_seed(self):
        # One best static placement serves every seed only if this holds.
        def final(seed):
            spec = scenarios.SCENARIOS['io-mixed'].build(seed)
            return sorted(g.app.name for g in spec.guests
                          if g.depart is None)
        self.assertEqual(final(0), final(7))

    def test_every_scenario_ends_with_the_same_flavors_in_every_seed(self):
        for name in scenarios.SCENARIOS:
            self.assertTrue(evidence.same_final_flavors(name, range(10)),
                            name)

    def test_stream_seed_fixes_the_stream_and_seed_the_hosts(self):
        fixed = evidence.run_one('netperf', 'random', 1, stream_seed=0)
        self.assertEqual(list(scenarios.SCENARIOS['netperf'].build(0)
                              .guests), fixed.guests)
        # The random strategy draws from the hosts' seed.
        self.assertNotEqual(evidence.run_one('netperf', 'random', 0).hosts,
                            fixed.hosts)

    def test_churn_replaces_guests_after_the_arrivals(self):
        spec = scenarios.SCENARIOS['netperf'].build(0)
        gone = [g for g in spec.guests if g.depart is not None]
        self.assertEqual(6, len(gone))
        self.assertTrue(all(g.depart == spec.perturbation for g in gone))
        self.assertLess(max(g.arrive for g in spec.guests),
                        spec.periods - spec.window)


class OutcomeTest(test_base.TestCase):

    def test_a_rejected_guest_counts_zero(self):
        spec = scenarios.SCENARIOS['netperf-dense'].build(0)
        outcome = simulation.run(spec, 'nova-vswitch', 0)
        # 36 guests for 3 NIC nodes of 8 CPUs: a static affinity refuses.
        self.assertGreater(len(outcome.rejected), 0)
        final = {g.uuid for g in outcome.guests if g.depart is None}
        refused = final & set(outcome.rejected)
        self.assertGreater(len(refused), 0)
        self.assertEqual(len(refused), int((outcome.final() == 0.0).sum()))

    def test_ours_runs_the_loops_and_baselines_do_not(self):
        spec = scenarios.SCENARIOS['moderate'].build(0)
        ours, default = (
            simulation.run(spec, name, 0, signal=locality.SIGNAL_COUNTERS)
            for name in (strategies.Ours.name, strategies.NovaDefault.name))
        self.assertGreater(ours.pages_moved, 0)
        self.assertEqual(0, default.pages_moved)


class GuardTest(test_base.TestCase):

    def _run(self, guard):
        made = []
        real = loop_runner.Runner

        def runner(*args, **kwargs):
            made.append(real(*args, **kwargs))
            return made[-1]

        spec = scenarios.SCENARIOS['moderate'].build(0)
        with mock.patch.object(simulation.loop_runner, 'Runner', runner):
            outcome = simulation.run(spec, strategies.Ours.name, 0, guard)
        return outcome, made

    def test_the_agents_get_the_guard_setting(self):
        outcome, made = self._run(evidence.UNGUARDED)
        self.assertEqual(2, len(made))
        self.assertEqual([evidence.UNGUARDED] * 2, [r.guard for r in made])
        self.assertEqual(0, outcome.guard_refusals)

    def test_refusals_are_counted_over_every_agent(self):
        outcome, made = self._run(None)
        self.assertTrue(all(r.guard.enabled for r in made))
        self.assertEqual(sum(r.actions_refused for r in made),
                         outcome.guard_refusals)


class ConsolidationTest(test_base.TestCase):
    """Which guests share a host follows the stream; what they get must not.

    Spread over every node, the pairs the arrival order made spread ours
    2.9 % over seeds; each large guest on its own half of the host keeps
    it within the 2 % target.
    """

    def test_ours_spreads_at_most_2_percent_over_10_seeds(self):
        # On counters, where Carrefour spreads the shared data; on hinting
        # faults it may not, and results.rst says what that costs.
        means = [evidence.run_one('consolidation', evidence.COUNTERS,
                                  seed).mean() for seed in range(10)]
        self.assertLessEqual(evidence.rsd(means), evidence.MAX_RSD)
        self.assertGreaterEqual(np.mean(means) / evidence.best_static_of(
            'consolidation'), evidence.MIN_FRACTION)
