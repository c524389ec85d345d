"""hw:numa_memory_tiers at boot and on a running guest: pure decisions.

The host with a lower tier is the lab host's layout (doc/source/labhost.rst,
"A lower memory tier"): nodes 0 and 1 with CPUs in the top tier, node 2
memory only, one tier below.
"""

import dataclasses

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import tiers
from nova_numa_policy.decisions import arrival
from nova_numa_policy.decisions import enforcement
from nova_numa_policy.decisions import toptier
from nova_numa_policy.loops import runner
from tests import base as test_base
from tests import topology_factory

NODE0 = frozenset(range(0, 4))
NODE1 = frozenset(range(4, 8))
EVERY_CPU = NODE0 | NODE1
VALUES = ('first-touch', 'interleave', 'home', 'first-touch+carrefour',
          'interleave+carrefour', 'auto')
MODES = ('any', 'top', 'tiered')


def tiered_host(ids=(0, 1, 2), nic_node=None, lower_memory_mb=16384):
    """Two 4-CPU nodes in the top tier, a CPU-less node ranked 1."""
    top0, top1, lower = ids
    distances = {(top0, top1): 21, (top0, lower): 30, (top1, lower): 30}

    def row(node):
        return tuple(10 if node == other else
                     distances.get((node, other), distances.get((other, node)))
                     for other in ids)
    return backend.HostTopology(
        nodes=(backend.NodeInfo(top0, tuple(NODE0), 8192, row(top0)),
               backend.NodeInfo(top1, tuple(NODE1), 8192, row(top1)),
               backend.NodeInfo(lower, (), lower_memory_mb, row(lower),
                                memory_tier=1)),
        nics=(() if nic_node is None
              else (backend.NicInfo('ens1', nic_node),)))


def untiered(topology):
    """``topology`` as a host whose kernel says nothing of tiers."""
    return dataclasses.replace(topology, nodes=tuple(
        dataclasses.replace(node, memory_tier=0) for node in topology.nodes))


def resolved(value, mode='any', **specs):
    return policy.resolve({policy.POLICY_KEY: value,
                           tiers.MEMORY_TIERS_KEY: mode, **specs})


def plan(value, mode, topology, memory_mb=1024, **kwargs):
    return enforcement.boot_plan(resolved(value, mode, **kwargs.pop(
        'specs', {})), topology, memory_mb=memory_mb, **kwargs)


def summary(boot):
    tune = boot.tune
    if tune is None:
        return None
    return (tune.mode, set(tune.nodes), set(tune.cpus))


NIC_REQUIRED = {policy.NIC_LOCALITY_KEY: 'required'}


class TierTopologyTest(test_base.TestCase):

    def test_the_top_tier_and_whether_there_is_another(self):
        host = tiered_host()
        self.assertEqual({0, 1}, toptier.top_tier_nodes(host))
        self.assertTrue(toptier.has_lower_tier(host))
        self.assertFalse(toptier.has_lower_tier(untiered(host)))

    def test_only_nodes_keeps_each_distance_between_the_nodes_kept(self):
        host = tiered_host(ids=(0, 8, 1))
        top = enforcement.only_nodes(host, {0, 8})
        self.assertEqual([0, 8], [node.id for node in top.nodes])
        self.assertEqual((21, 21, 10, 10),
                         (top.distance(0, 8), top.distance(8, 0),
                          top.distance(0, 0), top.distance(8, 8)))

    def test_only_top_and_tiered_keep_to_the_top_tier(self):
        host = tiered_host()
        for mode, kept in (('any', False), ('top', True), ('tiered', True)):
            memory_tiers = resolved('first-touch', mode).memory_tiers
            with self.subTest(mode):
                self.assertIs(kept, toptier.keeps_to_top_tier(
                    memory_tiers, host))
                self.assertFalse(toptier.keeps_to_top_tier(
                    memory_tiers, untiered(host)))


