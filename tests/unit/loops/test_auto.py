from nova_numa_policy.contracts import locality
from nova_numa_policy.loops import auto
from tests import base as test_base
from tests.unit.loops import snapshots as s


class ClassifyTest(test_base.TestCase):

    def test_seed000_table1_boundaries(self):
        config = auto.Config()
        for imb, policy in ((0.07, auto.FIRST_TOUCH),
                            (0.84, auto.FIRST_TOUCH),
                            (0.85, auto.FT_CARREFOUR),
                            (1.30, auto.FT_CARREFOUR),
                            (1.31, auto.IL_CARREFOUR),
                            (2.63, auto.IL_CARREFOUR)):
            self.assertEqual(policy, auto.classify(imb, config), imb)


class AutoDecideTest(test_base.TestCase):

    def _run(self, accs, config=None):
        strategy = auto.Auto()
        state = strategy.initial_state()
        config = config or auto.Config()
        for acc in accs:
            snap = s.snapshot([s.instance(cpus=(0, 4), mem={0: 900,
                                                            1: 100},
                                          acc=acc)])
            actions, state = strategy.decide(snap, state, config)
        return state['choice']['vm'].value, actions

    def test_switch_needs_the_pin_count(self):
        balanced = {0: 10 ** 9, 1: 10 ** 9}
        skewed = {0: 10 ** 9, 1: 0}  # imbalance 100 %
        self.assertEqual(auto.FIRST_TOUCH,
                         self._run([balanced, skewed, skewed])[0])
        self.assertEqual(auto.FT_CARREFOUR,
                         self._run([balanced] + [skewed] * 3)[0])

    def test_does_not_step_down_before_a_revisit(self):
        balanced = {0: 10 ** 9, 1: 10 ** 9}
        skewed = {0: 10 ** 9, 1: 0}
        self.assertEqual(auto.FT_CARREFOUR,
                         self._run([skewed] + [balanced] * 5)[0])
        config = auto.Config(revisit_periods=3)
        self.assertEqual(auto.FIRST_TOUCH,
                         self._run([skewed] + [balanced] * 5, config)[0])

    def test_ignores_guests_not_asking_for_auto(self):
        snap = s.snapshot([s.instance(policy='first-touch', cpus=(0,),
                                      acc={0: 1, 1: 0})])
        actions, state = auto.Auto().decide(snap, auto.Auto().initial_state(),
                                            auto.Config())
        self.assertEqual(([], {}), (actions, state['choice']))


class KernelBalancedSignalTest(test_base.TestCase):
    """A class measured from hinting faults, with the kernel balancing."""

    def _choose(self, signal, periods=4, measured=True):
        topo = s.topology(nodes=4)
        strategy = auto.Auto()
        state = strategy.initial_state()
        # Every sampled access (or, not measured, all memory) on node 0,
        # vCPUs on all four nodes: an imbalance of 173 %, interleave +
        # Carrefour's class.
        inst = s.instance(cpus=(0, 4, 8, 12), mem={0: 1024},
                          acc={0: 4000} if measured else None,
                          signal=signal if measured else None)
        for _ in range(periods):
            actions, state = strategy.decide(s.snapshot([inst], topo),
                                             state, auto.Config())
        return state['choice']['vm'].value, actions

    def test_counted_accesses_interleave(self):
        choice, actions = self._choose(locality.SIGNAL_COUNTERS)
        self.assertEqual(auto.IL_CARREFOUR, choice)
        self.assertTrue(actions)
        self.assertIn('interleaving', actions[0].reason)

    def test_sampled_by_the_balancing_kernel_the_choice_stops_below(self):
        choice, actions = self._choose(locality.SIGNAL_HINTING_FAULTS)
        self.assertEqual(auto.FT_CARREFOUR, choice)
        self.assertFalse([a for a in actions if 'interleav' in a.reason])

    def test_before_anything_is_measured_memory_alone_never_interleaves(self):
        # The kernel has not sampled the guest yet: memory per node stands
        # in, and a choice made on it would hold until the revisit.
        choice, actions = self._choose(None, measured=False)
        self.assertEqual(auto.FT_CARREFOUR, choice)
        self.assertFalse([a for a in actions if 'interleav' in a.reason])
