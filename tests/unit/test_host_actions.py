"""A NIC's interrupt vectors and a guest's vhost workers, on the act path.

The runner, the executor and the roll back, with the iopath loop's
actions on a small in-memory host that keeps every vector's affinity
and every guest's emulator and vhost CPUs.
"""

import dataclasses

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import errors
from nova_numa_policy.decisions import execution
from nova_numa_policy.loops import base
from nova_numa_policy.loops import guard
from nova_numa_policy.loops import iopath
from nova_numa_policy.loops import runner as loop_runner
from tests import base as test_base
from tests.unit.loops import snapshots as s

EVERYWHERE = frozenset(range(8))
NIC = backend.nic_subject('eth0')


class IoHost(backend.Backend):
    """Two nodes of four CPUs, eth0 on node 0 with ``vectors`` vectors.

    ``fail_at``: the 1-based apply() call that raises ``fault``.
    """

    name = 'io-host'

    def __init__(self, guests, vectors=4, fail_at=None, fault=None,
                 caps=None):
        self.guests = {g.uuid: g for g in guests}
        self.affinity = {irq: EVERYWHERE for irq in range(vectors)}
        self.fail_at = fail_at
        self.fault = fault or errors.NotEnforceable('refused')
        self.calls = []
        self.caps = caps if caps is not None else frozenset({
            backend.CAP_IRQ_STEERING, backend.CAP_EMULATOR_PINNING,
            backend.CAP_IO_THREAD_PINNING})

    def capabilities(self):
        return self.caps

    def topology(self):
        return s.topology(nodes=2, cpus=4)

    def observe(self):
        irqs = tuple(backend.IrqState(irq=irq, nic='eth0', affinity=cpus)
                     for irq, cpus in sorted(self.affinity.items()))
        return dataclasses.replace(
            s.snapshot(list(self.guests.values()), self.topology()),
            irqs=irqs)

    def apply(self, action):
        self.calls.append(action)
        if len(self.calls) == self.fail_at:
            raise self.fault
        return super().apply(action)

    def steer_irq(self, irq, nic, cpus):
        self.affinity[irq] = frozenset(cpus)

    def pin_emulator(self, instance_uuid, cpus):
        self._change(instance_uuid, emulator_affinity=frozenset(cpus))

    def pin_io_threads(self, instance_uuid, cpus):
        self._change(instance_uuid, io_thread_cpus=frozenset(cpus))

    def _change(self, uuid, **fields):
        self.guests[uuid] = dataclasses.replace(self.guests[uuid], **fields)

    def pin_vcpu(self, instance_uuid, vcpu, cpus):
        raise NotImplementedError

    def set_nodeset(self, instance_uuid, nodes):
        raise NotImplementedError

    def move_pages(self, instance_uuid, source_node, target_node, pages):
        raise NotImplementedError


def _guest(uuid='net', emulator=EVERYWHERE, io_threads=frozenset(),
           **kw):
    return dataclasses.replace(
        s.instance(uuid, (0, 1), {0: 512}, io_rate=900),
        nics=frozenset({'eth0'}), emulator_affinity=emulator,
        io_thread_cpus=io_threads, **kw)


def _runner(host, **kw):
    return loop_runner.Runner(host, loop_runner.strategies(['iopath']), **kw)


def _steers(decisions):
    return [a for _, a in decisions if isinstance(a, backend.SteerIrq)]


class RunnerTest(test_base.TestCase):

    def test_steers_pass_the_runner_and_the_guard(self):
        host = IoHost([_guest()])
        r = _runner(host)
        self.assertEqual(('iopath',), r.loops)
        admitted = r.admitted(host.observe())
        self.assertEqual(4, len(_steers(admitted)))
        self.assertEqual(0, r.actions_refused + r.actions_dropped)

    def test_the_guard_neither_refuses_a_steer_nor_counts_it_as_load(self):
        # A guest harmed on node 0, where the steer sends vector 0.
        host = IoHost([_guest()])
        snapshot = host.observe()
        harmed = {'net': guard.Record(ref=1000.0, samples=5, ewma=500.0,
                                      disturbed=True, protected=True)}
        steer = backend.SteerIrq(NIC, 'why', irq=0, nic='eth0',
                                 cpus=frozenset({0}), previous=EVERYWHERE)
        config = guard.Config()
        self.assertIsNone(guard.refusal(snapshot, harmed, config, steer))
        self.assertEqual(harmed, guard.disturb(snapshot, harmed, config,
                                               steer))

    def test_the_action_budget_counts_each_steer(self):
        host = IoHost([_guest()], vectors=6)
        r = _runner(host, budget=loop_runner.Budget(actions_per_period=3))
        admitted = r.admitted(host.observe())
        # The guest's emulator pin comes after the six steers.
        self.assertEqual([0, 1, 2], [a.irq for a in _steers(admitted)])
        self.assertEqual(3, len(admitted))
        self.assertEqual(4, r.actions_dropped)

    def test_a_nic_waiting_for_its_undo_is_left_alone(self):
        host = IoHost([_guest()])
        admitted = _runner(host).admitted(host.observe(), waiting={NIC})
        self.assertEqual([], _steers(admitted))

    def test_hands_off_guests_never_get_thread_pins(self):
        host = IoHost([_guest(hands_off_reason='nova pins it',
                              io_threads=EVERYWHERE),
                       _guest('other')])
        admitted = _runner(host).admitted(host.observe())
        pinned = {a.instance_uuid for _, a in admitted
                  if isinstance(a, (backend.PinEmulator,
                                    backend.PinIoThreads))}
        self.assertEqual({'other'}, pinned)

    def test_the_backends_capabilities_decide_vhost_pinning(self):
        guest = _guest(emulator=frozenset(range(4)), io_threads=EVERYWHERE)
        for caps, pins in ((backend.CAPABILITIES, 1),
                           ({backend.CAP_IRQ_STEERING,
                             backend.CAP_EMULATOR_PINNING}, 0)):
            host = IoHost([guest], vectors=0, caps=frozenset(caps))
            admitted = _runner(host).admitted(host.observe())
            self.assertEqual(pins, len(admitted), caps)

    def test_a_host_that_cannot_steer_does_not_start_the_loop(self):
        host = IoHost([_guest()], caps=frozenset(
            {backend.CAP_EMULATOR_PINNING}))
        self.assertEqual(['iopath'], _runner(host).skipped)


