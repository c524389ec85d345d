"""From runs to evidence: per scenario and strategy, over seeds.

``measure`` runs one (scenario, strategy) over seeds and gives the mean
normalized throughput (mean over the guests alive at the end, then over
seeds), its relative standard deviation over seeds, the fraction of the
offline optimum, page and vCPU moves; ``check`` states which of the published
targets hold, with reasons.
"""

import dataclasses
import functools

import numpy as np

from nova_numa_policy.cluster import optimum
from nova_numa_policy.cluster import scenarios
from nova_numa_policy.cluster import simulation
from nova_numa_policy.cluster import strategies

STRATEGIES = tuple(strategies.STRATEGIES)
OURS = strategies.Ours.name
MIN_FRACTION = 0.95
MAX_RSD = 0.02


@dataclasses.dataclass(frozen=True)
class Cell:
    scenario: str
    strategy: str
    seeds: tuple
    means: tuple  # per seed
    optimum: float | None
    pages_moved: float  # mean per seed
    vcpu_moves: float
    rejected: float

    @property
    def mean(self):
        return float(np.mean(self.means))

    @property
    def rsd(self):
        mean = self.mean
        return float(np.std(self.means) / mean) if mean else 0.0

    @property
    def fraction(self):
        return self.mean / self.optimum if self.optimum else None

    def as_dict(self):
        return {'scenario': self.scenario, 'strategy': self.strategy,
                'seeds': list(self.seeds),
                'mean': round(self.mean, 4), 'rsd': round(self.rsd, 4),
                'per_seed': [round(m, 4) for m in self.means],
                'optimum': None if self.optimum is None
                else round(self.optimum, 4),
                'fraction_of_optimum': None if self.fraction is None
                else round(self.fraction, 4),
                'pages_moved': self.pages_moved,
                'vcpu_moves': self.vcpu_moves,
                'rejected': self.rejected}


@functools.lru_cache(maxsize=None)
def optimum_of(scenario):
    """The offline optimum's mean; streams share their final flavors."""
    if not scenarios.SCENARIOS[scenario].optimum:
        return None
    return optimum.for_spec(scenarios.SCENARIOS[scenario].build(0)).mean


def run_one(scenario, strategy, seed):
    outcome = simulation.run(scenarios.SCENARIOS[scenario].build(seed),
                             strategy, seed)
    return outcome


def cell(scenario, strategy, seeds, outcomes, optimum_mean):
    return Cell(scenario=scenario, strategy=strategy, seeds=tuple(seeds),
                means=tuple(o.mean() for o in outcomes),
                optimum=optimum_mean,
                pages_moved=float(np.mean([o.pages_moved
                                           for o in outcomes])),
                vcpu_moves=float(np.mean([o.vcpu_moves for o in outcomes])),
                rejected=float(np.mean([len(o.rejected)
                                        for o in outcomes])))


def measure(scenario, strategy, seeds, with_optimum=True):
    outcomes = [run_one(scenario, strategy, s) for s in seeds]
    opt = optimum_of(scenario) if with_optimum else None
    return cell(scenario, strategy, seeds, outcomes, opt)


def check(cells):
    """``(met, misses)``: misses are sentences saying what and why not."""
    by = {(c.scenario, c.strategy): c for c in cells}
    misses = []
    for name, scenario in scenarios.SCENARIOS.items():
        ours = by.get((name, OURS))
        if ours is None:
            continue
        if ours.fraction is not None and ours.fraction < MIN_FRACTION:
            misses.append(f'{name}: ours reaches {ours.fraction:.3f} of the '
                          f'optimum (< {MIN_FRACTION})')
        if ours.rsd > MAX_RSD:
            misses.append(f'{name}: RSD of ours over seeds is '
                          f'{100 * ours.rsd:.2f} % (> {100 * MAX_RSD:.0f} %)')
        if scenario.hostile:
            continue
        for other in STRATEGIES:
            c = by.get((name, other))
            if other == OURS or c is None:
                continue
            if ours.mean <= c.mean:
                misses.append(f'{name}: ours ({ours.mean:.3f}) does not '
                              f'beat {other} ({c.mean:.3f})')
    return not misses, misses
