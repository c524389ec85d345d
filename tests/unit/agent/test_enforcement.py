"""Boot-time and run-time decisions, table-driven over fixed topologies."""

import dataclasses

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import policy
from nova_numa_policy.decisions import enforcement
from tests import base as test_base
from tests import topology_factory


def topology(nodes=2, cpus=4, mem=8192, nic_node=None):
    return topology_factory.host_topology(
        nodes, cpus, mem, nics=(() if nic_node is None else
                                (backend.NicInfo('ens1', nic_node),)))


def usage(*free, load=None):
    load = load or [0.0] * len(free)
    return tuple(backend.NodeUsage(i, load[i], f) for i, f in
                 enumerate(free))


def resolved(value, **specs):
    return policy.resolve({policy.POLICY_KEY: value, **specs})


class BootTuneTest(test_base.TestCase):

    CASES = [
        # (name, policy, topology, usage, memory, expected (mode, nodes, cpus))
        ('interleave spreads over every node', resolved('interleave'),
         topology(), (), 1024, ('interleave', {0, 1}, set())),
        ('home picks the node with most free memory', resolved('home'),
         topology(), usage(1000, 6000), 2048, ('strict', {1}, {4, 5, 6, 7})),
        ('home takes two nodes when one cannot hold the guest',
         resolved('home'), topology(), usage(3000, 3000), 4096,
         ('strict', {0, 1}, set(range(8)))),
        ('home prefers the less loaded node over free memory',
         resolved('home'), topology(), usage(6000, 5000, load=[0.9, 0.1]),
         2048, ('strict', {1}, {4, 5, 6, 7})),
        ('home goes near the NIC when locality is asked',
         resolved('home', **{policy.NIC_LOCALITY_KEY: 'preferred'}),
         topology(nic_node=0), usage(1000, 6000), 512,
         ('strict', {0}, {0, 1, 2, 3})),
        ('first-touch near the NIC prefers its node',
         resolved('first-touch', **{policy.NIC_LOCALITY_KEY: 'required'}),
         topology(nic_node=1), (), 512, ('preferred', {1}, {4, 5, 6, 7})),
        ('carrefour variants start as their base placement',
         resolved('interleave+carrefour'), topology(), (), 512,
         ('interleave', {0, 1}, set())),
    ]
    NONE_CASES = [
        ('first-touch is the kernel default', resolved('first-touch'),
         topology()),
        ('auto starts as first-touch', resolved('auto'), topology()),
        ('no policy, no tune', None, topology()),
        ('a single node leaves nothing to choose', resolved('interleave'),
         topology(nodes=1)),
        ('nova owns the topology',
         policy.resolve({policy.POLICY_KEY: 'first-touch',
                         'hw:numa_nodes': '1'}), topology()),
    ]

    def test_tunes(self):
        for name, pol, topo, use, mem, (mode, nodes, cpus) in self.CASES:
            tune = enforcement.boot_tune(pol, topo, use, mem)
            self.assertEqual((mode, frozenset(nodes), frozenset(cpus)),
                             (tune.mode, tune.nodes, tune.cpus), name)

    def test_no_tune(self):
        for name, pol, topo in self.NONE_CASES:
            self.assertIsNone(enforcement.boot_tune(pol, topo), name)

    def test_home_cpus_stay_within_nova_allowed_cpus(self):
        tune = enforcement.boot_tune(resolved('home'), topology(),
                                     usage(1000, 6000), 512,
                                     allowed_cpus={2, 3, 4, 5})
        self.assertEqual(frozenset({4, 5}), tune.cpus)

    def test_home_goes_to_a_node_where_its_vcpus_may_run(self):
        # Node 1 has more free memory, but nova allows only node 0's CPUs:
        # memory there would be remote from every vCPU.
        tune = enforcement.boot_tune(resolved('home'), topology(),
                                     usage(1000, 6000), 512,
                                     allowed_cpus={0, 1})
        self.assertEqual((frozenset({0}), frozenset({0, 1})),
                         (tune.nodes, tune.cpus))

    def test_home_never_gets_an_empty_cpuset(self):
        # A bound no node of this topology holds says nothing of nodes.
        tune = enforcement.boot_tune(resolved('home'), topology(),
                                     usage(1000, 6000), 512,
                                     allowed_cpus={40, 41})
        self.assertEqual((frozenset({1}), frozenset({40, 41})),
                         (tune.nodes, tune.cpus))


