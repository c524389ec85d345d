"""The tiering loop: a ``tiered`` guest's pages between the memory tiers.

The host is the lab host's layout (tests/unit/agent/test_tier_enforcement):
nodes 0 and 1, 8192 MB each, in the top tier; node 2, 16384 MB and no
CPU, one tier below. Of a top-tier node, the low mark (5 %) is 409.6 MB,
the high mark (10 %) 819.2 MB and TOP_TIER_RESERVE (2 %) 163.84 MB; of
node 2, the reserve is 327.68 MB.
"""

import dataclasses
import types

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import tiers
from nova_numa_policy.decisions import tiering
from nova_numa_policy.loops import runner
from nova_numa_policy.loops import tiering as tiering_loop
from tests import base as test_base
from tests.unit.agent import test_tier_enforcement as tiered

MB = 256  # pages
EVERY_CPU = tiered.EVERY_CPU
DEMOTES = backend.MemoryTiers(demotion=True)
PROMOTES = backend.MemoryTiers(promotion=True)


def guest(per_node, written=None, percent=50, mode='restrictive',
          nodes=(0, 1, 2), uuid='u1', requested=None, **kwargs):
    """A running 2 GiB ``tiered`` guest; ``per_node``: its MB per node."""
    return backend.InstanceState(
        uuid=uuid, requested_policy='first-touch',
        requested_tiers=requested or tiers.MemoryTiers(
            tiers.TierMode.TIERED, percent),
        memory_mb=2048, memory_mode=mode, memory_nodes=frozenset(nodes),
        memory_mb_per_node=per_node, written_mb_per_node=written,
        vcpu_affinity=(EVERY_CPU, EVERY_CPU), emulator_affinity=EVERY_CPU,
        **kwargs)


def decide(inst, free0=4096, free1=6144, free2=8192, kernel=None,
           host=None, **kwargs):
    return tiering.tier_guest(
        inst, host or tiered.tiered_host(),
        tiered.usage(free0, free1, free2),
        kernel or backend.MemoryTiers(), **kwargs)


def shape(action):
    """What an action does, without its reason."""
    if isinstance(action, backend.SetNodeset):
        return ('SetNodeset', action.nodes)
    return (type(action).__name__, action.source_node, action.target_node,
            action.pages, getattr(action, 'pick', None))


def tier(source, target, mb, pick):
    return ('TierPages', source, target, int(mb * MB), pick)


class NothingToTierTest(test_base.TestCase):

    def test_an_any_or_top_guest_gets_nothing(self):
        for asked in (tiers.ANY, tiers.MemoryTiers(tiers.TierMode.TOP)):
            with self.subTest(asked.mode):
                got = decide(guest({0: 512, 2: 1536}, {2: 100},
                                   requested=asked), free0=300)
                self.assertEqual(tiering.Tiering(), got)

    def test_a_host_without_a_lower_tier_gets_nothing(self):
        got = decide(guest({0: 512, 2: 1536}, {2: 100}), free0=300,
                     host=tiered.untiered(tiered.tiered_host()))
        self.assertEqual(tiering.Tiering(), got)

    def test_an_unmeasured_guest_at_its_floor_gets_nothing(self):
        got = decide(guest({0: 1024, 2: 1024}), free0=300)
        self.assertEqual(tiering.Tiering(), got)


