"""The agent's runner: the policy's enforcement and the rebalancing loops.

Every period the agent hands its snapshot to one
:class:`~nova_numa_policy.loops.runner.Runner` (the guest's requested
policy first, then the loops ``[numa_policy_loops] enabled_loops``
names, within one budget and one dry run) and carries out what it admits
with :func:`nova_numa_policy.decisions.execution.carry_out`.
"""

import dataclasses

from oslo_log import log as logging

from nova_numa_policy.loops import runner as loop_runner
from nova_numa_policy.loops import settings as loop_settings

LOG = logging.getLogger(__name__)


def build_runner(host_backend, group, period, dry_run=False, seed=0,
                 max_actions=64):
    """The agent's Runner from a ``[numa_policy_loops]`` group.

    ``max_actions``: actions of the policy and the loops together per
    period (``[numa_policy_agent] max_actions_per_period``). Only loops
    whose required capabilities the backend offers are started; the
    Runner logs each one left out with what it lacks.
    """
    settings = loop_settings.build_configs(group, period_s=period)
    budget = dataclasses.replace(settings.budget,
                                 actions_per_period=max_actions)
    runner = loop_runner.Runner(
        host_backend, loop_runner.strategies(settings.loops),
        configs=settings.configs, budget=budget,
        dry_run=dry_run or settings.dry_run, seed=seed,
        guard=settings.guard)
    LOG.info('Rebalancing loops started: %s; not started: %s%s',
             ', '.join(runner.loops) or 'none',
             ', '.join(runner.skipped) or 'none',
             ' (dry run)' if runner.dry_run else '')
    return runner


def policy_runner(host_backend, period, dry_run=False, max_actions=64):
    """A Runner that enforces the guests' policies and runs no loop."""
    return loop_runner.Runner(
        host_backend, loop_runner.strategies(()), dry_run=dry_run,
        budget=loop_runner.Budget(period_s=period,
                                  actions_per_period=max_actions))


def report_judges(runner):
    """What judges a guest's loop-given report fields: every loop's rule.

    With the runner's settings for the loops it runs and the defaults of
    the others (``nova_numa_policy.loops.runner.judges``).
    """
    return loop_runner.judges(runner.configs)


def active_loops(runner):
    """The names of the loops that change guests, in their order."""
    if runner is None or runner.dry_run:
        return ()
    return runner.loops
