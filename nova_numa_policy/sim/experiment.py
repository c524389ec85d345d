"""Run a scenario for some periods, with or without loops, and measure."""

import dataclasses

import numpy as np

from nova_numa_policy.loops import runner as loop_runner
from nova_numa_policy.sim import backend as sim_backend
from nova_numa_policy.sim import scenarios


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
        access_counters=True):
    scenario = scenarios.SCENARIOS[name]
    host, vms = scenario.build(seed)
    sim = sim_backend.SimulatedBackend(host, vms, seed=seed,
                                       access_counters=access_counters)
    runner = loop_runner.Runner(sim, loop_runner.strategies(loops),
                                configs=configs, dry_run=dry_run, seed=seed)
    reboots = dict(scenario.reboots)
    rows = []
    for period in range(periods):
        if period in reboots:
            for vm in sim.vms:
                if vm.uuid.startswith(reboots[period]):
                    sim.reboot(vm.uuid)
        runner.run_once()
        rows.append(sim.advance())
    return Outcome(names=[vm.uuid for vm in sim.vms],
                   throughput=np.array(rows),
                   pages_moved={vm.uuid: vm.pages_moved for vm in sim.vms},
                   vcpu_moves={vm.uuid: vm.vcpu_moves for vm in sim.vms},
                   actions=runner.actions_applied,
                   auto_choices=runner.auto_choices())
