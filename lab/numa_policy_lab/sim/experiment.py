"""Run a scenario for some periods, with or without loops, and measure."""

import dataclasses

import numpy as np

from nova_numa_policy.contracts import locality
from nova_numa_policy.decisions import execution
from nova_numa_policy.loops import runner as loop_runner
from numa_policy_lab.sim import backend as sim_backend
from numa_policy_lab.sim import scenarios


@dataclasses.dataclass
class Outcome:
    names: list
    throughput: np.ndarray  # periods x guests
    pages_moved: dict
    vcpu_moves: dict
    actions: int
    auto_choices: dict

    def steady(self, tail=0.5):
        """Mean throughput per guest over the last ``tail`` of the run."""
        start = int(len(self.throughput) * (1.0 - tail))
        return self.throughput[start:].mean(axis=0)


def run(name, loops=(), periods=60, seed=0, dry_run=False, configs=None,
        signal=locality.SIGNAL_COUNTERS, placement_seed=None):
    """Run a scenario for ``periods`` periods with ``loops``.

    ``seed`` drives the run: the host's noise, where it starts rebooted
    guests, the loops' random picks. ``placement_seed`` (default: the
    same) decides where the host placed the guests at the start; fixing
    it while ``seed`` varies repeats one experiment run to run.
    """
    scenario = scenarios.SCENARIOS[name]
    host, vms = scenario.build(seed if placement_seed is None
                               else placement_seed)
    sim = sim_backend.SimulatedBackend(
        host, vms, seed=seed, signal=signal,
        irqs=scenario.irqs(host) if scenario.irqs else None)
    runner = loop_runner.Runner(sim, loop_runner.strategies(loops),
                                configs=configs, dry_run=dry_run, seed=seed)
    reboots = dict(scenario.reboots)
    rows = []
    applied = 0
    for period in range(periods):
        if period in reboots:
            for vm in sim.vms:
                if vm.uuid.startswith(reboots[period]):
                    sim.reboot(vm.uuid)
        applied += execution.period(runner, sim).applied
        rows.append(sim.advance())
    return Outcome(names=[vm.uuid for vm in sim.vms],
                   throughput=np.array(rows),
                   pages_moved={vm.uuid: vm.pages_moved for vm in sim.vms},
                   vcpu_moves={vm.uuid: vm.vcpu_moves for vm in sim.vms},
                   actions=applied,
                   auto_choices=runner.auto_choices())


LOOP_SETS = (('carrefour',), ('brm',), ('vnuioa',), ('auto',),
             ('carrefour', 'brm', 'vnuioa', 'auto'))
# The I/O path without steering and with it (the iopath loop), for
# io-steering (scenarios.py).
IO_LOOP_SETS = (('vnuioa',), ('vnuioa', 'iopath'))


@dataclasses.dataclass(frozen=True)
class Row:
    scenario: str
    loops: tuple
    mean_gain: float  # mean over seeds of (mean with loops / mean without)
    min_gain: float  # worst seed
    worst_guest: float  # lowest per-guest ratio over every seed
    worst_name: str
    # Mean over seeds of the guests' mean throughput with the loops.
    mean_tput: float | None = None


def baseline(name, periods, seed, signal=locality.SIGNAL_COUNTERS,
             _cache={}):
    """Each guest's steady throughput without loops.

    A run is a pure function of its arguments, so each is computed once
    per process and shared by every loop set compared with it.
    """
    key = (name, periods, seed, signal)
    if key not in _cache:
        _cache[key] = run(name, (), periods, seed, signal=signal).steady()
    return _cache[key]


def compare(name, loops, periods=40, seeds=range(5),
            signal=locality.SIGNAL_COUNTERS):
    """One :class:`Row`: each guest with ``loops`` against without.

    A scenario with reboots runs long enough for its measured half to
    follow the last reboot (``Scenario.periods``). ``signal``: what the
    host measures; on hinting faults the kernel also balances, with the
    loops and without them.
    """
    periods = scenarios.SCENARIOS[name].periods(periods)
    gains, tputs, worst, worst_name = [], [], float('inf'), ''
    for seed in seeds:
        base = baseline(name, periods, seed, signal)
        outcome = run(name, loops, periods, seed, signal=signal)
        ratio = outcome.steady() / base
        tputs.append(outcome.steady().mean())
        gains.append(tputs[-1] / base.mean())
        if ratio.min() < worst:
            worst = float(ratio.min())
            worst_name = outcome.names[int(ratio.argmin())]
    return Row(name, tuple(loops), float(np.mean(gains)), float(min(gains)),
               worst, worst_name, float(np.mean(tputs)))


def table(names=None, loop_sets=LOOP_SETS, periods=40, seeds=range(5),
          signal=locality.SIGNAL_COUNTERS):
    """Rows for every scenario and loop set (the loops.rst tables)."""
    names = names or [n for n in scenarios.SCENARIOS if n != 'dense']
    return [compare(n, loops, periods, seeds, signal)
            for n in names for loops in loop_sets]


def format_table(rows):
    lines = [f"{'scenario':18} {'loops':27} {'gain':>6} {'min':>6} "
             f"{'worst':>6}  worst guest"]
    for r in rows:
        lines.append(f"{r.scenario:18} {'+'.join(r.loops):27} "
                     f"{r.mean_gain:6.3f} {r.min_gain:6.3f} "
                     f"{r.worst_guest:6.3f}  {r.worst_name}")
    return '\n'.join(lines)


@dataclasses.dataclass(frozen=True)
class IoPathRow:
    """One loop set on io-steering, every number simulated."""

    loops: tuple
    mean_tput: float  # every guest, steady half, mean over seeds
    netperf: float  # the network-bound guests alone
    memcached: float  # the others
    gain: float  # mean over seeds of mean with the loops / without
    actions: float  # loop actions carried out per run, mean over seeds


def _class_mean(outcome, prefix):
    steady = outcome.steady()
    return float(np.mean([tp for name, tp in zip(outcome.names, steady)
                          if name.startswith(prefix)]))


def io_path_rows(seeds=range(10), periods=40, name='io-steering'):
    """io-steering with no loops, then each of :data:`IO_LOOP_SETS`."""
    rows = []
    for loops in ((),) + IO_LOOP_SETS:
        outcomes = [run(name, loops, periods, seed) for seed in seeds]
        bases = [baseline(name, periods, seed) for seed in seeds]
        rows.append(IoPathRow(
            loops=tuple(loops),
            mean_tput=float(np.mean([o.steady().mean() for o in outcomes])),
            netperf=float(np.mean([_class_mean(o, 'netperf')
                                   for o in outcomes])),
            memcached=float(np.mean([_class_mean(o, 'memcached')
                                     for o in outcomes])),
            gain=float(np.mean([o.steady().mean() / b.mean()
                                for o, b in zip(outcomes, bases)])),
            actions=float(np.mean([o.actions for o in outcomes]))))
    return rows