def ring(nodes=3, uniform=False):
    """4 CPUs per node, NIC on node 0; node k is k steps from it."""
    def distance(a, b):
        return 10 if a == b else 21 if uniform else 10 + 6 * abs(a - b)
    return topology_factory.host_topology(
        nodes, distance=distance, nics=(backend.NicInfo('ens1', 0),))


def placed(*cpus):
    """Guests already on the host, one vCPU each, on ``cpus``."""
    return tuple(backend.InstanceState(uuid=f'p{c}', requested_policy=None,
                                       vcpu_cpus=(c,)) for c in cpus)


NIC_PREFERRED = {policy.NIC_LOCALITY_KEY: 'preferred'}


class NicHeadroomTest(test_base.TestCase):
    """Seed 002: NIC-prior only while the NIC node stays under 80 %.

    Four CPUs per node: 80 % is 3.2 vCPUs, so the NIC node takes a third
    vCPU but not a fourth.
    """

    CASES = [
        # (name, policy, topology, usage, placed, vcpus, threshold,
        #  expected (mode, nodes) or None, word in the reason)
        ('idle NIC node: NIC-prior', resolved('first-touch', **NIC_PREFERRED),
         ring(), (), placed(), 1, 0.8, ('preferred', {0}), 'NIC-prior'),
        ('a third vCPU stays under 80 %',
         resolved('first-touch', **NIC_PREFERRED), ring(), (), placed(0, 1),
         1, 0.8, ('preferred', {0}), 'NIC-prior'),
        ('a fourth would be 100 %: the nearest node with room',
         resolved('first-touch', **NIC_PREFERRED), ring(), (),
         placed(0, 1, 2), 1, 0.8, ('preferred', {1}), 'NUMA-prior'),
        ('a two-vCPU guest does not fit where a one-vCPU one does',
         resolved('first-touch', **NIC_PREFERRED), ring(), (), placed(0, 1),
         2, 0.8, ('preferred', {1}), 'NUMA-prior'),
        ('measured load counts when no guest is seen',
         resolved('first-touch', **NIC_PREFERRED), ring(),
         usage(1, 1, 1, load=[0.75, 0.0, 0.0]), placed(), 1, 0.8,
         ('preferred', {1}), 'NUMA-prior'),
        ('measured load and placed guests are not added up',
         resolved('first-touch', **NIC_PREFERRED), ring(),
         usage(1, 1, 1, load=[0.5, 0.0, 0.0]), placed(0, 1), 1, 0.8,
         ('preferred', {0}), 'NIC-prior'),
        ('the next nearest when the nearest is full too',
         resolved('first-touch', **NIC_PREFERRED), ring(), (),
         placed(0, 1, 2, 4, 5, 6), 1, 0.8, ('preferred', {2}), 'NUMA-prior'),
        ('equally near: the least loaded',
         resolved('first-touch', **NIC_PREFERRED), ring(uniform=True), (),
         placed(0, 1, 2, 4), 1, 0.8, ('preferred', {2}), 'NUMA-prior'),
        ('no node has room: the kernel default',
         resolved('first-touch', **NIC_PREFERRED), ring(), (),
         placed(0, 1, 2, 4, 5, 6, 8, 9, 10), 1, 0.8, None, 'every node'),
        ('the operator raises the threshold',
         resolved('first-touch', **NIC_PREFERRED), ring(), (),
         placed(0, 1, 2), 1, 1.0, ('preferred', {0}), 'NIC-prior'),
        ('required keeps the NIC node whatever its load',
         resolved('first-touch', **{policy.NIC_LOCALITY_KEY: 'required'}),
         ring(), (), placed(0, 1, 2, 3), 1, 0.8, ('preferred', {0}),
         'required'),
        ('home near a full NIC node goes to the nearest with room',
         resolved('home', **NIC_PREFERRED), ring(), usage(4096, 4096, 4096),
         placed(0, 1, 2), 1, 0.8, ('strict', {1}), 'NUMA-prior'),
        ('no locality asked: load plays no part',
         resolved('first-touch'), ring(), (), placed(0, 1, 2), 1, 0.8,
         None, "kernel's default"),
    ]

    def test_plans(self):
        for (name, pol, topo, use, guests, vcpus, threshold, expected,
             word) in self.CASES:
            plan = enforcement.boot_plan(pol, topo, use, 512, vcpus=vcpus,
                                         instances=guests,
                                         threshold=threshold)
            got = (None if plan.tune is None
                   else (plan.tune.mode, plan.tune.nodes))
            want = (None if expected is None
                    else (expected[0], frozenset(expected[1])))
            self.assertEqual(want, got, name)
            self.assertIn(word, plan.reason, name)
            if plan.tune is not None:
                self.assertEqual(plan.reason, plan.tune.reason, name)
                self.assertEqual(enforcement.cpus_of(topo, plan.tune.nodes),
                                 plan.tune.cpus, name)

    def test_boot_tune_is_the_plan_tune(self):
        pol = resolved('first-touch', **NIC_PREFERRED)
        tune = enforcement.boot_tune(pol, ring(), (), 512,
                                     instances=placed(0, 1, 2))
        self.assertEqual(frozenset({1}), tune.nodes)