class FloorTest(test_base.TestCase):
    """{0: 512, 2: 1536} at 50 %: 512 MB short of its 1024 MB floor."""

    UNDER = {0: 512, 2: 1536}

    def test_a_measured_guest_has_its_pages_moved_up_hot_first(self):
        got = decide(guest(self.UNDER, {2: 100}))
        self.assertEqual(
            (backend.TierPages(
                'u1', 'tiered: 512 MB from lower-tier node 2 to node 1, up '
                'to its 50 % on the top tier', source_node=2, target_node=1,
                pages=512 * MB, pick=backend.PICK_HOT_FIRST),), got.actions)
        self.assertIsNone(got.blocked)

    def test_an_unmeasured_guest_has_plain_page_moves(self):
        (move,) = decide(guest(self.UNDER)).actions
        self.assertIs(backend.MovePages, type(move))
        self.assertEqual(('MovePages', 2, 1, 512 * MB, None), shape(move))

    def test_the_top_node_with_most_room_fills_first_then_the_next(self):
        # Room above the reserve: node 0 236 MB, node 1 336 MB.
        got = decide(guest(self.UNDER, {}), free0=400, free1=500)
        self.assertEqual([tier(2, 1, 336, 'hot-first'),
                          tier(2, 0, 176, 'hot-first')],
                         [shape(a) for a in got.actions])
        self.assertIsNone(got.blocked)

    def test_only_top_nodes_of_its_nodeset_take_pages(self):
        got = decide(guest(self.UNDER, {}, nodes=(0, 2)))
        self.assertEqual([tier(2, 0, 512, 'hot-first')],
                         [shape(a) for a in got.actions])

    def test_without_kernel_demotion_the_reserve_stays_free(self):
        got = decide(guest(self.UNDER, {}, nodes=(1, 2)), free1=300)
        self.assertEqual([tier(2, 1, 136, 'hot-first')],
                         [shape(a) for a in got.actions])
        self.assertEqual('tiered: 376 MB short of its 50 % on the top tier: '
                         'no top-tier node of its nodeset has room',
                         got.blocked)

    def test_with_kernel_demotion_it_stops_at_the_high_mark(self):
        got = decide(guest(self.UNDER, {}, nodes=(1, 2)), free1=1000,
                     kernel=DEMOTES)
        self.assertEqual([tier(2, 1, 180, 'hot-first')],
                         [shape(a) for a in got.actions])
        self.assertIn('332 MB short of its 50 %', got.blocked)

    def test_no_room_on_the_top_tier_is_blocked_and_moves_nothing(self):
        got = decide(guest(self.UNDER, {}, nodes=(1, 2)), free1=100)
        self.assertEqual((), got.actions)
        self.assertEqual('tiered: 512 MB short of its 50 % on the top tier: '
                         'no top-tier node of its nodeset has room',
                         got.blocked)

    def test_the_floor_comes_before_cold_pages_go_down(self):
        # Node 0 is short, but the guest is under its floor.
        got = decide(guest(self.UNDER, {0: 0, 2: 0}), free0=300)
        self.assertEqual([tier(2, 1, 512, 'hot-first')],
                         [shape(a) for a in got.actions])

    def test_a_shortfall_under_the_minimum_move_is_at_the_floor(self):
        got = decide(guest({0: 1022, 2: 1026}))
        self.assertEqual(tiering.Tiering(), got)


