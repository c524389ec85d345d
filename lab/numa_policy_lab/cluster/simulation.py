"""Run a stream of arrivals and departures over a cluster, one strategy.

Each period: guests leave, applications change phase, arrivals are placed
one by one (the scheduler reads the reports the agents sent at the start
of the period, as its cache would hold them; nova's own claims are always
current), every host's agent runs its loops if the strategy has them,
and every host runs one period of the performance model.
"""

import dataclasses

import numpy as np

from nova_numa_policy.contracts import locality
from nova_numa_policy.decisions import execution
from nova_numa_policy.loops import runner as loop_runner
from numa_policy_lab.cluster import bound as bound_mod
from numa_policy_lab.cluster import guests as guests_mod
from numa_policy_lab.cluster import hosts as hosts_mod
from numa_policy_lab.cluster import strategies as strategies_mod


class Cluster:
    """The hosts and the scheduler's report cache, as strategies see them."""

    def __init__(self, hosts, threshold=0.8):
        self.hosts = hosts
        self.threshold = threshold  # our plugins' node_load_threshold
        self.now = 0.0
        self._summaries = {}

    def summary(self, index):
        # One report per host and period, built the first time the
        # scheduler needs it: the same as a cache filled every period.
        if index not in self._summaries:
            self._summaries[index] = hosts_mod.summary(self.hosts[index])
        return self._summaries[index]

    def next_period(self, now):
        self.now = now
        self._summaries = {}


@dataclasses.dataclass
class Outcome:
    guests: list  # cluster.guests.Guest, in stream order
    throughput: np.ndarray  # periods x guests; nan while not running
    rejected: list  # uuids nova found no valid host for
    hosts: dict  # uuid -> host index
    pages_moved: int
    vcpu_moves: int
    window: int
    # Loop actions the agents' do-no-harm guard refused, over the run.
    guard_refusals: int = 0
    # Pages the kernel's NUMA balancing moved, over the run.
    kernel_pages_moved: int = 0
    # What no strategy can beat on this run's guests (cluster/bound.py):
    # ``mean()`` above it would be a fault of the simulation.
    bound: float | None = None

    def final(self):
        """Per guest alive at the end: mean throughput over the window.

        A guest that found no host delivers nothing: 0.
        """
        tail = self.throughput[-self.window:]
        values = []
        for j, guest in enumerate(self.guests):
            if guest.depart is not None:
                continue
            if guest.uuid in self.rejected:
                values.append(0.0)
            else:
                values.append(float(np.nanmean(tail[:, j])))
        return np.array(values)

    def mean(self):
        return float(self.final().mean())

    def series(self):
        """Mean throughput of the running guests, per period."""
        return np.array([np.nanmean(row) if np.isfinite(row).any()
                         else np.nan for row in self.throughput])


def _events(guests, period):
    leaving = [g for g in guests if g.depart == period]
    arriving = [g for g in guests if g.arrive == period]
    phases = [(g, profile) for g in guests for at, profile in g.phases
              if at == period]
    return leaving, arriving, phases


def run(spec, strategy_name, seed, guard=None,
        signal=locality.SIGNAL_HINTING_FAULTS):
    """Run ``spec`` (a :class:`~.scenarios.Spec`) under one strategy.

    ``seed`` drives everything inside the hosts: the kernel's choice of
    CPUs, the strategy's own draws, the agents' counter noise and loops.
    ``guard`` is the agents' do-no-harm guard configuration (None: the
    agent's defaults). ``signal``: what every host measures of locality:
    the kernel's hinting faults with its balancing on (a distribution's
    default), perfect counters (a reference no Linux/KVM host gives), or
    None.
    """
    strategy = strategies_mod.STRATEGIES[strategy_name](seed)
    hosts = [hosts_mod.ClusterHost(spec.host(), f'{spec.name}-{i}',
                                   seed=seed * 100 + i, signal=signal)
             for i in range(spec.n_hosts)]
    cluster = Cluster(hosts, spec.threshold)
    runners = [loop_runner.Runner(h, loop_runner.strategies(spec.loops),
                                  seed=seed * 100 + i, guard=guard)
               for i, h in enumerate(hosts)] if strategy.loops else []
    where, rejected, rows, gone = {}, [], [], []
    column = {g.uuid: j for j, g in enumerate(spec.guests)}
    for period in range(spec.periods):
        cluster.next_period(hosts[0].now)
        leaving, arriving, phases = _events(spec.guests, period)
        for guest in leaving:
            if guest.uuid in where:
                gone.append(hosts[where[guest.uuid]].remove(guest.uuid))
        for guest, profile in phases:
            if guest.uuid in where and guest.alive(period):
                hosts[where[guest.uuid]].set_profile(guest.uuid, profile)
        for guest in arriving:
            decision = strategy.place(guest, cluster)
            if decision is None:
                rejected.append(guest.uuid)
                continue
            host = hosts[decision.host]
            nic = host.host.nics[0].name if host.host.nics else None
            host.add(guests_mod.boot(host.host, guest, decision.boot, nic,
                                     decision.requested), decision.cells)
            where[guest.uuid] = decision.host
        for host, runner in zip(hosts, runners):
            execution.period(runner, host)
        row = np.full(len(spec.guests), np.nan)
        for host in hosts:
            names = [vm.uuid for vm in host.vms]
            for uuid, tp in zip(names, host.advance()):
                row[column[uuid]] = tp
        rows.append(row)
    everyone = gone + [vm for h in hosts for vm in h.vms]
    return Outcome(guests=list(spec.guests), throughput=np.array(rows),
                   rejected=rejected, hosts=where,
                   pages_moved=sum(vm.pages_moved for vm in everyone),
                   vcpu_moves=sum(vm.vcpu_moves for vm in everyone),
                   window=spec.window,
                   guard_refusals=sum(r.actions_refused for r in runners),
                   kernel_pages_moved=sum(vm.kernel_pages_moved
                                          for vm in everyone),
                   bound=bound_mod.run_bound(spec))
