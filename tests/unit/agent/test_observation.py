"""The bound on numa_maps reads (agent/backend/observation.py)."""

from agent.backend import observation
from tests import base as test_base

BUDGET = observation.budget_for(observation.DEFAULT_PERIOD)
MAX_AGE = observation.MAX_AGE


def run_rounds(bound, guests, rounds, pid_of=None):
    """Observe ``guests`` ({uuid: cost}) ``rounds`` times, as the backend.

    Returns, per round, the set of guests read and the seconds spent.
    """
    pid_of = pid_of or {uuid: n for n, uuid in enumerate(sorted(guests))}
    history = []
    for _ in range(rounds):
        read, spent = set(), 0.0
        for uuid, cost in guests.items():
            if bound.due(uuid, pid_of[uuid]):
                bound.read(uuid, pid_of[uuid], {0: cost}, cost)
                read.add(uuid)
                spent += cost
        history.append((read, spent))
    return history


class ChooseTest(test_base.TestCase):

    def test_everything_fits_everything_is_read(self):
        guests = {f'g{n}': (0.001, 1) for n in range(8)}
        self.assertEqual(set(guests), observation.choose(guests, BUDGET))

    def test_the_budget_holds_beyond_the_stalest_few(self):
        guests = {f'g{n}': (0.02, 1) for n in range(24)}
        # 24 guests due in 11 rounds, room for 2 a round later on: 2
        # read now whatever they cost, then two more fit in 50 ms.
        chosen = observation.choose(guests, 0.05, max_age=12)
        self.assertEqual(4, len(chosen))

    def test_stalest_first_then_cheapest(self):
        guests = {'old-dear': (0.04, 5), 'old-cheap': (0.01, 5),
                  'young': (0.001, 1)}
        self.assertEqual({'old-cheap', 'old-dear'},
                         observation.choose(guests, 0.05, max_age=12))

    def test_a_guest_at_the_staleness_bound_is_read_whatever_it_costs(self):
        guests = {'huge': (10.0, MAX_AGE), 'small': (0.001, 1)}
        self.assertIn('huge', observation.choose(guests, 0.0))

    def test_a_guest_too_dear_is_passed_over_for_cheaper_ones(self):
        guests = {'a': (0.001, 3), 'dear': (1.0, 3), 'b': (0.001, 3)}
        self.assertEqual({'a', 'b'},
                         observation.choose(guests, 0.01, max_age=12))


