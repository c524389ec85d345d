from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality
from nova_numa_policy.loops import carrefour
from tests import base as test_base
from tests.unit.loops import snapshots as s

BUSY = 10 ** 9  # accesses per 5 s period: 200 per microsecond

# (name, vCPU CPUs, memory per node, accesses per node, expected kind,
#  expected source -> target)
CASES = (
    ('good locality does nothing', (0, 4), {0: 512, 1: 512},
     {0: BUSY, 1: BUSY}, None, None),
    ('too few accesses does nothing', (0, 4), {0: 1024},
     {0: 1000, 1: 10}, None, None),
    ('imbalanced controllers spread hot pages', (0, 4), {0: 1024},
     {0: 2 * BUSY, 1: BUSY // 10}, 'interleave', (0, 1)),
    ('remote-only node moves pages to the accessors', (0, 1),
     {0: 512, 1: 512},
     {0: BUSY, 1: BUSY}, 'migrate', (1, 0)),
)


class CarrefourDecideTest(test_base.TestCase):

    def test_cases(self):
        topo = s.topology()
        for name, cpus, mem, acc, kind, move in CASES:
            inst = s.instance(cpus=cpus, mem=mem, acc=acc)
            actions = carrefour.decide_instance(topo, inst,
                                                carrefour.Config())
            if kind is None:
                self.assertEqual([], actions, name)
                continue
            self.assertTrue(actions, name)
            a = actions[0]
            self.assertIsInstance(a, backend.MovePages)
            self.assertIn(kind, a.reason, name)
            self.assertEqual(move, (a.source_node, a.target_node), name)
            self.assertLessEqual(a.pages, carrefour.Config().batch_pages)

    def test_only_carrefour_policies_and_never_hands_off(self):
        acc = {0: 2 * BUSY, 1: 0}
        snap = s.snapshot([
            s.instance('ft', (0, 4), {0: 1024}, acc, policy='first-touch'),
            s.instance('off', (0, 4), {0: 1024}, acc,
                       policy='first-touch+carrefour', hands_off='pinned'),
            s.instance('on', (0, 4), {0: 1024}, acc,
                       policy='first-touch+carrefour')])
        actions, _ = carrefour.Carrefour().decide(snap, {},
                                                  carrefour.Config())
        self.assertEqual({'on'}, {a.instance_uuid for a in actions})

    def test_without_counters_does_nothing(self):
        inst = s.instance(cpus=(0, 4), mem={0: 1024}, acc=None)
        self.assertEqual([], carrefour.decide_instance(
            s.topology(), inst, carrefour.Config()))


class SampledSignalTest(test_base.TestCase):
    """Hinting faults: shares from samples, and the kernel balancing too."""

    def decide(self, cpus, mem, acc, **config):
        inst = s.instance(cpus=cpus, mem=mem, acc=acc,
                          signal=locality.SIGNAL_HINTING_FAULTS)
        return carrefour.decide_instance(s.topology(), inst,
                                         carrefour.Config(**config))

    def test_enough_samples_act_however_low_their_rate(self):
        # 600 samples in 5 s is far below 50 accesses per microsecond:
        # as counters it would be an idle guest.
        actions = self.decide((0, 1), {0: 512, 1: 512}, {0: 100, 1: 500})
        self.assertEqual([(1, 0)], [(a.source_node, a.target_node)
                                    for a in actions])
        self.assertIn('migrate', actions[0].reason)

    def test_too_few_samples_say_nothing(self):
        self.assertEqual([], self.decide((0, 1), {0: 512, 1: 512},
                                         {0: 10, 1: 50}))
        self.assertTrue(self.decide((0, 1), {0: 512, 1: 512},
                                    {0: 10, 1: 50}, min_samples=60))

    def test_spreading_is_left_out_where_the_kernel_balances(self):
        # As counters, this imbalance spreads hot pages (CASES above);
        # with the kernel pulling pages back to their accessors it would
        # not stay spread.
        self.assertEqual([], self.decide((0, 4), {0: 1024},
                                         {0: 2000, 1: 100}))
        counted = carrefour.decide_instance(
            s.topology(), s.instance(cpus=(0, 4), mem={0: 1024},
                                     acc={0: 2 * BUSY, 1: BUSY // 10}),
            carrefour.Config())
        self.assertIn('interleave', counted[0].reason)