def instance(value, mode=None, nodes=(), affinity=None, emulator=(),
             hands_off=None, memory_mb=1024):
    full = frozenset(range(8))
    return backend.InstanceState(
        uuid='u1', requested_policy=value, hands_off_reason=hands_off,
        vcpu_affinity=affinity or (full, full), memory_mb=memory_mb,
        memory_mode=mode, memory_nodes=frozenset(nodes),
        emulator_affinity=frozenset(emulator) or full)


class EnforceTest(test_base.TestCase):

    def kinds(self, plan):
        return [type(a).__name__ for a in plan.actions]

    def test_home_without_numatune_sets_nodeset_then_pins(self):
        plan = enforcement.enforce(instance('home'), topology(),
                                   usage(1000, 6000))
        self.assertEqual(['SetNodeset', 'PinVcpu', 'PinVcpu', 'PinEmulator'],
                         self.kinds(plan))
        self.assertEqual(frozenset({1}), plan.actions[0].nodes)
        self.assertEqual(frozenset({4, 5, 6, 7}), plan.actions[1].cpus)

    def test_home_binds_memory_where_nova_lets_its_vcpus_run(self):
        bound = dataclasses.replace(instance('home'),
                                    allowed_cpus=frozenset({1, 2}))
        plan = enforcement.enforce(bound, topology(), usage(1000, 6000))
        self.assertEqual((frozenset({0}), frozenset({1, 2})),
                         (plan.actions[0].nodes, plan.actions[1].cpus))

    def test_home_already_bound_keeps_its_nodes(self):
        home = frozenset({0, 1, 2, 3})
        plan = enforcement.enforce(
            instance('home', 'strict', {0}, affinity=(home, home),
                     emulator=home), topology(), usage(1000, 6000))
        self.assertEqual([], self.kinds(plan))
        self.assertIsNone(plan.blocked)

    def test_home_repins_only_what_strayed(self):
        home = frozenset({0, 1, 2, 3})
        plan = enforcement.enforce(
            instance('home', 'strict', {0}, affinity=(home, frozenset({7})),
                     emulator=home), topology(), usage(1000, 6000))
        self.assertEqual(['PinVcpu'], self.kinds(plan))
        self.assertEqual(1, plan.actions[0].vcpu)

    def test_home_in_interleave_mode_is_blocked_until_reboot(self):
        plan = enforcement.enforce(instance('home', 'interleave', {0, 1}),
                                   topology(), ())
        self.assertEqual([], self.kinds(plan))
        self.assertIn('next hard reboot', plan.blocked)

    def test_home_without_live_nodeset_is_blocked(self):
        plan = enforcement.enforce(instance('home'), topology(), (),
                                   can_set_nodeset=False)
        self.assertEqual([], self.kinds(plan))
        self.assertIn("nodeset", plan.blocked)

    def test_interleave_started_without_it_is_blocked(self):
        plan = enforcement.enforce(instance('interleave'), topology(), ())
        self.assertEqual([], self.kinds(plan))
        self.assertIn('when the guest starts', plan.blocked)

    def test_nothing_for_hands_off_first_touch_or_one_node(self):
        for inst, topo in [(instance('home', hands_off='nova'), topology()),
                           (instance('first-touch'), topology()),
                           (instance(None), topology()),
                           (instance('home'), topology(nodes=1))]:
            plan = enforcement.enforce(inst, topo, ())
            self.assertEqual(((), None), (plan.actions, plan.blocked))


