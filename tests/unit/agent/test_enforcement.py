"""Boot-time and run-time decisions, table-driven over fixed topologies."""

import testtools

from nova_numa_policy import backend
from nova_numa_policy import enforcement
from nova_numa_policy import policy


def topology(nodes=2, cpus=4, mem=8192, nic_node=None):
    return backend.HostTopology(
        nodes=tuple(backend.NodeInfo(
            id=n, cpus=tuple(range(n * cpus, (n + 1) * cpus)),
            memory_total_mb=mem,
            distances=tuple(10 if o == n else 21 for o in range(nodes)))
            for n in range(nodes)),
        nics=(() if nic_node is None else
              (backend.NicInfo('ens1', nic_node),)))


def usage(*free, load=None):
    load = load or [0.0] * len(free)
    return tuple(backend.NodeUsage(i, load[i], f) for i, f in
                 enumerate(free))


def resolved(value, **specs):
    return policy.resolve({policy.POLICY_KEY: value, **specs})


class BootTuneTest(testtools.TestCase):

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

    def test_home_never_gets_an_empty_cpuset(self):
        tune = enforcement.boot_tune(resolved('home'), topology(),
                                     usage(1000, 6000), 512,
                                     allowed_cpus={0, 1})
        self.assertEqual(frozenset({0, 1}), tune.cpus)


def ring(nodes=3, uniform=False):
    """4 CPUs per node, NIC on node 0; node k is k steps from it."""
    def distance(a, b):
        return 10 if a == b else 21 if uniform else 10 + 6 * abs(a - b)
    return backend.HostTopology(
        nodes=tuple(backend.NodeInfo(
            id=n, cpus=tuple(range(n * 4, (n + 1) * 4)),
            memory_total_mb=8192,
            distances=tuple(distance(n, o) for o in range(nodes)))
            for n in range(nodes)),
        nics=(backend.NicInfo('ens1', 0),))


def placed(*cpus):
    """Guests already on the host, one vCPU each, on ``cpus``."""
    return tuple(backend.InstanceState(uuid=f'p{c}', requested_policy=None,
                                       vcpu_cpus=(c,)) for c in cpus)


NIC_PREFERRED = {policy.NIC_LOCALITY_KEY: 'preferred'}


class NicHeadroomTest(testtools.TestCase):
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


class EnforceTest(testtools.TestCase):

    def kinds(self, plan):
        return [type(a).__name__ for a in plan.actions]

    def test_home_without_numatune_sets_nodeset_then_pins(self):
        plan = enforcement.enforce(instance('home'), topology(),
                                   usage(1000, 6000))
        self.assertEqual(['SetNodeset', 'PinVcpu', 'PinVcpu', 'PinEmulator'],
                         self.kinds(plan))
        self.assertEqual(frozenset({1}), plan.actions[0].nodes)
        self.assertEqual(frozenset({4, 5, 6, 7}), plan.actions[1].cpus)

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


class AppliedPolicyTest(testtools.TestCase):

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


class UndoTest(testtools.TestCase):

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
