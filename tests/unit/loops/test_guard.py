"""The do-no-harm guard, on hand-written snapshots."""

import dataclasses

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality
from nova_numa_policy.loops import guard
from tests import base as test_base
from tests.unit.loops import snapshots as s


def _snap(low_acc):
    return s.snapshot([
        s.instance('low', (0, 4), {0: 512, 1: 512},
                   acc={0: low_acc, 1: low_acc}),
        s.instance('big', (1, 5), {0: 1024}, acc={0: 9000})])


def _move(node=1):
    return backend.MovePages(instance_uuid='big', source_node=0,
                             target_node=node, pages=10, reason='t')


class GuardTest(test_base.TestCase):

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


class MembershipChangeTest(test_base.TestCase):
    """A drop when guests arrive or leave is nova's, not the loops'."""

    def _observed(self, before, samples):
        """'low' disturbed at ``before``, then one sample per snapshot."""
        config = guard.Config()
        state = guard.observe(_snap(before), {}, config)
        state = guard.disturb(_snap(before), state, config, _move())
        for snap in samples:
            state = guard.observe(snap, state, config)
        return state, config

    @staticmethod
    def _with_newcomer(low_acc):
        return s.snapshot(list(_snap(low_acc).instances) + [
            s.instance('new', (2, 6), {1: 1024}, acc={1: 5000})])

    @staticmethod
    def _undisturbed_ref(low_acc):
        return guard.observe(_snap(low_acc), {}, guard.Config())['low'].ref

    def test_a_drop_as_a_guest_arrives_does_not_protect(self):
        state, config = self._observed(1000, [self._with_newcomer(900)])
        self.assertFalse(state['low'].protected)
        self.assertAlmostEqual(0.9 * self._undisturbed_ref(1000),
                               state['low'].ref)
        self.assertIsNone(guard.refusal(self._with_newcomer(900), state,
                                        config, _move()))

    def test_the_same_drop_with_the_same_guests_protects(self):
        state, config = self._observed(1000, [_snap(900), _snap(900)])
        self.assertTrue(state['low'].protected)
        self.assertIn('low', guard.refusal(_snap(900), state, config,
                                           _move()))

    def test_a_guest_already_harmed_stays_about_as_far_below(self):
        state, _ = self._observed(1000, [_snap(900), _snap(900)])
        harmed = state['low'].loss
        state, _ = self._observed(1000, [_snap(900), _snap(900),
                                         self._with_newcomer(450)])
        self.assertTrue(state['low'].protected)
        # Not the 50 % the arrival cost; the smoothing's lag scales too.
        self.assertLess(state['low'].loss, harmed + 0.02)

    def test_a_rise_as_a_guest_leaves_keeps_the_reference(self):
        state, _ = self._observed(1000, [self._with_newcomer(900),
                                         _snap(1100)])
        self.assertAlmostEqual(0.9 * self._undisturbed_ref(1000),
                               state['low'].ref)
        self.assertFalse(state['low'].protected)


def _net_snap(rate, signal=locality.SIGNAL_HINTING_FAULTS):
    """'net' (its progress: requests) beside 'big', measuring ``signal``.

    On hinting faults the kernel balances memory too.
    """
    snap = s.snapshot([
        s.instance('net', (0,), {0: 512}, io_rate=rate),
        s.instance('big', (1, 5), {0: 1024}, acc={0: 9000})])
    return dataclasses.replace(snap, locality_signal=signal)