class ColdDownTest(test_base.TestCase):
    """{0: 2048} with 512 MB written; node 0 at 300 MB free is short.

    To its high mark it misses int(819.2 - 300) + 1 = 520 MB.
    """

    def cold(self, written=None, percent=50, mode='restrictive',
             nodes=(0, 1, 2), free0=300, **kwargs):
        inst = guest({0: 2048}, {0: 512} if written is None else written,
                     percent=percent, mode=mode, nodes=nodes)
        return decide(inst, free0=free0, **kwargs)

    def test_cold_pages_go_down_until_the_node_has_its_high_mark(self):
        got = self.cold()
        self.assertEqual(
            (backend.TierPages(
                'u1', 'tiered: 520 MB not written over the last period, '
                'from top-tier node 0 (under 5% free) to lower-tier node 2',
                source_node=0, target_node=2, pages=520 * MB,
                pick=backend.PICK_COLD),), got.actions)
        self.assertIsNone(got.blocked)

    def test_no_more_than_its_cold_memory_goes_down(self):
        got = self.cold(written={0: 1900})
        self.assertEqual([tier(0, 2, 148, 'cold')],
                         [shape(a) for a in got.actions])

    def test_never_below_its_floor(self):
        # 90 %: a floor of 1843.2 MB leaves 204.8 MB to go down.
        got = self.cold(percent=90)
        self.assertEqual([tier(0, 2, 204.8, 'cold')],
                         [shape(a) for a in got.actions])

    def test_no_more_than_the_lower_node_has_room_for(self):
        got = self.cold(free2=500)
        self.assertEqual([tier(0, 2, 172, 'cold')],
                         [shape(a) for a in got.actions])

    def test_two_short_top_nodes_share_what_is_above_the_floor(self):
        inst = guest({0: 1024, 1: 1024}, {}, percent=75)
        got = decide(inst, free0=300, free1=300)
        self.assertEqual([tier(0, 2, 512, 'cold')],
                         [shape(a) for a in got.actions])

    def test_a_node_just_under_its_low_mark_is_short(self):
        got = self.cold(free0=409)
        self.assertEqual([tier(0, 2, 411, 'cold')],
                         [shape(a) for a in got.actions])

    def test_a_node_at_its_low_mark_sends_nothing_down(self):
        self.assertEqual(tiering.Tiering(), self.cold(free0=410))

    def test_other_marks_move_by_theirs(self):
        # 20 %: a floor of 409.6 MB leaves the shortfall whole.
        got = self.cold(percent=20, free0=1000,
                        marks=tiering.Marks(0.2, 0.3))
        self.assertEqual([tier(0, 2, 1458, 'cold')],
                         [shape(a) for a in got.actions])
        self.assertIn('(under 20% free)', got.actions[0].reason)

    def test_a_nodeset_without_the_lower_node_gains_it_first(self):
        for mode in ('restrictive', None):
            with self.subTest(mode):
                got = self.cold(mode=mode, nodes=(0, 1))
                self.assertEqual(
                    [('SetNodeset', frozenset({0, 1, 2})),
                     tier(0, 2, 520, 'cold')],
                    [shape(a) for a in got.actions])
                self.assertEqual('tiered: lower-tier node(s) [2] opened to '
                                 'its cold pages', got.actions[0].reason)

    def test_strict_or_interleave_is_blocked_and_moves_nothing(self):
        for mode in ('strict', 'interleave'):
            with self.subTest(mode):
                got = self.cold(mode=mode, nodes=(0, 1))
                self.assertEqual((), got.actions)
                self.assertIn(f'memory mode {mode} cannot open lower-tier '
                              f'node 2', got.blocked)

    def test_a_host_that_cannot_change_a_nodeset_is_blocked(self):
        got = self.cold(nodes=(0, 1), can_set_nodeset=False)
        self.assertEqual((), got.actions)
        self.assertIn("this host cannot change a running guest's nodeset",
                      got.blocked)

    def test_a_nodeset_with_the_lower_node_needs_no_change(self):
        got = self.cold(mode='strict', can_set_nodeset=False)
        self.assertEqual([tier(0, 2, 520, 'cold')],
                         [shape(a) for a in got.actions])

    def test_with_kernel_demotion_no_cold_pages_go_down(self):
        self.assertEqual(tiering.Tiering(), self.cold(kernel=DEMOTES))

    def test_with_kernel_promotion_no_cold_pages_go_down(self):
        # A page read but not written would go down by the agent's
        # signal and up by the kernel's, every period.
        self.assertEqual(tiering.Tiering(), self.cold(kernel=PROMOTES))