class ExecutionTest(test_base.TestCase):

    def test_steers_of_one_nic_are_one_plan_without_a_guest(self):
        host = IoHost([_guest()])
        decisions = _runner(host).admitted(host.observe())
        plans = execution.plans(host.observe(), decisions)
        self.assertEqual([(None, 4), ('net', 1)],
                         [(i and i.uuid, len(steps)) for i, steps in plans])

    def test_every_steer_applied_and_the_ending_keyed_by_the_nic(self):
        host = IoHost([_guest()])
        outcome = execution.period(_runner(host), host)
        self.assertEqual({0: {0}, 1: {1}, 2: {2}, 3: {3}}, host.affinity)
        self.assertEqual({NIC: execution.APPLIED, 'net': execution.APPLIED},
                         outcome.endings)
        self.assertEqual(frozenset(range(4)),
                         host.guests['net'].emulator_affinity)

    def test_a_failed_steer_rolls_back_the_earlier_steers_of_the_nic(self):
        host = IoHost([_guest()], fail_at=3)
        outcome = execution.period(_runner(host), host)
        self.assertEqual({irq: EVERYWHERE for irq in range(4)},
                         host.affinity)
        self.assertEqual(execution.ROLLED_BACK, outcome.endings[NIC])
        undo = host.calls[3:5]
        self.assertEqual([1, 0], [a.irq for a in undo])
        self.assertTrue(all(a.reason.startswith('roll back: iopath')
                            for a in undo))
        # The guest's own plan is a plan of its own, applied.
        self.assertEqual(execution.APPLIED, outcome.endings['net'])

    def test_a_lost_connection_leaves_the_nics_undo_pending(self):
        host = IoHost([_guest()], fail_at=3,
                      fault=errors.ConnectionLost('down'))
        outcome = execution.carry_out(host, host.observe(),
                                      _runner(host).admitted(host.observe()))
        self.assertEqual(execution.ROLLED_BACK, outcome.endings[NIC])
        pending = execution.PendingUndo()
        pending.keep(NIC, (backend.SteerIrq(
            NIC, 'roll back', irq=0, nic='eth0', cpus=EVERYWHERE,
            previous=frozenset({0})),))
        # Not a guest: no snapshot lists it, yet it has not gone.
        self.assertEqual({NIC: execution.ROLLED_BACK},
                         pending.finish(host, present=set()))

    def test_dry_run_changes_nothing(self):
        host = IoHost([_guest()])
        outcome = execution.period(_runner(host, dry_run=True), host)
        self.assertEqual({irq: EVERYWHERE for irq in range(4)},
                         host.affinity)
        self.assertEqual([], host.calls)
        self.assertEqual(execution.DRY_RUN, outcome.endings[NIC])
        self.assertEqual(5, len(outcome.actions))

    def test_a_failed_vhost_pin_restores_the_workers_cpus(self):
        before = frozenset({5, 6})
        host = IoHost([_guest(emulator=frozenset(range(4)),
                              io_threads=before)], vectors=0)
        pin = backend.PinIoThreads('net', 'test', cpus=frozenset({0}))
        emulator = backend.PinEmulator('net', 'test', cpus=frozenset({1}))
        host.fail_at = 2
        execution.carry_out(host, host.observe(),
                            [('iopath', pin), ('iopath', emulator)])
        self.assertEqual(before, host.guests['net'].io_thread_cpus)

    def test_reverse_of_a_steer_writes_back_what_it_replaced(self):
        steer = backend.SteerIrq(NIC, 'why', irq=7, nic='eth0',
                                 cpus=frozenset({2}),
                                 previous=frozenset({0, 1}))
        undo = execution.reverse_action(steer, None, s.topology())
        self.assertEqual((7, 'eth0', frozenset({0, 1}), frozenset({2})),
                         (undo.irq, undo.nic, undo.cpus, undo.previous))


class StrategyHooksTest(test_base.TestCase):

    def test_a_strategy_says_nothing_of_nics_and_keeps_its_config(self):
        self.assertEqual({}, base.Strategy.judge_nics(None, None))
        config = object()
        self.assertIs(config, base.Strategy.for_capabilities(config, ()))

    def test_iopath_judges_the_nics(self):
        host = IoHost([_guest()])
        self.assertIn('steered to node 0', iopath.IoPath.judge_nics(
            host.observe(), iopath.Config())['eth0'])