class TieredBootPlanTest(test_base.TestCase):
    """Each policy value with each tier mode, on a host with a lower tier."""

    # (value, specs, plan with any, plan with top and tiered)
    CASES = [
        ('interleave', {}, ('interleave', {0, 1, 2}, set()),
         ('interleave', {0, 1}, set())),
        ('interleave+carrefour', {}, ('interleave', {0, 1, 2}, set()),
         ('interleave', {0, 1}, set())),
        # Home is where its vCPUs run: the CPU-less node, idle as it
        # reads, comes after the nodes with CPUs, whatever the mode.
        ('home', {}, ('strict', {0}, set(NODE0)),
         ('strict', {0}, set(NODE0))),
        ('first-touch', {}, None, ('restrictive', {0, 1}, set())),
        ('first-touch+carrefour', {}, None,
         ('restrictive', {0, 1}, set())),
        ('auto', {}, None, ('restrictive', {0, 1}, set())),
        ('first-touch', NIC_REQUIRED, ('preferred', {1}, set(NODE1)),
         ('restrictive', {0, 1}, set(NODE1))),
        ('home', NIC_REQUIRED, ('strict', {1}, set(NODE1)),
         ('strict', {1}, set(NODE1))),
    ]

    def test_every_value_with_every_mode(self):
        host = tiered_host(nic_node=1)
        for value, specs, with_any, kept in self.CASES:
            for mode in MODES:
                expected = with_any if mode == 'any' else kept
                if mode == 'tiered' and expected[0] == 'strict':
                    # Its home restrictive: the tiering loop opens its
                    # nodeset to a lower tier live, which strict forbids.
                    expected = ('restrictive', *expected[1:])
                with self.subTest(value=value, specs=specs, mode=mode):
                    boot = plan(value, mode, host, specs=specs)
                    self.assertEqual(expected, summary(boot))
                    said = 'top tier only: nodes [0, 1]' in boot.reason
                    self.assertIs(mode != 'any', said, boot.reason)
                    if boot.tune is not None:
                        self.assertEqual(boot.reason, boot.tune.reason)

    def test_every_value_is_the_same_with_any_as_without_the_key(self):
        host = tiered_host(nic_node=1)
        for value in VALUES:
            with self.subTest(value):
                self.assertEqual(
                    enforcement.boot_plan(policy.resolve(
                        {policy.POLICY_KEY: value}), host),
                    plan(value, 'any', host))

    def test_a_nic_on_the_lower_tier_is_not_near_for_a_top_guest(self):
        host = tiered_host(nic_node=2)
        boot = plan('home', 'top', host, specs=NIC_REQUIRED)
        self.assertEqual(('strict', {0}, set(NODE0)), summary(boot))
        self.assertIn('NIC node(s) [2] are not in the top tier', boot.reason)
        boot = plan('first-touch', 'top', host, specs=NIC_REQUIRED)
        self.assertEqual(('restrictive', {0, 1}, set()), summary(boot))

    def test_home_that_the_top_tier_cannot_hold_takes_all_of_it(self):
        boot = plan('home', 'top', tiered_host(), memory_mb=20000)
        self.assertEqual(('strict', {0, 1}, EVERY_CPU), summary(boot))

    def test_a_memory_only_node_takes_no_vcpu_when_they_are_dealt(self):
        # Any mode: vCPUs dealt over every node, the CPU-less one
        # included in the nodes but given none.
        boot = plan('first-touch', 'any', tiered_host(), vcpus=6,
                    large_share=1.0)
        self.assertIsNone(boot.tune.mode)
        self.assertEqual({NODE0, NODE1}, set(boot.tune.vcpu_pins))

    def test_nova_owned_topology_is_no_choice_whatever_the_tiers(self):
        pol = policy.resolve({policy.POLICY_KEY: 'first-touch',
                              tiers.MEMORY_TIERS_KEY: 'top',
                              'hw:numa_nodes': '1'})
        self.assertEqual(enforcement.BootPlan(None, 'no choice to make'),
                         enforcement.boot_plan(pol, tiered_host()))