class HotUpTest(test_base.TestCase):
    """{0: 1024, 2: 1024} at 50 %: at its floor, 300 MB written on 2."""

    def hot(self, written=None, nodes=(0, 1, 2), **kwargs):
        inst = guest({0: 1024, 2: 1024},
                     {2: 300} if written is None else written, nodes=nodes)
        return decide(inst, **kwargs)

    def test_written_pages_come_up_onto_the_node_with_most_room(self):
        self.assertEqual(
            (backend.TierPages(
                'u1', 'tiered: 300 MB written over the last period, from '
                'lower-tier node 2 to node 1', source_node=2, target_node=1,
                pages=300 * MB, pick=backend.PICK_HOT),), self.hot().actions)

    def test_each_move_up_stops_at_the_high_mark(self):
        got = self.hot(free0=900, free1=1000)
        self.assertEqual([tier(2, 1, 180, 'hot'), tier(2, 0, 80, 'hot')],
                         [shape(a) for a in got.actions])

    def test_nothing_comes_up_onto_a_node_under_its_high_mark(self):
        self.assertEqual(tiering.Tiering(), self.hot(nodes=(0, 2),
                                                     free0=800))

    def test_with_kernel_promotion_nothing_comes_up(self):
        self.assertEqual(tiering.Tiering(), self.hot(kernel=PROMOTES))

    def test_with_kernel_demotion_nothing_comes_up_above_the_floor(self):
        # The kernel tiers: what is above the floor is its to move.
        self.assertEqual(tiering.Tiering(), self.hot(kernel=DEMOTES))

    def test_a_node_between_the_marks_gets_neither_move(self):
        got = self.hot(written={0: 0, 2: 500}, nodes=(0, 2), free0=600)
        self.assertEqual(tiering.Tiering(), got)

    def test_a_move_under_the_minimum_is_not_made(self):
        self.assertEqual(tiering.Tiering(), self.hot(written={2: 3.9}))

    def test_a_move_of_the_minimum_is_made(self):
        self.assertEqual([tier(2, 1, 4, 'hot')],
                         [shape(a) for a in self.hot(
                             written={2: 4}).actions])


class MarksTest(test_base.TestCase):

    def test_the_defaults_are_5_and_10_percent(self):
        marks = tiering.Marks()
        self.assertEqual((0.05, 0.10), (marks.low, marks.high))

    def test_a_low_mark_at_or_above_the_high_mark_is_refused(self):
        for low, high in ((0.1, 0.1), (0.2, 0.1)):
            with self.subTest(low=low, high=high):
                exc = self.assertRaises(ValueError, tiering.Marks, low, high)
                self.assertIn(f'tiering_low_free ({low}) must be under '
                              f'tiering_high_free ({high})', str(exc))

    def test_marks_outside_0_to_1_are_refused(self):
        for low, high in ((-0.1, 0.1), (0.05, 1.5)):
            with self.subTest(low=low, high=high):
                self.assertRaises(ValueError, tiering.Marks, low, high)


def snapshot(instances, ids=(0, 1, 2), free=(4096, 6144, 8192),
             kernel=backend.MemoryTiers()):
    return backend.HostSnapshot(
        topology=tiered.tiered_host(ids=ids), instances=tuple(instances),
        taken_at=0.0, memory_tiers=kernel,
        usage=tuple(backend.NodeUsage(n, 0.1, f) for n, f in zip(ids, free)))


