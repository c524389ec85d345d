"""The do-no-harm guard, on hand-written snapshots."""

import testtools

from nova_numa_policy import backend
from nova_numa_policy.loops import guard
from tests.unit.loops import snapshots as s


def _snap(low_acc):
    return s.snapshot([
        s.instance('low', (0, 4), {0: 512, 1: 512},
                   acc={0: low_acc, 1: low_acc}),
        s.instance('big', (1, 5), {0: 1024}, acc={0: 9000})])


def _move(node=1):
    return backend.MovePages(instance_uuid='big', source_node=0,
                             target_node=node, pages=10, reason='t')


class GuardTest(testtools.TestCase):

    def _state_after(self, samples):
        config = guard.Config()
        state = guard.initial_state()
        for k, acc in enumerate(samples):
            state = guard.observe(_snap(acc), state, config)
            if k == 0:
                state = guard.disturb(_snap(acc), state, config, _move())
        return state, config

    def test_undisturbed_neighbour_does_not_block(self):
        state, config = self._state_after([1000, 1000])
        self.assertIsNone(guard.refusal(_snap(1000), state, config, _move()))

    def test_slowed_neighbour_blocks_moves_onto_its_nodes(self):
        state, config = self._state_after([1000, 950, 950])
        why = guard.refusal(_snap(950), state, config, _move())
        self.assertIn('low', why)

    def test_slowdown_within_tolerance_does_not_block(self):
        state, config = self._state_after([1000, 995, 995])
        self.assertIsNone(guard.refusal(_snap(995), state, config, _move()))

    def test_disabled_guard_refuses_nothing(self):
        state, _ = self._state_after([1000, 900, 900])
        config = guard.Config(enabled=False)
        self.assertIsNone(guard.refusal(_snap(900), state, config, _move()))

    def test_one_guest_per_node_per_period_for_vcpus(self):
        pin = backend.PinVcpu(instance_uuid='big', vcpu=0,
                              cpus=frozenset({4}), reason='t')
        why = guard.refusal(_snap(1000), {}, guard.Config(), pin,
                            arrivals={1: 'other'})
        self.assertIn('already receives other', why)
        self.assertIsNone(guard.refusal(_snap(1000), {}, guard.Config(), pin,
                                        arrivals={1: 'big'}))

    def test_worse_off_guest_may_repair_itself(self):
        # 'big' is 10 % down, 'low' 5 %: big's own move is not blocked.
        config = guard.Config()
        state = {'low': guard.Record(ref=1000, samples=1, ewma=950,
                                     disturbed=True, protected=True),
                 'big': guard.Record(ref=1000, samples=1, ewma=900,
                                     disturbed=True, protected=True)}
        self.assertIsNone(guard.refusal(_snap(950), state, config, _move()))
        state['big'] = guard.Record(ref=1000, samples=1, ewma=990,
                                    disturbed=True)
        self.assertIn('low', guard.refusal(_snap(950), state, config,
                                           _move()))

    def test_reboot_resets_the_reference(self):
        config = guard.Config()
        old = guard.Record(ref=1000, samples=5, ewma=800, disturbed=True,
                           protected=True, cputime_ns=10 ** 10)
        new = guard._update(old, 500, config, cputime_ns=5 * 10 ** 9)
        self.assertEqual((500, False, False),
                         (new.ref, new.disturbed, new.protected))
        kept = guard._update(old, 500, config, cputime_ns=2 * 10 ** 10)
        self.assertTrue(kept.disturbed)

    def test_pages_onto_a_node_another_guest_uses_wait_a_period(self):
        move = _move(node=1)  # big runs on node 1: memory following it
        self.assertIsNone(guard.refusal(_snap(1000), {}, guard.Config(),
                                        move, arrivals={1: 'other'}))
        snap = s.snapshot([
            s.instance('low', (0, 4), {0: 512, 1: 512},
                       acc={0: 1000, 1: 1000}),
            s.instance('big', (5,), {0: 1024}, acc={0: 9000})])
        away = backend.MovePages(instance_uuid='big', source_node=1,
                                 target_node=0, pages=10, reason='t')
        self.assertIn('already receives other', guard.refusal(
            snap, {}, guard.Config(), away, arrivals={0: 'other'}))
        self.assertIsNone(guard.refusal(
            snap, {}, guard.Config(one_page_arrival_per_node=False), away,
            arrivals={0: 'other'}))
