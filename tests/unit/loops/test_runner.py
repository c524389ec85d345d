from nova_numa_policy.contracts import backend
from nova_numa_policy.decisions import execution
from nova_numa_policy.loops import base
from nova_numa_policy.loops import runner
from numa_policy_lab.sim import backend as sim_backend
from numa_policy_lab.sim import scenarios
from tests import base as test_base


class _Fixed(base.Strategy):
    name = 'fixed'
    Config = dict

    def __init__(self, actions, caps=frozenset(), atomic=False,
                 name='fixed'):
        self.actions = actions
        self.required_capabilities = caps
        self.atomic_plans = atomic
        self.name = name

    def decide(self, snapshot, state, config):
        return list(self.actions), state


class _Remembers(base.Strategy):
    """Records which guests the runner tells it to forget."""

    name = 'remembers'
    Config = dict

    def __init__(self):
        self.forgotten = []

    def decide(self, snapshot, state, config):
        return [], state

    def forget(self, state, uuids):
        self.forgotten.append(set(uuids))
        return state


def _sim():
    host, vms = scenarios.SCENARIOS['master-slave'].build(0)
    vms[1].hands_off_reason = 'hw:numa_nodes set'
    return sim_backend.SimulatedBackend(host, vms)


def _move(uuid, pages, reason='test'):
    return backend.MovePages(instance_uuid=uuid, source_node=0,
                             target_node=1, pages=pages, reason=reason)


class RunnerTest(test_base.TestCase):

    def test_page_budget_trims_and_drops(self):
        sim = _sim()
        budget = runner.Budget(pages_per_second=100, period_s=5.0)
        r = runner.Runner(sim, [_Fixed([_move('master-slave-0', 300),
                                        _move('master-slave-0', 300)])],
                          budget=budget)
        admitted = r.admitted(sim.observe())
        self.assertEqual([300, 200], [a.pages for _, a in admitted])
        r2 = runner.Runner(sim, [_Fixed([_move('master-slave-0', 600),
                                         _move('master-slave-0', 1)])],
                           budget=budget)
        self.assertEqual([500], [a.pages
                                 for _, a in r2.admitted(sim.observe())])

    def test_vcpu_budget(self):
        pins = [backend.PinVcpu(instance_uuid='master-slave-0', vcpu=v,
                                cpus=frozenset({0}), reason='t')
                for v in range(5)]
        sim = _sim()
        r = runner.Runner(sim, [_Fixed(pins)],
                          budget=runner.Budget(vcpu_moves_per_period=2))
        self.assertEqual(2, len(r.admitted(sim.observe())))

    def test_a_rebooted_guest_is_forgotten_by_every_loop(self):
        sim = _sim()
        loop = _Remembers()
        r = runner.Runner(sim, [loop])
        r.admitted(sim.observe())
        sim.advance()
        r.admitted(sim.observe())
        self.assertEqual([], loop.forgotten)  # still running
        sim.reboot('master-slave-0')
        r.admitted(sim.observe())
        self.assertEqual([{'master-slave-0'}], loop.forgotten)

    def test_hands_off_and_reasonless_actions_are_dropped(self):
        sim = _sim()
        r = runner.Runner(sim, [_Fixed([_move('master-slave-1', 10),
                                        _move('master-slave-0', 10, '')])])
        self.assertEqual([], r.admitted(sim.observe()))
        self.assertEqual(2, r.actions_dropped)

    def test_guests_waiting_for_an_undo_are_left_alone(self):
        sim = _low()
        r = runner.Runner(sim, [_Fixed([_move('low-0', 10),
                                        _move('low-2', 10)])])
        admitted = r.admitted(sim.observe(), waiting={'low-0'})
        self.assertEqual(['low-2'],
                         [a.instance_uuid for _, a in admitted])

    def test_dry_run_decides_but_does_not_apply(self):
        sim = _sim()
        before = sim.vm('master-slave-0').seg_mb.copy()
        r = runner.Runner(sim, [_Fixed([_move('master-slave-0', 1000)])],
                          dry_run=True)
        outcome = execution.period(r, sim)
        self.assertEqual(1, len(outcome.actions))
        self.assertTrue((before == sim.vm('master-slave-0').seg_mb).all())
        self.assertEqual(0, outcome.applied)

    def test_loop_needing_a_missing_capability_is_not_started(self):
        host, vms = scenarios.SCENARIOS['low'].build(0)
        sim = sim_backend.SimulatedBackend(host, vms, signal=None)
        r = runner.Runner(sim, runner.strategies(['carrefour', 'brm']))
        self.assertEqual(['carrefour'], r.skipped)
        self.assertEqual(['policy', 'brm'], [s.name for s in r.strategies])
        self.assertEqual(('brm',), r.loops)

    def test_unknown_loop_name(self):
        self.assertRaises(ValueError, runner.strategies, ['nope'])