class AppliedPolicyTest(test_base.TestCase):

    CASES = [
        (instance('interleave', 'interleave', {0, 1}), 'interleave'),
        (instance('interleave'), 'first-touch'),
        (instance('home', 'strict', {1}), 'home'),
        (instance('home', 'strict', {0, 1}), 'first-touch'),
        (instance('auto', 'preferred', {1}), 'first-touch'),
        (instance(None, 'interleave', {0, 1}), 'none'),
        (instance('home', 'strict', {1}, hands_off='nova'), 'none'),
    ]

    def test_applied(self):
        for inst, expected in self.CASES:
            self.assertEqual(expected,
                             enforcement.applied_policy(inst, topology()),
                             inst)


class UndoTest(test_base.TestCase):

    def test_undo_restores_previous_values(self):
        before = instance('home', 'strict', {0},
                          affinity=(frozenset({1}), frozenset({2})),
                          emulator={3})
        topo = topology()
        cases = [
            (backend.PinVcpu('u1', 'r', vcpu=1, cpus=frozenset({5})),
             frozenset({2})),
            (backend.PinEmulator('u1', 'r', cpus=frozenset({5})),
             frozenset({3})),
        ]
        for action, expected in cases:
            self.assertEqual(expected,
                             enforcement.undo(action, before, topo).cpus)
        nodes = enforcement.undo(
            backend.SetNodeset('u1', 'r', nodes=frozenset({1})), before,
            topo).nodes
        self.assertEqual(frozenset({0}), nodes)

    def test_undo_of_a_nodeset_on_an_unbound_guest_allows_every_node(self):
        undo = enforcement.undo(
            backend.SetNodeset('u1', 'r', nodes=frozenset({1})),
            instance('home'), topology())
        self.assertEqual(frozenset({0, 1}), undo.nodes)


def sockets(nodes=4, cpus=4, mem=8192):
    """Two nodes per socket: 10 within a node, 16 on its socket, 21 else."""
    def distance(a, b):
        return 10 if a == b else 16 if a // 2 == b // 2 else 21
    return topology_factory.host_topology(nodes, cpus, mem,
                                          distance=distance)


def sparse(ids=(0, 1, 8, 9), cpus=4, nic=None):
    """Nodes with sparse ids, as on some two-socket hosts: 0, 1, 8, 9.

    Rows of distances are in node order, not id order: 0 and 1 are one
    socket (16 apart), 8 and 9 the other; 21 across.
    """
    def distance(a, b):
        return 10 if a == b else 16 if (a < 8) == (b < 8) else 21
    return topology_factory.host_topology(
        cpus=cpus, ids=ids, distance=distance,
        nics=() if nic is None else (backend.NicInfo('ens1', nic),))


class SparseNodeIdsTest(test_base.TestCase):
    """Distances read by node id, never by position in a row."""

    def test_the_topology_reads_distances_by_id(self):
        topo = sparse()
        self.assertEqual(
            (16, 21, 10),
            (topo.distance(8, 9), topo.distance(1, 8), topo.distance(9, 9)))

    def test_a_full_nic_node_hands_over_to_its_socket_sibling(self):
        # The NIC's node 8 (CPUs 8-11) holds three vCPUs: a fourth would
        # take it over 80 %; 9 is 16 away, 0 and 1 are 21.
        plan = enforcement.boot_plan(
            resolved('first-touch', **NIC_PREFERRED), sparse(nic=8), (),
            512, vcpus=1, instances=placed(8, 9, 10), threshold=0.8)
        self.assertEqual(('preferred', frozenset({9})),
                         (plan.tune.mode, plan.tune.nodes))

    def test_a_large_guest_gets_one_sockets_nodes(self):
        half, _ = enforcement.half_of_host(sparse(), vcpus=8)
        self.assertEqual(frozenset({0, 1}), half)
        topo = sparse()
        busy = enforcement.node_vcpus(topo, (guest_on(0, 1, 4, 5),))
        half, _ = enforcement.half_of_host(topo, vcpus=8, placed=busy)
        self.assertEqual(frozenset({8, 9}), half)


