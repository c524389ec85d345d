import dataclasses

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality
from nova_numa_policy.loops import brm
from tests import base as test_base
from tests.unit.loops import snapshots as s


class UpdateTest(test_base.TestCase):

    def test_ewma_seven_eighths(self):
        config = brm.Config()
        st = brm.update(None, 0, 0.8, [1.0, 1.0], config)
        st = brm.update(st, 0, 0.0, [1.0, 1.0], config)
        self.assertAlmostEqual(0.7, st.unc[0])

    def test_probability_bounded_and_bias_to_lowest(self):
        config = brm.Config(prob_step=40)
        st = None
        for _ in range(5):
            st = brm.update(st, 0, 1.0, [1.0, 0.5, 0.2], config)
        self.assertEqual(100, st.prob)
        self.assertEqual(2, st.bias)
        for _ in range(5):
            st = brm.update(st, 0, 0.01, [1.0, 5.0, 5.0], config)
        self.assertEqual(0, st.prob)


class BrmDecideTest(test_base.TestCase):

    def _run(self, seed, periods=6, hands_off=None, penalty=(0.5, 0.5)):
        strategy = brm.Brm()
        state = strategy.initial_state(seed)
        # vCPU 1 runs on node 1, away from its memory and its sibling.
        inst = s.instance(cpus=(0, 4), mem={0: 1024}, penalty=penalty,
                          hands_off=hands_off)
        moves = []
        for _ in range(periods):
            actions, state = strategy.decide(s.snapshot([inst]), state,
                                             brm.Config())
            moves.extend(actions)
        return moves

    def test_moves_the_remote_vcpu_to_its_bias_node(self):
        moves = self._run(seed=1)
        self.assertTrue(moves)
        self.assertIsInstance(moves[0], backend.PinVcpu)
        self.assertEqual((1, frozenset(range(4))),
                         (moves[0].vcpu, moves[0].cpus))

    def test_deterministic_for_a_seed(self):
        self.assertEqual(self._run(seed=3), self._run(seed=3))

    def test_insensitive_and_hands_off_vcpus_stay(self):
        self.assertEqual([], self._run(seed=1, penalty=(0.01, 0.01)))
        self.assertEqual([], self._run(seed=1, hands_off='nova owns it'))

    def test_on_a_host_with_a_signal_an_unsampled_vcpu_waits(self):
        # The same guest as the proxy test below, on a host whose kernel
        # samples and balances: its memory is on its way to the vCPU.
        guest = s.instance(cpus=(0, 4), mem={0: 1024})
        strategy = brm.Brm()
        state = strategy.initial_state(1)
        snapshot = dataclasses.replace(
            s.snapshot([guest]),
            locality_signal=locality.SIGNAL_HINTING_FAULTS)
        for _ in range(8):
            actions, state = strategy.decide(snapshot, state, brm.Config())
            self.assertEqual([], actions)

    def test_proxy_without_counters_still_finds_the_memory(self):
        # The snapshot never changes here, so the move may be repeated.
        moves = self._run(seed=1, penalty=None)
        self.assertTrue(moves)
        self.assertEqual({(1, frozenset(range(4)))},
                         {(m.vcpu, m.cpus) for m in moves})


class SampledNetworkBoundTest(test_base.TestCase):
    """Hinting faults see memory, not the NIC."""

    def _decide(self, signal, io_rate, sampled=True):
        topo = s.topology()
        # vCPU on node 0, every sampled access on node 1: as memory
        # distance alone, it should move. Not sampled yet: the distance
        # proxy says the same.
        inst = s.instance(cpus=(0,), mem={1: 1024},
                          acc={1: 5000} if sampled else None,
                          penalty=(1.0,) if sampled else None,
                          policy='first-touch', io_rate=io_rate,
                          signal=signal if sampled else None)
        strategy = brm.Brm()
        state = strategy.initial_state()
        moved = []
        for _ in range(8):
            actions, state = strategy.decide(s.snapshot([inst], topo),
                                             state, brm.Config())
            moved += actions
        return moved

    def test_a_network_bound_guest_is_left_to_vnuioa(self):
        self.assertEqual([], self._decide(locality.SIGNAL_HINTING_FAULTS,
                                          io_rate=5000.0))

    def test_before_its_first_samples_too(self):
        # The proxy is the distance to its memory, as blind to the NIC.
        self.assertEqual([], self._decide(locality.SIGNAL_HINTING_FAULTS,
                                          io_rate=5000.0, sampled=False))
        self.assertTrue(self._decide(None, io_rate=10.0, sampled=False))

    def test_a_quiet_guest_still_follows_its_samples(self):
        self.assertTrue(self._decide(locality.SIGNAL_HINTING_FAULTS,
                                     io_rate=10.0))

    def test_on_counters_the_penalty_includes_the_nic(self):
        self.assertTrue(self._decide(locality.SIGNAL_COUNTERS,
                                     io_rate=5000.0))
