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
