"""The rebalancing loops inside the agent's period.

The loops (``nova_numa_policy.loops``) decide on the period's snapshot
through their :class:`~nova_numa_policy.loops.runner.Runner` (hands-off
guests, the do-no-harm guard, the budgets); what they admit is carried
out here, one guest's actions as one plan, through the same
:func:`agent.enforcer.apply_plan` as the policy's enforcement, so a
failed step is rolled back and a dry run changes nothing.
"""

import dataclasses
import logging

from nova_numa_policy.conf import loops as loops_conf
from nova_numa_policy.loops import runner as loop_runner

from agent import enforcer

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class Outcome:
    # (loop name, action) pairs carried out (or, in a dry run, logged).
    actions: list = dataclasses.field(default_factory=list)
    applied: int = 0
    resync: bool = False
    # How each guest's plan ended (agent.enforcer.ENDINGS), and the undo
    # steps a lost connection left, by instance uuid.
    endings: dict = dataclasses.field(default_factory=dict)
    pending: dict = dataclasses.field(default_factory=dict)


def build_runner(host_backend, group, period, dry_run=False, seed=0):
    """A loops Runner from a ``[numa_policy_loops]`` group, or None.

    Only loops whose required capabilities the backend offers are
    started; the Runner logs each one left out with what it lacks.
    """
    settings = loops_conf.build_configs(group, period_s=period)
    if not settings.loops:
        LOG.info('No rebalancing loop enabled')
        return None
    runner = loop_runner.Runner(
        host_backend, loop_runner.strategies(settings.loops),
        configs=settings.configs, budget=settings.budget,
        dry_run=dry_run or settings.dry_run, seed=seed,
        guard=settings.guard)
    LOG.info('Rebalancing loops started: %s; not started: %s%s',
             ', '.join(active_loops(runner)) or 'none',
             ', '.join(runner.skipped) or 'none',
             ' (dry run)' if runner.dry_run else '')
    return runner


def active_loops(runner):
    """The names of the loops that change guests, in their order."""
    if runner is None or runner.dry_run:
        return ()
    return tuple(s.name for s in runner.strategies)


def admitted(runner, snapshot):
    """The loops' decisions on ``snapshot``, within the period's budgets."""
    return runner.admitted(snapshot)


def plans(snapshot, decisions):
    """Group (loop, action) pairs into per-guest plans, order kept."""
    by_uuid = {i.uuid: i for i in snapshot.instances}
    grouped = {}
    for name, action in decisions:
        instance = by_uuid.get(action.instance_uuid)
        if instance is not None:
            grouped.setdefault(instance.uuid, (instance, []))[1].append(
                (name, action))
    return list(grouped.values())


def _tagged(name, action):
    # The enforcer logs an action's reason; say which loop decided it.
    if action.reason.startswith(name):
        return action
    return dataclasses.replace(action, reason=f'{name}: {action.reason}')


def run(runner, host_backend, snapshot):
    """Decide and carry out one period of the loops on ``snapshot``."""
    outcome = Outcome()
    if runner is None:
        return outcome
    for instance, steps in plans(snapshot, admitted(runner, snapshot)):
        actions = [_tagged(name, action) for name, action in steps]
        result = enforcer.apply_plan(host_backend, instance,
                                     snapshot.topology, actions,
                                     runner.dry_run)
        outcome.resync = outcome.resync or result.resync
        outcome.applied += result.applied
        outcome.endings[instance.uuid] = result.ending
        if result.pending:
            outcome.pending[instance.uuid] = result.pending
        runner.actions_applied += result.applied
        if runner.dry_run or (result.failed is None
                              and result.applied == len(actions)):
            outcome.actions.extend(steps)
    return outcome