def guest_on(*cpus):
    """A guest already on the host whose vCPUs run on ``cpus``."""
    return backend.InstanceState(uuid=f'g{cpus[0]}', requested_policy=None,
                                 vcpu_cpus=tuple(cpus))


def pinned_nodes(topo, pins):
    """The node of each vCPU's pin set (each set is one node's CPUs)."""
    found = []
    for cpus in pins:
        nodes = {n.id for n in topo.nodes if cpus <= frozenset(n.cpus)}
        found.append(nodes.pop())
    return found


class DealVcpusTest(test_base.TestCase):

    def test_each_vcpu_goes_to_the_least_busy_node_ids_breaking_ties(self):
        topo = topology(nodes=4, cpus=4)
        pins = enforcement.deal_vcpus(topo, {0, 1, 2, 3}, 6)
        self.assertEqual([0, 1, 2, 3, 0, 1], pinned_nodes(topo, pins))
        self.assertEqual(frozenset({0, 1, 2, 3}), pins[0])

    def test_among_equally_busy_nodes_the_emptiest_memory_comes_first(self):
        # vCPU 0 boots the guest and first-touches what its master thread
        # allocates: not beside another guest's memory when a node with
        # less of it is as idle (doc/source/policy.rst, first-touch).
        topo = topology(nodes=4, cpus=4)
        pins = enforcement.deal_vcpus(topo, {0, 1, 2, 3}, 6,
                                      usage=usage(2048, 6144, 8192, 4096))
        self.assertEqual([2, 1, 3, 0, 2, 1], pinned_nodes(topo, pins))

    def test_nodes_other_guests_fill_come_last(self):
        topo = topology(nodes=4, cpus=4)
        placed = enforcement.node_vcpus(topo, (guest_on(0, 1, 4),))
        pins = enforcement.deal_vcpus(topo, {0, 1, 2, 3}, 6, placed=placed)
        self.assertEqual([2, 3, 1, 2, 3, 0], pinned_nodes(topo, pins))

    def test_only_the_given_nodes_and_cpus_nova_allows(self):
        topo = topology(nodes=4, cpus=4)
        pins = enforcement.deal_vcpus(topo, {1, 2, 3}, 4,
                                      allowed_cpus={5, 6, 9, 10, 11})
        # Node 3 has no allowed CPU; nodes 1 and 2 keep only theirs.
        self.assertEqual((frozenset({5, 6}), frozenset({9, 10, 11}),
                          frozenset({5, 6}), frozenset({9, 10, 11})), pins)
        self.assertEqual((), enforcement.deal_vcpus(topo, {3}, 2,
                                                    allowed_cpus={5, 6}))


class HalfOfHostTest(test_base.TestCase):

    def test_a_large_guest_gets_the_most_compact_idle_half(self):
        half, reason = enforcement.half_of_host(sockets(), vcpus=8)
        self.assertEqual(frozenset({0, 1}), half)
        self.assertIn('large guest', reason)

    def test_the_next_large_guest_gets_the_other_half(self):
        topo = sockets()
        placed = enforcement.node_vcpus(topo, (guest_on(0, 1, 4, 5),))
        half, _ = enforcement.half_of_host(topo, vcpus=8, placed=placed)
        self.assertEqual(frozenset({2, 3}), half)

    def test_no_idle_half_leaves_the_guest_spread(self):
        topo = sockets()
        placed = enforcement.node_vcpus(topo, (guest_on(0, 4, 8),))
        half, reason = enforcement.half_of_host(topo, vcpus=8, placed=placed)
        self.assertEqual(frozenset(), half)
        self.assertIn('no idle half', reason)

    def test_measured_load_makes_a_node_busy_too(self):
        use = tuple(backend.NodeUsage(n, 0.5 if n == 1 else 0.0, 8192)
                    for n in range(4))
        half, _ = enforcement.half_of_host(sockets(), use, vcpus=8)
        self.assertEqual(frozenset({2, 3}), half)

    def test_a_half_without_the_memory_is_no_half(self):
        use = tuple(backend.NodeUsage(n, 0.0, 1024) for n in range(4))
        half, _ = enforcement.half_of_host(sockets(), use, memory_mb=4096,
                                           vcpus=8)
        self.assertEqual(frozenset(), half)

    def test_small_guests_and_small_hosts_are_not_kept_to_a_half(self):
        cases = [
            ('a quarter of the host is not large', sockets(), 4, 0.25,
             'not a large guest'),
            ('the operator turned it off', sockets(), 8, 1.0,
             'not a large guest'),
            ('two nodes have no half of two', topology(), 6, 0.25,
             'no half of two nodes'),
            ('a guest half the host cannot hold', sockets(), 12, 0.25,
             'no idle half'),
        ]
        for name, topo, vcpus, share, word in cases:
            half, reason = enforcement.half_of_host(topo, vcpus=vcpus,
                                                    large_share=share)
            self.assertEqual(frozenset(), half, name)
            self.assertIn(word, reason, name)


