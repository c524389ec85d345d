"""The loops' settings from the ``[numa_policy_loops]`` group: pure.

:func:`build_configs` reads the group and returns the strategies'
``Config`` dataclasses, the runner's ``Budget`` and the do-no-harm
guard's ``Config``, so the agent and the simulators build their loops the
same way.
"""

import dataclasses

from nova_numa_policy.loops import guard
from nova_numa_policy.loops import runner


@dataclasses.dataclass(frozen=True)
class LoopSettings:
    loops: tuple
    configs: dict  # loop name -> its Config dataclass, from its config_from
    budget: runner.Budget
    guard: guard.Config
    dry_run: bool


def build_configs(group, period_s=5.0):
    """Pure: a ``[numa_policy_loops]`` group in, :class:`LoopSettings` out."""
    configs = {name: cls.config_from(group, period_s)
               for name, cls in runner.registry().items()}
    return LoopSettings(
        loops=tuple(group.enabled_loops),
        configs=configs,
        budget=runner.Budget(pages_per_second=group.pages_per_second,
                             vcpu_moves_per_period=group.vcpu_moves_per_period,
                             period_s=period_s),
        guard=guard.Config(enabled=group.do_no_harm_guard,
                           tolerance=group.do_no_harm_tolerance,
                           period_s=period_s),
        dry_run=group.dry_run)
