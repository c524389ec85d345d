"""All or nothing: each failure kind injected in the middle of a plan.

The host is the simulator's backend, whose state outlives a "libvirtd
restart" (libvirt's test driver forgets its state when reconnected); the
same faults on a real libvirtd are in tests/host/test_faults.py.
"""

import errno

import libvirt

from agent.service import manager
from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import errors
from nova_numa_policy.decisions import execution
from nova_numa_policy.loops import base
from nova_numa_policy.loops import runner as loop_runner
from numa_policy_lab.sim import backend as sim_backend
from numa_policy_lab.sim import scenarios
from numa_policy_lab.sim import topology as sim_topology
from tests import base as test_base
from tests.unit.sim import fixtures as sim_fixtures

UUID = 'a6f1c1de-7d1e-4a53-9d36-5b0f5b1c0001'


class FaultyHost(sim_backend.SimulatedBackend):
    """A simulated host that fails one call of its choosing.

    ``fail_at``: the 1-based index of the apply() call that fails, with
    ``fault`` (an exception instance). ``down_after`` keeps libvirtd away
    from that call on: every later call is a lost connection until
    :meth:`restart`.
    """

    def __init__(self, *args, fail_at=None, fault=None, down_after=False,
                 apply_first=False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fail_at = fail_at
        self.fault = fault
        self.down = False
        self.down_after = down_after
        # The change is made, then the call fails (the connection died
        # before libvirt answered).
        self.apply_first = apply_first
        self.calls = []

    def restart(self):
        self.down = False

    def apply(self, action):
        self.calls.append(action)
        if self.down:
            raise errors.ConnectionLost('libvirtd is not running')
        if len(self.calls) == self.fail_at:
            if self.apply_first:
                super().apply(action)
            self.down = self.down_after
            raise self.fault
        return super().apply(action)


def _host(**faults):
    topology = sim_topology.xeon2()
    vm = sim_fixtures.vm_at(topology, 'private-stream', [0, 1], 0,
                            memory_mb=1024, uuid=UUID)
    vm.requested_policy = 'first-touch'
    return FaultyHost(topology, [vm], hostname='cn1', **faults)


def _placement(host):
    """What the host says of the guest: pins, emulator, nodes, memory.

    Not pinned and pinned to every CPU are one placement, as for the
    kernel (the simulator says the first, a roll back does the second).
    """
    snapshot = host.observe()
    (instance,) = snapshot.instances
    every = frozenset(c for n in snapshot.topology.nodes for c in n.cpus)
    return (tuple(a or every for a in instance.vcpu_affinity),
            instance.emulator_affinity or every, instance.memory_nodes,
            dict(instance.memory_mb_per_node))


def _home_on_node1(host):
    """vCPUs and emulator to node 1, memory bound there, pages moved."""
    snapshot = host.observe()
    (instance,) = snapshot.instances
    node1 = frozenset(snapshot.topology.nodes[1].cpus)
    return instance, snapshot.topology, [
        backend.PinVcpu(UUID, 'test', vcpu=0, cpus=node1),
        backend.PinVcpu(UUID, 'test', vcpu=1, cpus=node1),
        backend.PinEmulator(UUID, 'test', cpus=node1),
        backend.SetNodeset(UUID, 'test', nodes=frozenset({1})),
    ]


def _libvirt_error(message):
    return libvirt.libvirtError(message)


class MidPlanFaultTest(test_base.TestCase):
    """Each failure kind at step 3 of 4: the guest ends as it was."""

    def run_plan(self, **faults):
        host = _host(**faults)
        before = _placement(host)
        instance, topology, plan = _home_on_node1(host)
        outcome = execution.apply_plan(host, instance, topology, plan)
        return host, before, outcome

    def assert_rolled_back(self, **faults):
        host, before, outcome = self.run_plan(fail_at=3, **faults)
        self.assertEqual(execution.ROLLED_BACK, outcome.ending)
        self.assertEqual((), outcome.pending)
        self.assertIsNotNone(outcome.failed)
        self.assertEqual(before, _placement(host))
        return host, outcome

    def test_a_refusal_by_the_host(self):
        host, _ = self.assert_rolled_back(
            fault=errors.NotEnforceable('EPERM'))
        # The refused step changed nothing: only steps 1-2 are undone.
        self.assertEqual(3 + 2, len(host.calls))

    def test_an_unexpected_libvirt_error(self):
        self.assert_rolled_back(fault=_libvirt_error('internal error'))

    def test_an_os_error(self):
        self.assert_rolled_back(fault=OSError(errno.EIO, 'I/O error'))

    def test_a_bug(self):
        self.assert_rolled_back(fault=KeyError('vcpu'))

    def test_a_change_made_before_the_connection_died_is_undone(self):
        host, outcome = self.assert_rolled_back(
            fault=errors.ConnectionLost('connection reset'),
            apply_first=True)
        # libvirtd answered again at once: the failed step is undone too.
        self.assertEqual(3 + 3, len(host.calls))
        self.assertTrue(outcome.resync)

    def test_libvirtd_away_leaves_the_undo_pending(self):
        host, before, outcome = self.run_plan(
            fail_at=3, fault=errors.ConnectionLost('libvirtd stopped'),
            down_after=True)
        self.assertEqual(execution.UNDO_PENDING, outcome.ending)
        self.assertTrue(outcome.resync)
        # Undo of steps 3, 2, 1 in that order (step 3 may have been made).
        self.assertEqual([backend.PinEmulator, backend.PinVcpu,
                          backend.PinVcpu],
                         [type(step) for step in outcome.pending])
        self.assertEqual([1, 0], [s.vcpu for s in outcome.pending[1:]])
        self.assertNotEqual(before, _placement(host))  # in between, now
        host.restart()
        pending = execution.PendingUndo()
        pending.keep(UUID, outcome.pending)
        self.assertEqual({UUID: execution.ROLLED_BACK},
                         pending.finish(host, {UUID}))
        self.assertEqual(before, _placement(host))
        self.assertNotIn(UUID, pending)

    def test_the_guest_gone_mid_plan_ends_the_plan(self):
        host, _, outcome = self.run_plan(
            fail_at=3, fault=errors.DomainGone('no domain'))
        self.assertEqual(execution.GONE, outcome.ending)
        self.assertEqual(3, len(host.calls))

    def test_without_a_fault_every_step_is_applied(self):
        host, before, outcome = self.run_plan()
        self.assertEqual(execution.APPLIED, outcome.ending)
        self.assertEqual(4, outcome.applied)
        self.assertEqual(frozenset({1}), _placement(host)[2])

    def test_a_page_move_that_failed_is_not_reversed(self):
        host = _host(fail_at=2, fault=_libvirt_error('boom'))
        instance, topology, home = _home_on_node1(host)
        before = _placement(host)
        plan = [home[0],
                backend.MovePages(UUID, 't', source_node=0, target_node=1,
                                  pages=1024)]
        outcome = execution.apply_plan(host, instance, topology, plan)
        self.assertEqual(execution.ROLLED_BACK, outcome.ending)
        self.assertEqual([backend.PinVcpu, backend.MovePages,
                          backend.PinVcpu], [type(c) for c in host.calls])
        self.assertEqual(before, _placement(host))


class NoticesTest(test_base.TestCase):
    """What the agent tells the collector of each plan it carried out."""

    def carry_out(self, dry_run=False, **faults):
        host = _host(**faults)
        snapshot = host.observe()
        _, _, plan = _home_on_node1(host)
        return execution.carry_out(host, snapshot,
                                   [('policy', a) for a in plan], dry_run)

    def told(self, outcome):
        return [(type(a).__name__, a.reason, word, error)
                for a, word, error in outcome.notices]

    def test_a_plan_applied_whole_tells_every_step(self):
        self.assertEqual(
            [('PinVcpu', 'policy: test', 'applied', None)] * 2
            + [('PinEmulator', 'policy: test', 'applied', None),
               ('SetNodeset', 'policy: test', 'applied', None)],
            self.told(self.carry_out()))

    def test_a_failed_plan_tells_the_step_that_failed(self):
        # Steps 1-2 were rolled back: they are not in force to tell of.
        self.assertEqual(
            [('PinEmulator', 'policy: test', 'failed', 'EPERM')],
            self.told(self.carry_out(
                fail_at=3, fault=errors.NotEnforceable('EPERM'))))

    def test_a_dry_run_tells_what_it_would_do(self):
        self.assertEqual({'dry_run'},
                         {n[2] for n in self.told(self.carry_out(True))})

    def test_a_guest_gone_mid_plan_tells_nothing(self):
        self.assertEqual([], self.told(self.carry_out(
            fail_at=3, fault=errors.DomainGone('no domain'))))


class PendingUndoTest(test_base.TestCase):

    def steps(self):
        return (backend.PinEmulator(UUID, 'roll back', cpus=frozenset({0})),)

    def test_a_guest_gone_meanwhile_is_forgotten(self):
        pending = execution.PendingUndo()
        pending.keep(UUID, self.steps())
        self.assertEqual({UUID: execution.GONE},
                         pending.finish(_host(), set()))
        self.assertEqual(0, len(pending))

    def test_an_undo_that_keeps_failing_is_given_up(self):
        host = _host(fail_at=1, fault=errors.ConnectionLost('down'),
                     down_after=True)
        pending = execution.PendingUndo(attempts=2)
        pending.keep(UUID, self.steps())
        self.assertEqual({UUID: execution.UNDO_PENDING},
                         pending.finish(host, {UUID}))
        self.assertIn(UUID, pending)
        self.assertEqual({UUID: execution.ABANDONED},
                         pending.finish(host, {UUID}))
        self.assertNotIn(UUID, pending)

    def test_a_later_plan_is_undone_before_an_earlier_one(self):
        pending = execution.PendingUndo()
        first, second = (
            backend.PinEmulator(UUID, 'first', cpus=frozenset({0})),
            backend.PinEmulator(UUID, 'second', cpus=frozenset({1})))
        pending.keep(UUID, (first,))
        pending.keep(UUID, (second,))
        host = _host()
        pending.finish(host, {UUID})
        self.assertEqual([second, first], host.calls)


class _Once(base.Strategy):
    """Proposes one atomic plan, the first time it is asked."""

    name = 'once'
    Config = dict
    atomic_plans = True

    def __init__(self, plan):
        self.plan = plan

    def decide(self, snapshot, state, config):
        if state.get('done'):
            return [], state
        return list(self.plan), {'done': True}


class AgentFinishesPendingUndoTest(test_base.TestCase):
    """The agent's periods: the undo left by a lost connection, finished."""

    def test_the_next_period_finishes_the_undo_then_decides(self):
        host = _host(fail_at=3, fault=errors.ConnectionLost('stopped'),
                     down_after=True)
        before = _placement(host)
        _, _, plan = _home_on_node1(host)
        runner = loop_runner.Runner(host, [_Once(plan)])
        agent = manager.Agent(host, host='cn1', period=5.0, runner=runner,
                              clock=lambda: host.now)
        agent.act(host.observe())
        self.assertIn(UUID, agent.pending_undo)
        self.assertEqual(execution.UNDO_PENDING, agent.endings[UUID])
        # While libvirtd is away nothing is decided for the guest, though
        # its strategy proposes a plan again.
        self.assertEqual([], runner.admitted(
            host.observe(), waiting=agent.pending_undo.uuids()))
        host.restart()
        agent.run_once()
        self.assertEqual(execution.ROLLED_BACK, agent.endings[UUID])
        self.assertNotIn(UUID, agent.pending_undo)
        self.assertEqual(before, _placement(host))


class SimulatorRollbackTest(test_base.TestCase):
    """The simulators act through the executor: a failed step rolls back.

    ``execution.period`` is what the host simulator
    (``lab.sim.experiment.run``) and the cluster study
    (``lab.cluster.simulation.run``) call every period.
    """

    def period(self, fail_page_moves):
        host, vms = scenarios.SCENARIOS['io-mix'].build(0)
        sim = sim_backend.SimulatedBackend(host, vms)
        if fail_page_moves:
            sim.failure = lambda action: (
                errors.NotEnforceable('move_pages: EFAULT')
                if isinstance(action, backend.MovePages) else None)
        runner = loop_runner.Runner(sim, loop_runner.strategies(['vnuioa']))
        before = {i.uuid: i.vcpu_affinity for i in sim.observe().instances}
        outcome = execution.period(runner, sim)
        after = {i.uuid: i.vcpu_affinity for i in sim.observe().instances}
        return outcome, before, after

    def test_vnuioa_pins_and_moves_memory_when_the_host_allows(self):
        outcome, before, after = self.period(fail_page_moves=False)
        kinds = {type(a) for _, a in outcome.actions}
        self.assertEqual({backend.PinVcpu, backend.MovePages}, kinds)
        self.assertNotEqual(before, after)

    def test_a_refused_page_move_undoes_the_pins_before_it(self):
        outcome, before, after = self.period(fail_page_moves=True)
        self.assertIn(execution.ROLLED_BACK, outcome.endings.values())
        self.assertEqual([], [a for _, a in outcome.actions
                              if isinstance(a, backend.MovePages)])
        rolled_back = [uuid for uuid, ending in outcome.endings.items()
                       if ending == execution.ROLLED_BACK]
        for uuid in rolled_back:
            self.assertEqual(before[uuid], after[uuid], uuid)