class LoopTest(test_base.TestCase):

    CAPS = (backend.CAP_VCPU_PINNING, backend.CAP_EMULATOR_PINNING,
            backend.CAP_PAGE_MIGRATION, backend.CAP_LIVE_NODESET)

    def admitted(self, snap, caps=CAPS):
        r = runner.Runner(tiered._Host(caps), runner.strategies(['tiering']))
        return [(name, shape(a)) for name, a in r.admitted(snap)]

    def test_decide_leaves_hands_off_guests_untouched(self):
        kept = guest({0: 1024, 2: 1024}, {2: 300})
        left = guest({0: 1024, 2: 1024}, {2: 300}, uuid='u2',
                     hands_off_reason='nova owns it')
        actions, state = tiering_loop.Tiering().decide(
            snapshot([left, kept]), {}, tiering_loop.Config())
        self.assertEqual([('u1', tier(2, 1, 300, 'hot'))],
                         [(a.instance_uuid, shape(a)) for a in actions])
        self.assertEqual({}, state)

    def test_decide_reads_the_kernels_tiering_from_the_snapshot(self):
        actions, _ = tiering_loop.Tiering().decide(
            snapshot([guest({0: 1024, 2: 1024}, {2: 300})],
                     kernel=PROMOTES), {}, tiering_loop.Config())
        self.assertEqual([], actions)

    def test_the_runner_admits_its_moves(self):
        self.assertEqual(
            [('tiering', tier(2, 1, 300, 'hot'))],
            self.admitted(snapshot([guest({0: 1024, 2: 1024}, {2: 300})])))

    def test_the_runner_drops_moves_of_hands_off_guests(self):
        inst = guest({0: 1024, 2: 1024}, {2: 300},
                     hands_off_reason='nova owns it')
        self.assertEqual([], self.admitted(snapshot([inst])))

    def test_without_live_nodesets_the_lower_node_is_not_opened(self):
        inst = guest({0: 2048}, {0: 512}, nodes=(0, 1))
        snap = snapshot([inst], free=(300, 6144, 8192))
        self.assertEqual(
            [('tiering', ('SetNodeset', frozenset({0, 1, 2}))),
             ('tiering', tier(0, 2, 520, 'cold'))], self.admitted(snap))
        self.assertEqual([], self.admitted(snap, self.CAPS[:3]))

    def test_written_pages_on_a_sparse_lower_node_come_up(self):
        inst = guest({0: 1024, 8: 1024}, {8: 300}, nodes=(0, 1, 8))
        self.assertEqual(
            [('tiering', tier(8, 1, 300, 'hot'))],
            self.admitted(snapshot([inst], ids=(0, 1, 8))))

    def test_config_from_reads_the_marks(self):
        group = types.SimpleNamespace(tiering_low_free=0.1,
                                      tiering_high_free=0.3)
        self.assertEqual(
            tiering_loop.Config(low_free=0.1, high_free=0.3),
            tiering_loop.Tiering.config_from(group, 5.0))

    def test_config_from_refuses_a_low_mark_at_or_above_the_high(self):
        group = types.SimpleNamespace(tiering_low_free=0.2,
                                      tiering_high_free=0.1)
        exc = self.assertRaises(ValueError,
                                tiering_loop.Tiering.config_from, group, 5.0)
        self.assertIn('tiering_low_free (0.2) must be under '
                      'tiering_high_free (0.1)', str(exc))

    def test_the_configs_defaults_are_the_decisions(self):
        self.assertEqual(tiering_loop.Config(
            low_free=tiering.LOW_FREE, high_free=tiering.HIGH_FREE,
            live_nodeset=False), tiering_loop.Config())


