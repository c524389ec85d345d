"""The loops' settings from the ``[numa_policy_loops]`` group: pure.

:func:`build_configs` reads the group and returns the strategies'
``Config`` dataclasses, the runner's ``Budget`` and the do-no-harm
guard's ``Config``, so the agent and the simulators build their loops the
same way.
"""

import dataclasses

from nova_numa_policy.conf import loops as loops_conf
from nova_numa_policy.loops import auto
from nova_numa_policy.loops import brm
from nova_numa_policy.loops import carrefour
from nova_numa_policy.loops import guard
from nova_numa_policy.loops import runner
from nova_numa_policy.loops import vnuioa


@dataclasses.dataclass(frozen=True)
class LoopSettings:
    loops: tuple
    configs: dict  # loop name -> its Config dataclass
    budget: runner.Budget
    guard: guard.Config
    dry_run: bool


def build_configs(group, period_s=5.0):
    """Pure: a ``[numa_policy_loops]`` group in, :class:`LoopSettings` out."""
    page = carrefour.Config(
        min_accesses_per_us=group.carrefour_min_accesses_per_us,
        mc_imbalance=group.carrefour_mc_imbalance,
        min_local_ratio=group.carrefour_min_local_ratio, period_s=period_s)
    configs = {
        'carrefour': page,
        'brm': brm.Config(ewma_old_weight=group.brm_ewma_old_weight,
                          prob_step=group.brm_probability_step,
                          max_pin_count=group.brm_max_pin_count),
        'vnuioa': vnuioa.Config(io_threshold_rps=group.vnuioa_io_threshold,
                                node_load_threshold=group.vnuioa_node_load,
                                remote_factor=group.vnuioa_remote_factor,
                                max_pin_count=group.hysteresis_pin_count),
        'auto': auto.Config(low=group.auto_low, high=group.auto_high,
                            max_pin_count=group.hysteresis_pin_count,
                            page_rebalancer=page),
    }
    if group.auto_low >= group.auto_high:
        raise ValueError(f'[{loops_conf.GROUP.name}] auto_low '
                         f'({group.auto_low}) must '
                         f'be below auto_high ({group.auto_high})')
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