class KernelGainTest(test_base.TestCase):
    """Where the kernel balances, a gain it made is undisturbed progress."""

    def _observed(self, rates, signal=locality.SIGNAL_HINTING_FAULTS,
                  moved_at=None):
        """'net' disturbed by 'big' at its first rate, then the rest.

        A loop acts on 'net' itself before the sample ``moved_at``.
        """
        config = guard.Config()
        state = guard.observe(_net_snap(rates[0], signal), {}, config)
        state = guard.disturb(_net_snap(rates[0], signal), state, config,
                              _move(node=0))
        for k, rate in enumerate(rates[1:], start=1):
            if k == moved_at:
                state = guard.disturb(
                    _net_snap(rate, signal), state, config,
                    backend.PinVcpu(instance_uuid='net', vcpu=0,
                                    cpus=frozenset({4}), reason='t'))
            state = guard.observe(_net_snap(rate, signal), state, config)
        return state, config

    def test_a_rise_kept_two_periods_becomes_the_reference(self):
        state, _ = self._observed([3000, 5000, 5000])
        self.assertEqual(5000, state['net'].ref)
        self.assertFalse(state['net'].protected)

    def test_then_losing_part_of_it_protects(self):
        # Frozen at the first sample, 4600 would be far above 3000.
        state, config = self._observed([3000, 5000, 5000, 4600, 4600])
        self.assertTrue(state['net'].protected)
        self.assertIn('net', guard.refusal(_net_snap(4600), state, config,
                                           _move(node=0)))

    def test_a_single_high_sample_is_not_a_reference(self):
        state, _ = self._observed([3000, 5000, 3000])
        self.assertEqual(3000, state['net'].ref)

    def test_a_rise_a_loop_made_on_the_guest_is_not(self):
        state, _ = self._observed([3000, 5000, 5000], moved_at=1)
        # The sample after the pin is the loop's doing; only the next
        # pair of samples may raise the reference.
        self.assertEqual(3000, state['net'].ref)

    def test_without_the_kernels_balancing_the_reference_stays(self):
        state, _ = self._observed([3000, 5000, 5000],
                                  signal=locality.SIGNAL_COUNTERS)
        self.assertEqual(3000, state['net'].ref)


class HomeTest(test_base.TestCase):

    CASES = [
        ('every vCPU and all memory on node 1', (4, 5), {1: 1024}, 1),
        ('90 % of its memory there is enough', (4,), {1: 900, 0: 100}, 1),
        ('80 % is not: a loop may still bring it the rest', (4,),
         {1: 800, 0: 200}, None),
        ('vCPUs on two nodes', (0, 4), {0: 1024}, None),
        ('no memory reported', (4,), {}, None),
    ]

    def test_home(self):
        for name, cpus, mem, expected in self.CASES:
            inst = s.instance('g', cpus, mem)
            self.assertEqual(expected, guard.home(s.topology(), inst,
                                                  guard.Config()), name)


def _resident_snap(io=1000.0):
    # 'home' lives wholly on node 0; 'a' and 'b' run on node 1 with their
    # memory on node 2 (three nodes of four CPUs).
    return s.snapshot([
        s.instance('home', (0,), {0: 1024}, io_rate=io),
        s.instance('a', (4,), {2: 1024}, io_rate=900),
        s.instance('b', (5,), {2: 1024}, io_rate=900)],
        s.topology(nodes=3))


def _pages(uuid, node):
    return backend.MovePages(instance_uuid=uuid, source_node=2,
                             target_node=node, pages=10, reason='t')


class PredictedHarmTest(test_base.TestCase):
    """A guest living wholly on a node: the next arrival is predicted.

    Its reference is 1000 req/s; one arrival on its node cost it
    ``step``. The tolerance is 1 %.
    """

    CASES = [
        # (name, its latest progress, step, the action, refused)
        ('the last arrival cost 1.5 %: the next would pass 1 %, refused',
         1000, 0.015, _pages('b', 0), True),
        ('the last arrival cost 0.3 %, it is 0.3 % down: the next leaves '
         'it at 0.6 %, admitted', 997, 0.003, _pages('b', 0), False),
        ('the same 0.3 % arrival when it is already 0.8 % down: refused',
         992, 0.003, _pages('b', 0), True),
        ('a loop lifted it 10 % above its reference: a 1.5 % arrival '
         'still leaves it above, admitted', 1100, 0.015, _pages('b', 0),
         False),
        ('no arrival seen yet: nothing to predict, admitted', 1000, 0.0,
         _pages('b', 0), False),
        ('an arrival on a node it does not live on: admitted', 1000, 0.015,
         _pages('b', 1), False),
        ('its own memory moving: never refused for its own sake', 1000,
         0.015, _pages('home', 0), False),
    ]

    def test_predicted(self):
        for name, last, step, action, refused in self.CASES:
            state = {'home': guard.Record(ref=1000, samples=1, ewma=last,
                                          disturbed=True, last=last,
                                          step=step)}
            why = guard.refusal(_resident_snap(last), state, guard.Config(),
                                action)
            self.assertEqual(refused, why is not None, (name, why))
            if refused:
                self.assertIn('home lost', why, name)

    def test_worse_off_mover_repairs_itself(self):
        state = {'home': guard.Record(ref=1000, samples=1, ewma=1000,
                                      disturbed=True, last=1000,
                                      step=0.015),
                 'b': guard.Record(ref=900, samples=1, ewma=800,
                                   disturbed=True, protected=True,
                                   last=800)}
        self.assertIsNone(guard.refusal(_resident_snap(), state,
                                        guard.Config(), _pages('b', 0)))


