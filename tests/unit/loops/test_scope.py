"""First do no harm: what the loops may touch, and where.

Every pin stays inside the CPUs nova allows a guest, guests that asked
for nothing are left alone, and a guest's requested placement (home,
interleave) is not undone by a loop that moves vCPUs.
"""

import dataclasses

import numpy as np

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import scope
from nova_numa_policy.decisions import enforcement
from nova_numa_policy.decisions import execution
from nova_numa_policy.loops import base
from nova_numa_policy.loops import brm
from nova_numa_policy.loops import runner
from nova_numa_policy.loops import vnuioa
from numa_policy_lab.sim import backend as sim_backend
from numa_policy_lab.sim import scenarios
from tests import base as test_base
from tests.unit.loops import snapshots as s

NODE0 = frozenset(range(5))


def _vnuioa(instances):
    topo = s.topology(nodes=2, cpus=5)
    actions, _ = vnuioa.Vnuioa().decide(s.snapshot(instances, topo), {},
                                        vnuioa.Config())
    return actions


def _network_guest(policy='first-touch', allowed=frozenset()):
    # Runs on node 1, its NIC on node 0: vNUIOA wants it on node 0.
    return dataclasses.replace(
        s.instance('net', (5,), {1: 1024}, io_rate=600, policy=policy),
        allowed_cpus=allowed)


class AllowedCpusTest(test_base.TestCase):

    def test_vnuioa_moves_a_guest_nova_lets_run_anywhere(self):
        pins = [a for a in _vnuioa([_network_guest()])
                if isinstance(a, backend.PinVcpu)]
        self.assertEqual([NODE0], [a.cpus for a in pins])

    def test_vnuioa_pins_only_to_the_allowed_part_of_a_node(self):
        allowed = frozenset({3, 4, 5, 6})
        pins = [a for a in _vnuioa([_network_guest(allowed=allowed)])
                if isinstance(a, backend.PinVcpu)]
        self.assertEqual([frozenset({3, 4})], [a.cpus for a in pins])

    def test_vnuioa_never_goes_to_a_node_nova_does_not_allow(self):
        # Nova allows only node 1's CPUs 5-7: the NIC's node 0 is out,
        # the guest stays on node 1, within the bound.
        allowed = frozenset({5, 6, 7})
        pins = [a.cpus for a in _vnuioa([_network_guest(allowed=allowed)])
                if isinstance(a, backend.PinVcpu)]
        self.assertEqual([allowed], pins)

    def test_home_enforcement_keeps_the_driver_bound(self):
        # Home on node 0 where nova allows only CPUs 0 and 1: the agent
        # used to widen the pins to the whole node every period.
        topo = s.topology(nodes=2, cpus=4)
        usage = s.snapshot([], topo).usage
        inst = dataclasses.replace(
            s.instance('home', (0, 1), {0: 512}, policy='home'),
            memory_mode='strict', memory_nodes=frozenset({0}),
            memory_mb=512, allowed_cpus=frozenset({0, 1}))
        plan = enforcement.enforce(inst, topo, usage)
        pins = {a.cpus for a in plan.actions}
        self.assertEqual({frozenset({0, 1})}, pins)

    def test_an_undo_restores_no_more_than_nova_allows(self):
        topo = s.topology(nodes=2, cpus=4)
        inst = dataclasses.replace(
            s.instance('g', (0,), policy='first-touch', affinity=(
                frozenset(),)), allowed_cpus=frozenset({1, 2}))
        pin = backend.PinVcpu('g', 'test', vcpu=0, cpus=frozenset({1}))
        self.assertEqual(frozenset({1, 2}),
                         enforcement.undo(pin, inst, topo).cpus)

    def test_the_runner_refuses_a_pin_outside_the_allowed_cpus(self):
        class Reckless(base.Strategy):
            name = 'reckless'
            Config = dict

            def decide(self, snapshot, state, config):
                return [backend.PinVcpu('g', 'reckless: anywhere', vcpu=0,
                                        cpus=frozenset({6})),
                        backend.PinVcpu('g', 'reckless: allowed', vcpu=0,
                                        cpus=frozenset({1}))], state

        host, vms = scenarios.SCENARIOS['master-slave'].build(0)
        sim = sim_backend.SimulatedBackend(host, vms)
        r = runner.Runner(sim, [Reckless()])
        inst = dataclasses.replace(s.instance('g', (0,), policy='auto'),
                                   allowed_cpus=frozenset({0, 1}))
        admitted = r.decide(s.snapshot([inst]))
        self.assertEqual(['reckless: allowed'],
                         [a.reason for _, a in admitted])
        self.assertEqual(1, r.actions_refused)