def four_top_nodes_and_one_lower():
    host = topology_factory.host_topology(nodes=5, cpus=4)
    nodes = list(host.nodes)
    nodes[4] = dataclasses.replace(nodes[4], cpus=(), memory_tier=1)
    return dataclasses.replace(host, nodes=tuple(nodes))


class LargeGuestOnTheTopTierTest(test_base.TestCase):

    def test_a_large_guest_keeps_to_an_idle_half_of_the_top_tier(self):
        host = four_top_nodes_and_one_lower()
        for value, mode in (('interleave', 'interleave'),
                            ('first-touch', 'restrictive')):
            with self.subTest(value):
                boot = plan(value, 'top', host, vcpus=6)
                self.assertEqual((mode, {0, 1}), (boot.tune.mode,
                                                  set(boot.tune.nodes)))
                self.assertIn('idle half [0, 1]', boot.reason)
                self.assertEqual(6, len(boot.tune.vcpu_pins))

    def test_a_guest_over_the_top_tier_has_its_vcpus_dealt_there(self):
        boot = plan('first-touch', 'top', tiered_host(), vcpus=6,
                    large_share=1.0)
        self.assertEqual(('restrictive', {0, 1}, set()), summary(boot))
        self.assertEqual({NODE0, NODE1}, set(boot.tune.vcpu_pins))


class UntieredBootPlanTest(test_base.TestCase):
    """A host without a lower tier: every mode plans as before tiers."""

    def test_every_value_and_mode_plans_as_without_the_key(self):
        hosts = (untiered(tiered_host(nic_node=1)),
                 topology_factory.host_topology(nodes=4, cpus=4))
        guests = ({}, {'vcpus': 6}, {'specs': NIC_REQUIRED},
                  {'memory_mb': 20000})
        for host in hosts:
            for value in VALUES:
                for guest in guests:
                    before = plan(value, 'any', host, **dict(guest))
                    for mode in ('top', 'tiered'):
                        with self.subTest(value=value, mode=mode,
                                          guest=guest, nodes=len(
                                              host.nodes)):
                            self.assertEqual(
                                before, plan(value, mode, host,
                                             **dict(guest)))


def guest(value='first-touch', mode='top', memory_mode='restrictive',
          nodes=(0, 1), per_node=None, **kwargs):
    """A running 2-vCPU, 2 GiB guest; ``per_node``: its MB per node."""
    return backend.InstanceState(
        uuid='u1', requested_policy=value,
        requested_tiers=resolved(value, mode).memory_tiers,
        memory_mb=2048, memory_mode=memory_mode,
        memory_nodes=frozenset(nodes),
        memory_mb_per_node=per_node or {0: 1536, 2: 512},
        vcpu_affinity=(EVERY_CPU, EVERY_CPU),
        emulator_affinity=EVERY_CPU, **kwargs)


def usage(free0=4096, free1=6144, free2=8192):
    return (backend.NodeUsage(0, 0.1, free0), backend.NodeUsage(1, 0.1, free1),
            backend.NodeUsage(2, 0.0, free2))


def enforced(inst, host=None, node_usage=None, **kwargs):
    kwargs.setdefault('can_move_pages', True)
    return enforcement.enforce(inst, host or tiered_host(),
                               usage() if node_usage is None else node_usage,
                               **kwargs)