class NumaMapsBoundTest(test_base.TestCase):

    def test_a_host_of_small_guests_reads_everything_every_round(self):
        guests = {f'g{n}': 0.0005 for n in range(16)}
        history = run_rounds(observation.NumaMapsBound(), guests, 30)
        self.assertTrue(all(read == set(guests) for read, _ in history))

    def test_large_guests_stay_in_the_budget_and_a_stretched_bound(self):
        # 64 guests of 16 GB at 7.5 ms per GB: 120 ms each, 7.7 s in all,
        # 154 budgets of 50 ms: each guest read every 154 rounds.
        guests = {f'g{n}': 0.12 for n in range(64)}
        stretched = observation.staleness_bound(guests.values(), BUDGET)
        self.assertEqual(154, stretched)
        bound = observation.NumaMapsBound()
        history = run_rounds(bound, guests, 3 * stretched)
        last_read = {uuid: 0 for uuid in guests}
        for number, (read, spent) in enumerate(history[1:], start=1):
            # No more than the guests the staleness bound forces.
            self.assertLessEqual(len(read), 1)
            for uuid in read:
                last_read[uuid] = number
            for uuid in guests:
                self.assertLess(number - last_read[uuid], stretched)
        spent = [spent for _, spent in history[1:]]
        self.assertLessEqual(sum(spent) / len(spent), BUDGET)

    def test_the_bound_stretches_only_past_max_age_budgets(self):
        self.assertEqual(MAX_AGE, observation.staleness_bound(
            [0.001] * 16, BUDGET))
        self.assertEqual(MAX_AGE, observation.staleness_bound(
            [BUDGET] * MAX_AGE, BUDGET))
        self.assertEqual(MAX_AGE + 1, observation.staleness_bound(
            [BUDGET] * (MAX_AGE + 1), BUDGET))
        self.assertEqual(MAX_AGE, observation.staleness_bound(
            [10.0], None))

    def test_the_budget_is_spent_when_a_guest_fits(self):
        guests = {f'g{n}': 0.02 for n in range(12)}
        history = run_rounds(observation.NumaMapsBound(budget=0.05), guests,
                             3 * MAX_AGE)
        for read, spent in history[1:]:
            # One a round for the staleness bound, two in the budget.
            self.assertLessEqual(spent, 0.02 + 0.05 + 1e-9)
            self.assertEqual(3, len(read))

    def test_every_guest_is_read_within_the_staleness_bound(self):
        # Dear, but all guests fit in MAX_AGE budgets: the bound holds.
        guests = {'huge': 0.3, **{f'g{n}': 0.001 for n in range(5)}}
        history = run_rounds(observation.NumaMapsBound(), guests,
                             4 * MAX_AGE)
        rounds_read = [n for n, (read, _) in enumerate(history)
                       if 'huge' in read]
        self.assertEqual([0, MAX_AGE, 2 * MAX_AGE, 3 * MAX_AGE],
                         rounds_read)
        self.assertTrue(all(set(guests) - {'huge'} <= read
                            for read, _ in history))

    def test_a_new_guest_is_read_at_once(self):
        bound = observation.NumaMapsBound(budget=0.0)
        guests = {f'g{n}': 1.0 for n in range(3)}
        run_rounds(bound, guests, 2)
        self.assertFalse(bound.due('g0', 0))
        self.assertTrue(bound.due('new', 7))

    def test_a_skipped_guest_keeps_its_last_reading(self):
        bound = observation.NumaMapsBound(budget=0.0)
        bound.due('a', 1)
        bound.read('a', 1, {0: 100.0, 1: 28.0}, 1.0)
        bound.due('b', 2)
        bound.read('b', 2, {0: 1.0}, 1.0)
        self.assertFalse(bound.due('a', 1))
        self.assertEqual({0: 100.0, 1: 28.0}, bound.last('a'))
        self.assertEqual(1, bound.age('a'))

    def test_a_new_process_a_changed_definition_or_a_move_reads(self):
        bound = observation.NumaMapsBound(budget=0.0)
        for uuid, pid in (('a', 1), ('b', 2), ('c', 3), ('d', 4)):
            bound.due(uuid, pid, '<domain/>')
            bound.read(uuid, pid, {0: 1.0}, 1.0, '<domain/>')
        bound.moved(3)
        self.assertTrue(bound.due('a', 10, '<domain/>'))
        self.assertTrue(bound.due('b', 2, '<domain><numatune/></domain>'))
        self.assertTrue(bound.due('c', 3, '<domain/>'))
        self.assertFalse(bound.due('d', 4, '<domain/>'))

    def test_a_failed_read_is_tried_again(self):
        bound = observation.NumaMapsBound(budget=0.0)
        bound.due('a', 1)
        bound.read('a', 1, {0: 1.0}, 1.0)
        bound.due('b', 2)
        bound.failed('b')
        self.assertFalse(bound.due('a', 1))
        self.assertTrue(bound.due('b', 2))

    def test_gone_guests_are_forgotten(self):
        bound = observation.NumaMapsBound()
        run_rounds(bound, {'a': 0.001, 'b': 0.001}, 2)
        run_rounds(bound, {'a': 0.001}, 2)
        self.assertIsNone(bound.age('b'))

    def test_unbounded_reads_every_guest_every_round(self):
        guests = {f'g{n}': 5.0 for n in range(4)}
        history = run_rounds(observation.NumaMapsBound.unbounded(), guests,
                             5)
        self.assertTrue(all(read == set(guests) for read, _ in history))