def _low():
    host, vms = scenarios.SCENARIOS['low'].build(0)
    return sim_backend.SimulatedBackend(host, vms)


def _pin(uuid, vcpu, cpus, reason='t'):
    return backend.PinVcpu(instance_uuid=uuid, vcpu=vcpu,
                           cpus=frozenset(cpus), reason=reason)


class PolicyFirstTest(test_base.TestCase):
    """The policy's plans are atomic and come before the loops."""

    def test_the_policy_is_the_first_strategy_of_every_runner(self):
        self.assertEqual(['policy', 'brm', 'auto'],
                         [s.name for s in runner.strategies(['brm', 'auto'])])
        self.assertEqual(['policy'],
                         [s.name for s in runner.strategies([])])

    def test_a_plan_that_does_not_fit_waits_whole(self):
        sim = _low()
        snap = sim.observe()
        plan = [_pin('low-0', v, {0}) for v in range(3)]
        # Where it runs already: no arrival for the guard to weigh.
        other = [_pin('low-2', 0, {snap.instances[2].vcpu_cpus[0]})]
        r = runner.Runner(sim, [_Fixed(plan + other, atomic=True)],
                          budget=runner.Budget(actions_per_period=2))
        admitted = r.admitted(snap)
        # Three steps do not fit in two: none of them runs, the next
        # guest's one-step plan does.
        self.assertEqual(['low-2'],
                         [a.instance_uuid for _, a in admitted])
        self.assertEqual(1, r.plans_deferred)

    def test_a_loop_action_is_trimmed_one_by_one(self):
        sim = _low()
        pins = [_pin('low-0', v, {0}) for v in range(3)]
        r = runner.Runner(sim, [_Fixed(pins)],
                          budget=runner.Budget(actions_per_period=2))
        self.assertEqual(2, len(r.admitted(sim.observe())))
        self.assertEqual(0, r.plans_deferred)

    def test_the_guard_refuses_a_policy_plan_whole(self):
        sim = _low()
        snap = sim.observe()
        topo = snap.topology
        busy = {topo.node_of_cpu(i.vcpu_cpus[0]) for i in snap.instances
                if i.uuid in ('low-0', 'low-2')}
        node1 = next(n.cpus for n in topo.nodes if n.id not in busy)
        # One guest's vCPUs arrive on node 1 first (a loop's pin); the
        # policy's plan then moving two vCPUs of another guest there is
        # refused whole, not up to the refused step.
        first = _Fixed([_pin('low-2', 0, node1)], atomic=True,
                       name='first')
        plan = [backend.PinEmulator(instance_uuid='low-0',
                                    cpus=frozenset(node1), reason='t'),
                _pin('low-0', 0, node1)]
        r = runner.Runner(sim, [first, _Fixed(plan, atomic=True)])
        admitted = r.admitted(sim.observe())
        self.assertEqual(['first'], [name for name, _ in admitted])
        self.assertEqual(2, r.actions_refused)

    def test_loops_leave_a_guest_alone_in_the_period_its_policy_acts(self):
        sim = _low()
        policy = _Fixed([_pin('low-0', 0, {0})], atomic=True,
                        name='policy-like')
        loop = _Fixed([_move('low-0', 10),
                       _move('low-2', 10)])
        r = runner.Runner(sim, [policy, loop])
        admitted = r.admitted(sim.observe())
        self.assertEqual([('policy-like', 'low-0'),
                          ('fixed', 'low-2')],
                         [(n, a.instance_uuid) for n, a in admitted])