class RequestedPolicyTest(test_base.TestCase):

    def test_vnuioa_leaves_home_and_interleave_guests_where_they_are(self):
        for policy, moved in (('first-touch', True), ('auto', True),
                              ('first-touch+carrefour', True),
                              ('home', False), ('interleave', False),
                              ('interleave+carrefour', False)):
            actions = _vnuioa([_network_guest(policy)])
            self.assertEqual(moved, bool(actions), policy)

    def test_brm_leaves_interleaved_vcpus_where_they_are(self):
        topo = s.topology(nodes=2, cpus=4)
        config = brm.Config(prob_step=100)
        for policy, moved in (('first-touch', True), ('interleave', False)):
            # A vCPU on node 0 whose memory is all on node 1.
            inst = s.instance('g', (0,), {1: 1024}, policy=policy)
            state = brm.Brm().initial_state()
            for _ in range(3):
                actions, state = brm.Brm().decide(
                    s.snapshot([inst], topo), state, config)
                if actions:
                    break
            self.assertEqual(moved, bool(actions), policy)


class SoakTest(test_base.TestCase):
    """1,000 simulated periods of every loop on the I/O mix."""

    def test_unmanaged_guests_are_untouched_and_pins_stay_allowed(self):
        host, vms = scenarios.SCENARIOS['io-mix'].build(0)
        unasked = {vm.uuid for vm in vms[:3]}
        for vm in vms[:3]:
            vm.requested_policy = None
        # Three guests nova confined to the first half of the CPUs.
        half = frozenset(range(host.n_cpus // 2))
        bounded = {vm.uuid for vm in vms[3:6]}
        for vm in vms[3:6]:
            vm.allowed_cpus = half
            vm.vcpu_cpus[:] = [min(half)]
            vm.vcpu_affinity = [half]
        sim = sim_backend.SimulatedBackend(host, vms, seed=0)
        r = runner.Runner(sim, runner.strategies(
            ('carrefour', 'brm', 'vnuioa', 'auto')), seed=0)
        before = {vm.uuid: (tuple(vm.vcpu_affinity), vm.seg_mb.copy())
                  for vm in sim.vms if vm.uuid in unasked}
        applied = 0
        for _ in range(1000):
            applied += execution.period(r, sim).applied
            sim.advance()
            for vm in sim.vms:
                if vm.uuid in bounded:
                    self.assertTrue(all(a <= half
                                        for a in vm.vcpu_affinity), vm.uuid)
        self.assertGreater(applied, 0)  # the loops did act on the others
        for vm in sim.vms:
            if vm.uuid in unasked:
                affinity, seg = before[vm.uuid]
                self.assertEqual(affinity, tuple(vm.vcpu_affinity))
                self.assertTrue(np.array_equal(seg, vm.seg_mb), vm.uuid)
                self.assertEqual((0, 0), (vm.vcpu_moves, vm.pages_moved))

    def test_the_scope_rule_names_why(self):
        self.assertEqual(scope.NO_POLICY, scope.unmanaged_reason(
            scope.Scope(), requested=None))
        self.assertIsNone(scope.unmanaged_reason(
            scope.Scope(), requested='auto'))