class SpreadBootPlanTest(test_base.TestCase):

    def test_a_large_interleaved_guest_keeps_to_its_half(self):
        topo = sockets()
        plan = enforcement.boot_plan(resolved('interleave+carrefour'), topo,
                                     vcpus=8, memory_mb=4096)
        tune = plan.tune
        self.assertEqual(('interleave', frozenset({0, 1})),
                         (tune.mode, tune.nodes))
        self.assertEqual(frozenset(range(8)), tune.cpus)
        self.assertEqual([0, 1] * 4, pinned_nodes(topo, tune.vcpu_pins))
        self.assertIn('large guest', plan.reason)

    def test_a_large_first_touch_guest_first_touches_within_its_half(self):
        topo = sockets()
        plan = enforcement.boot_plan(
            resolved('first-touch'), topo, vcpus=8, memory_mb=4096,
            instances=(guest_on(0, 1, 4, 5),))
        self.assertEqual(('restrictive', frozenset({2, 3})),
                         (plan.tune.mode, plan.tune.nodes))
        self.assertEqual([2, 3] * 4, pinned_nodes(topo, plan.tune.vcpu_pins))

    def test_a_guest_over_several_nodes_has_its_vcpus_dealt(self):
        topo = topology(nodes=8, cpus=6)
        for value, mode, nodes in [('interleave', 'interleave', range(8)),
                                   ('first-touch', None, ())]:
            plan = enforcement.boot_plan(resolved(value), topo, vcpus=12,
                                         memory_mb=4096)
            self.assertEqual((mode, frozenset(nodes), frozenset()),
                             (plan.tune.mode, plan.tune.nodes,
                              plan.tune.cpus), value)
            self.assertEqual(list(range(8)) + [0, 1, 2, 3],
                             pinned_nodes(topo, plan.tune.vcpu_pins), value)
            self.assertIn('dealt', plan.reason, value)

    def test_a_guest_one_node_holds_is_left_to_the_kernel(self):
        plan = enforcement.boot_plan(resolved('first-touch'),
                                     topology(nodes=8, cpus=6), vcpus=6)
        self.assertIsNone(plan.tune)
        self.assertIn("kernel's default", plan.reason)
        tune = enforcement.boot_tune(resolved('interleave'),
                                     topology(nodes=8, cpus=6), vcpus=6)
        self.assertEqual(((), frozenset(range(8))),
                         (tune.vcpu_pins, tune.nodes))

    def test_home_takes_the_nodes_its_vcpus_need(self):
        tune = enforcement.boot_tune(resolved('home'), topology(nodes=4),
                                     usage(8000, 8000, 8000, 8000), 1024,
                                     vcpus=6)
        self.assertEqual(('strict', frozenset({0, 1})),
                         (tune.mode, tune.nodes))

    def test_what_a_restrictive_guest_reports_as_applied(self):
        topo = sockets()
        for nodes, expected in [({2, 3}, 'first-touch'), ({2}, 'home')]:
            inst = instance('first-touch', 'restrictive', nodes)
            self.assertEqual(expected,
                             enforcement.observed_placement(inst, topo))