class LearnsArrivalCostTest(test_base.TestCase):
    """The drop after another guest's arrival is what one arrival costs."""

    CASES = [
        # (name, admitted actions in the first period, step learnt)
        ('a\'s memory arrived on its node, it fell 1000 -> 985',
         [_pages('a', 0)], 0.015),
        ('the arrival went elsewhere: its drop is not that arrival\'s',
         [_pages('a', 1)], 0.0),
        ('it was moved itself in the same period: the drop is not only '
         'the arrival\'s', [_pages('a', 0), _pages('home', 0)], 0.0),
    ]

    def test_learns(self):
        config = guard.Config()
        for name, actions, step in self.CASES:
            state = guard.observe(_resident_snap(1000), {}, config)
            for action in actions:
                state = guard.disturb(_resident_snap(1000), state, config,
                                      action)
            state = guard.observe(_resident_snap(985), state, config)
            self.assertAlmostEqual(step, state['home'].step, msg=name)

    def test_a_pin_to_the_node_it_runs_on_is_no_move(self):
        config = guard.Config()
        state = guard.observe(_resident_snap(1000), {}, config)
        for action in (_pages('a', 0), backend.PinVcpu(
                instance_uuid='home', vcpu=0, cpus=frozenset(range(4)),
                reason='t')):
            state = guard.disturb(_resident_snap(1000), state, config,
                                  action)
        state = guard.observe(_resident_snap(985), state, config)
        self.assertAlmostEqual(0.015, state['home'].step)


class ResidentArrivalsTest(test_base.TestCase):

    def test_memory_following_its_vcpus_waits_on_a_residents_node(self):
        # 'a' runs on node 1; 'home' lives wholly there in one case only.
        follow = backend.MovePages(instance_uuid='a', source_node=2,
                                   target_node=1, pages=10, reason='t')
        for name, home_cpus, home_mem, refused in (
                ('another guest lives wholly on node 1: one arrival a '
                 'period', (6,), {1: 1024}, True),
                ('the other guest on node 1 keeps its memory elsewhere: '
                 'memory following vCPUs is not limited', (6,), {0: 1024},
                 False)):
            snap = s.snapshot([
                s.instance('home', home_cpus, home_mem, io_rate=1000),
                s.instance('a', (4,), {2: 1024}, io_rate=900)],
                s.topology(nodes=3))
            why = guard.refusal(snap, {}, guard.Config(), follow,
                                arrivals={1: 'other'})
            self.assertEqual(refused, why is not None, name)


class ProgressTest(test_base.TestCase):
    """What the guard takes for a guest's progress, by signal."""

    def test_counted_accesses_are_progress(self):
        inst = s.instance(acc={0: 5000, 1: 5000})
        self.assertEqual(2000.0, guard.progress(s.topology(), inst, 5.0))

    def test_sampled_accesses_are_not(self):
        # Fewer hinting faults may mean a slower scanner, not a slower
        # guest: a scan period growing from 1 s to 60 s would look like
        # a guest sixty times slower.
        inst = s.instance(acc={0: 5000, 1: 5000},
                          signal=locality.SIGNAL_HINTING_FAULTS)
        self.assertIsNone(guard.progress(s.topology(), inst, 5.0))

    def test_requests_are_progress_whatever_the_signal(self):
        inst = s.instance(acc={0: 5000}, io_rate=800.0,
                          signal=locality.SIGNAL_HINTING_FAULTS)
        self.assertEqual(800.0, guard.progress(s.topology(), inst, 5.0))