class EnforceTopTierTest(test_base.TestCase):

    def test_demoted_pages_of_a_top_guest_move_back(self):
        plan = enforced(guest())
        self.assertEqual(
            (backend.MovePages(
                'u1', 'top tier only: 512 MB on lower-tier node 2 moved '
                'back to node 1', source_node=2, target_node=1,
                pages=512 * 256),), plan.actions)
        self.assertIsNone(plan.blocked)

    def test_the_nodes_of_its_binding_take_them(self):
        plan = enforced(guest(nodes=(0,)))
        self.assertEqual([0], [a.target_node for a in plan.actions])

    def test_a_top_guest_without_numatune_is_bound_off_the_lower_tier(self):
        plan = enforced(guest(memory_mode=None, nodes=()))
        self.assertEqual(
            [backend.SetNodeset('u1', 'top tier only: lower-tier node(s) '
                                '[2] taken out: memory bound to nodes '
                                '[0, 1]', nodes=frozenset({0, 1}))],
            list(plan.actions[:1]))
        self.assertEqual([(2, 1)], [(a.source_node, a.target_node)
                                    for a in plan.actions[1:]])

    def test_a_restrictive_nodeset_with_the_lower_node_loses_it(self):
        plan = enforced(guest(nodes=(0, 2)))
        self.assertEqual(
            [('SetNodeset', frozenset({0})), ('MovePages', 0)],
            [(type(a).__name__, getattr(a, 'nodes', None)
              or a.target_node) for a in plan.actions])

    def test_a_binding_that_cannot_change_is_said_and_pages_still_move(self):
        for memory_mode, nodes in (('interleave', (0, 1, 2)),
                                   ('strict', (0, 2)), ('preferred', (1,))):
            with self.subTest(memory_mode):
                plan = enforced(guest(memory_mode=memory_mode, nodes=nodes))
                self.assertEqual(['MovePages'],
                                 [type(a).__name__ for a in plan.actions])
                self.assertIn('lower-tier node(s) [2] stay open',
                              plan.blocked)
                self.assertIn(f'memory mode {memory_mode} cannot change',
                              plan.blocked)

    def test_a_host_that_cannot_change_a_nodeset_says_so(self):
        plan = enforced(guest(memory_mode=None, nodes=()),
                        can_set_nodeset=False)
        self.assertEqual(['MovePages'],
                         [type(a).__name__ for a in plan.actions])
        self.assertIn("cannot change a running guest's nodeset",
                      plan.blocked)

    def test_without_page_migration_it_says_why_and_moves_nothing(self):
        plan = enforced(guest(), can_move_pages=False)
        self.assertEqual((), plan.actions)
        self.assertEqual('top tier only: 512 MB on lower-tier node(s) [2] '
                         'stay there: this host cannot move pages',
                         plan.blocked)

    def test_a_fraction_of_a_mb_moves_as_whole_pages(self):
        # numa_maps' MiB come in fractions (the lab host's agent once
        # failed on a float page count).
        plan = enforced(guest(per_node={0: 1800.25, 2: 217.55}))
        (move,) = plan.actions
        self.assertEqual((int, int(217.55 * 256)),
                         (type(move.pages), move.pages))
        self.assertIn('218 MB on lower-tier node 2', move.reason)

    def test_only_what_fits_above_the_reserve_moves(self):
        # 2 % of node 1's 8192 MB stays free: 163 MB.
        plan = enforced(guest(nodes=(1,)), node_usage=usage(free1=400))
        self.assertEqual([400 - 163], [a.pages // 256 for a in plan.actions])
        self.assertIn('top tier only: 275 MB stay on lower-tier node(s)',
                      plan.blocked)
        plan = enforced(guest(nodes=(1,)), node_usage=usage(free1=100))
        self.assertEqual((), plan.actions)
        self.assertIn('no top-tier node of its nodeset has room',
                      plan.blocked)

    def test_a_top_home_guest_is_bound_among_the_top_tier(self):
        plan = enforced(guest('home', memory_mode=None, nodes=()),
                        node_usage=usage(free0=7000, free1=1000))
        self.assertEqual(
            ['SetNodeset', 'PinVcpu', 'PinVcpu', 'PinEmulator', 'MovePages'],
            [type(a).__name__ for a in plan.actions])
        self.assertEqual((frozenset({0}), 0),
                         (plan.actions[0].nodes, plan.actions[-1].target_node))

    def test_tiered_and_any_guests_are_left_on_the_lower_tier(self):
        for mode in ('tiered', 'any'):
            with self.subTest(mode):
                plan = enforced(guest(mode=mode, memory_mode=None, nodes=()))
                self.assertEqual(((), None), (plan.actions, plan.blocked))

    def test_nothing_for_a_top_guest_on_a_host_without_a_lower_tier(self):
        plan = enforced(guest(memory_mode=None, nodes=()),
                        host=untiered(tiered_host()))
        self.assertEqual(((), None), (plan.actions, plan.blocked))

    def test_nothing_for_a_top_guest_kept_on_the_top_tier(self):
        plan = enforced(guest(per_node={0: 1024, 1: 1024}))
        self.assertEqual(((), None), (plan.actions, plan.blocked))

    def test_hands_off_guests_are_left_alone(self):
        plan = enforced(guest(hands_off_reason='nova owns it'))
        self.assertEqual(((), None), (plan.actions, plan.blocked))


class ArrivalOnTheTopTierTest(test_base.TestCase):
    """A top home guest live-migrated here is re-homed on the top tier."""

    def test_its_new_home_is_among_the_top_tier_nodes(self):
        homes = {}
        for mode in ('any', 'top'):
            arrived = guest('home', mode, nodes=(0,), per_node={0: 2048},
                            vcpu_cpus=(0, 1), vcpu_time_ns=(0, 0),
                            blind_arrival=True)
            # It arrived on node 0, the busy one.
            node_usage = (backend.NodeUsage(0, 0.9, 2048),
                          backend.NodeUsage(1, 0.0, 2048),
                          backend.NodeUsage(2, 0.0, 16384))
            decided = arrival.rehome(arrived, tiered_host(), node_usage,
                                     (arrived,), busy=(0.1, 0.1),
                                     move_pages=True)
            homes[mode] = decided.actions[0].nodes
            if mode == 'top':
                self.assertEqual({1}, {a.target_node for a in decided.actions
                                       if isinstance(a, backend.MovePages)})
        # Home is where its vCPUs run: the idle node with CPUs, never
        # the memory-only one, tiers asked for or not.
        self.assertEqual({'any': frozenset({1}), 'top': frozenset({1})},
                         homes)


class ObservedPlacementTest(test_base.TestCase):

    def test_a_top_guest_bound_to_the_whole_top_tier_is_first_touch(self):
        host = enforcement.only_nodes(tiered_host(), {0, 2})
        for mode, expected in (('top', 'first-touch'),
                               ('tiered', 'first-touch'), ('any', 'home')):
            with self.subTest(mode):
                self.assertEqual(expected, enforcement.observed_placement(
                    guest(mode=mode, nodes=(0,)), host))

    def test_a_top_home_guest_on_part_of_the_top_tier_is_home(self):
        self.assertEqual('home', enforcement.observed_placement(
            guest('home', memory_mode='strict', nodes=(0,)), tiered_host()))


class _Host:
    name = 'fake'

    def __init__(self, caps):
        self.caps = frozenset(caps)

    def capabilities(self):
        return self.caps


class RunnerTopTierTest(test_base.TestCase):
    """Through the runner: sparse node ids, the host's capabilities."""

    CAPS = (backend.CAP_VCPU_PINNING, backend.CAP_EMULATOR_PINNING,
            backend.CAP_LIVE_NODESET)

    def admitted(self, caps):
        host = tiered_host(ids=(0, 1, 8))
        inst = guest(per_node={0: 1536, 8: 512})
        snapshot = backend.HostSnapshot(
            topology=host, instances=(inst,), taken_at=0.0,
            usage=(backend.NodeUsage(0, 0.1, 4096),
                   backend.NodeUsage(1, 0.1, 6144),
                   backend.NodeUsage(8, 0.0, 8192)))
        r = runner.Runner(_Host(caps), runner.strategies([]))
        return [action for _, action in r.admitted(snapshot)]

    def test_pages_on_a_sparse_lower_node_move_back_where_pages_move(self):
        self.assertEqual(
            [(8, 1, 512 * 256)],
            [(a.source_node, a.target_node, a.pages) for a in self.admitted(
                self.CAPS + (backend.CAP_PAGE_MIGRATION,))])

    def test_nothing_moves_where_the_host_cannot_move_pages(self):
        self.assertEqual([], self.admitted(self.CAPS))