class DemotableTest(test_base.TestCase):
    """What a lower tier may take off each top-tier node, for the report.

    A 2 GiB guest at 50 %: its floor is 1024 MB on the top tier.
    """

    def demotable(self, instances, kernel=backend.MemoryTiers(),
                  live_nodeset=True, host=None):
        return tiering.demotable_mb(instances, host or tiered.tiered_host(),
                                    kernel, live_nodeset)

    def test_unwritten_pages_above_the_floor_node_by_node(self):
        # 1536 MB on top, 512 above the floor: node 0's 1024 unwritten
        # MB come first (300 of its 1024 written, so 724), then node 1's.
        self.assertEqual({0: 512}, self.demotable(
            [guest({0: 1024, 1: 512, 2: 512}, {0: 300})]))
        self.assertEqual({0: 300, 1: 212}, self.demotable(
            [guest({0: 400, 1: 1136, 2: 512}, {0: 100, 1: 400})]))

    def test_written_pages_stay_counted_in_use(self):
        # Every page above the floor written: nothing would go down.
        self.assertEqual({}, self.demotable(
            [guest({0: 1536, 2: 512}, {0: 1536})]))

    def test_nothing_of_a_guest_at_its_floor_or_unmeasured(self):
        self.assertEqual({}, self.demotable([guest({0: 1024, 2: 1024},
                                                   {0: 0})]))
        self.assertEqual({}, self.demotable([guest({0: 2048})]))

    def test_nothing_of_top_or_any_guests(self):
        for asked in (tiers.ANY, tiers.MemoryTiers(tiers.TierMode.TOP)):
            with self.subTest(asked.mode):
                self.assertEqual({}, self.demotable([guest(
                    {0: 2048}, {0: 0}, requested=asked)]))

    def test_guests_add_up_per_node(self):
        self.assertEqual({0: 2048}, self.demotable([
            guest({0: 2048}, {0: 0}), guest({0: 2048}, {0: 0}, uuid='u2')]))

    def test_a_lower_tier_its_nodeset_cannot_open_to_counts_nothing(self):
        closed = guest({0: 2048}, {0: 0}, nodes=(0, 1))
        self.assertEqual({}, self.demotable([closed], live_nodeset=False))
        self.assertEqual({0: 1024}, self.demotable([closed]))
        # Where the kernel demotes, it does so whatever the nodeset.
        self.assertEqual({0: 1024}, self.demotable(
            [closed], kernel=DEMOTES, live_nodeset=False))

    def test_no_lower_tier_no_demotable_memory(self):
        self.assertEqual({}, self.demotable(
            [guest({0: 2048}, {0: 0})],
            host=tiered.untiered(tiered.tiered_host())))

    def test_the_loop_says_it_of_every_top_tier_node(self):
        snap = snapshot([guest({0: 2048}, {0: 0}),
                         guest({0: 2048}, {0: 0}, uuid='u2',
                               hands_off_reason='nova owns it')])
        config = tiering_loop.Config(live_nodeset=True)
        # The hands-off guest's pages are not the loop's to move.
        self.assertEqual({0: {'demotable_mb': 1024},
                          1: {'demotable_mb': 0}},
                         tiering_loop.Tiering.judge_nodes(snap, config))

    def test_the_loop_says_nothing_on_a_host_without_a_lower_tier(self):
        snap = snapshot([guest({0: 2048}, {0: 0})])
        snap = dataclasses.replace(snap,
                                   topology=tiered.untiered(snap.topology))
        self.assertEqual({}, tiering_loop.Tiering.judge_nodes(
            snap, tiering_loop.Config(live_nodeset=True)))


class _Backend(backend.Backend):
    name = 'tiny'

    def __init__(self):
        self.calls = []

    def capabilities(self):
        return frozenset()

    def topology(self):
        return tiered.tiered_host()

    def observe(self):
        return snapshot([])

    def pin_vcpu(self, *args):
        raise AssertionError('not called')

    pin_emulator = set_nodeset = pin_vcpu

    def move_pages(self, *args):
        self.calls.append(('move_pages', args))
        return 7

    def tier_pages(self, *args):
        self.calls.append(('tier_pages', args))
        return 5


class ApplyTest(test_base.TestCase):

    def test_a_tier_pages_goes_to_tier_pages_with_its_pick(self):
        host = _Backend()
        got = host.apply(backend.TierPages(
            'u1', 'why', source_node=2, target_node=0, pages=1024,
            pick=backend.PICK_HOT))
        self.assertEqual((5, [('tier_pages', ('u1', 2, 0, 1024, 'hot'))]),
                         (got, host.calls))

    def test_a_plain_move_pages_still_goes_to_move_pages(self):
        host = _Backend()
        self.assertEqual(7, host.apply(backend.MovePages(
            'u1', 'why', source_node=2, target_node=0, pages=1024)))
        self.assertEqual([('move_pages', ('u1', 2, 0, 1024))], host.calls)

    def test_a_backend_that_cannot_tell_temperatures_says_so(self):
        exc = self.assertRaises(
            NotImplementedError, backend.Backend.tier_pages, _Backend(),
            'u1', 2, 0, 1024, backend.PICK_COLD)
        self.assertEqual('tiny cannot tell hot pages from cold', str(exc))
