import testtools

from nova_numa_policy import backend
from nova_numa_policy.lab.sim import backend as sim_backend
from nova_numa_policy.lab.sim import scenarios
from nova_numa_policy.loops import base
from nova_numa_policy.loops import runner


class _Fixed(base.Strategy):
    name = 'fixed'
    Config = dict

    def __init__(self, actions, caps=frozenset()):
        self.actions = actions
        self.required_capabilities = caps

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


class RunnerTest(testtools.TestCase):

    def test_page_budget_trims_and_drops(self):
        sim = _sim()
        budget = runner.Budget(pages_per_second=100, period_s=5.0)
        r = runner.Runner(sim, [_Fixed([_move('master-slave-0', 300),
                                        _move('master-slave-0', 300)])],
                          budget=budget)
        admitted = r.run_once()
        self.assertEqual([300, 200], [a.pages for _, a in admitted])
        r2 = runner.Runner(sim, [_Fixed([_move('master-slave-0', 600),
                                         _move('master-slave-0', 1)])],
                           budget=budget)
        self.assertEqual([500], [a.pages for _, a in r2.run_once()])

    def test_vcpu_budget(self):
        pins = [backend.PinVcpu(instance_uuid='master-slave-0', vcpu=v,
                                cpus=frozenset({0}), reason='t')
                for v in range(5)]
        r = runner.Runner(_sim(), [_Fixed(pins)],
                          budget=runner.Budget(vcpu_moves_per_period=2))
        self.assertEqual(2, len(r.run_once()))

    def test_a_rebooted_guest_is_forgotten_by_every_loop(self):
        sim = _sim()
        loop = _Remembers()
        r = runner.Runner(sim, [loop])
        r.run_once()
        sim.advance()
        r.run_once()
        self.assertEqual([], loop.forgotten)  # still running
        sim.reboot('master-slave-0')
        r.run_once()
        self.assertEqual([{'master-slave-0'}], loop.forgotten)

    def test_hands_off_and_reasonless_actions_are_dropped(self):
        r = runner.Runner(_sim(), [_Fixed([_move('master-slave-1', 10),
                                           _move('master-slave-0', 10, '')])])
        self.assertEqual([], r.run_once())
        self.assertEqual(2, r.actions_dropped)

    def test_dry_run_decides_but_does_not_apply(self):
        sim = _sim()
        before = sim.vm('master-slave-0').seg_mb.copy()
        r = runner.Runner(sim, [_Fixed([_move('master-slave-0', 1000)])],
                          dry_run=True)
        self.assertEqual(1, len(r.run_once()))
        self.assertTrue((before == sim.vm('master-slave-0').seg_mb).all())
        self.assertEqual(0, r.actions_applied)

    def test_loop_needing_a_missing_capability_is_not_started(self):
        host, vms = scenarios.SCENARIOS['low'].build(0)
        sim = sim_backend.SimulatedBackend(host, vms, access_counters=False)
        r = runner.Runner(sim, runner.strategies(['carrefour', 'brm']))
        self.assertEqual(['carrefour'], r.skipped)
        self.assertEqual(['brm'], [s.name for s in r.strategies])

    def test_unknown_loop_name(self):
        self.assertRaises(ValueError, runner.strategies, ['nope'])
