"""The best static placement of the final guests: a reference, no bound.

Knowing every guest's application in advance, choose for each a host and
an option (the nodes its vCPUs are pinned to and its memory policy there)
to maximise the mean normalized throughput under the simulator's model,
with no host CPU shared by two vCPUs and no node's memory overcommitted.

1. Every (application, option) is solved alone on an idle host: its
   throughput and the memory-controller load it puts on each node.
2. An integer program (HiGHS) chooses how many guests of each application
   take each option on each host: maximise the summed solo throughput
   minus a small price on the busiest memory controller (solo numbers
   ignore contention; the price makes the program spread demand).
3. A local search under the full model moves one guest at a time to any
   other host and option while that raises the total, so contention the
   program priced only roughly is accounted exactly.

Small instances only (tens of guests): it is a reference point, not a
scheduler. ``exhaustive`` enumerates every assignment for tests. It is
the optimum of the static problem only: loops that move pages and vCPUs
while guests run reach placements outside its options and may beat it
(``bound`` gives what nothing may beat).
"""

import collections
import dataclasses
import itertools
import math

import highspy

from numa_policy_lab.cluster import guests as guests_mod
from numa_policy_lab.cluster import hosts as hosts_mod
from numa_policy_lab.sim import model
from numa_policy_lab.sim import state as st

# Price of one unit of the busiest controller's utilization, in units of
# one guest's normalized throughput: a tie-breaker toward spreading.
CONTENTION_PRICE = 0.05
SEARCH_EVALUATIONS = 400
# Most combinations of one host's options tried at once (see _rechoose).
JOINT_LIMIT = 1000


@dataclasses.dataclass(frozen=True)
class Option:
    """Where one guest runs on a host: vCPU nodes and memory policy."""

    vcpu_nodes: tuple  # host node of each vCPU
    mode: str  # sim.state FIRST_TOUCH, INTERLEAVE or HOME
    nodes: frozenset  # memory nodes

    def vcpus_on(self, node):
        return self.vcpu_nodes.count(node)


def _groups(sim, size):
    """Aligned runs of ``size`` consecutive nodes (sockets, halves)."""
    return [tuple(range(first, first + size))
            for first in range(0, sim.n_nodes - size + 1, size)]


def options(sim, app):
    """The options the search chooses among for ``app`` on ``sim``."""
    need = app.nodes_needed(sim.cpus_per_node)
    if need == 1:
        return [Option((n,) * app.vcpus, st.HOME, frozenset({n}))
                for n in range(sim.n_nodes)]
    found = []
    size = need
    while size <= sim.n_nodes:
        for group in _groups(sim, size):
            dealt = tuple(group[v % size] for v in range(app.vcpus))
            found.append(Option(dealt, st.FIRST_TOUCH, frozenset(group)))
            found.append(Option(dealt, st.INTERLEAVE, frozenset(group)))
        size *= 2
    return found


def _host_with(sim, placed):
    """A host running ``placed``: (guest, option) pairs, vCPUs pinned."""
    host = hosts_mod.ClusterHost(sim, 'optimum')
    for guest, option in placed:
        cpus = _cpus(host, option)
        boot = guests_mod.Boot(
            cpus=cpus, affinity=tuple(frozenset(sim.node_cpus(n))
                                      for n in option.vcpu_nodes),
            mode=option.mode, nodes=option.nodes)
        nic = sim.nics[0].name if sim.nics else None
        host.add(guests_mod.boot(sim, guest, boot, nic))
    return host


def _cpus(host, option):
    counts = host.cpu_counts()
    chosen = []
    for node in option.vcpu_nodes:
        cpu = min(host.host.node_cpus(node), key=lambda c: (counts[c], c))
        counts[cpu] += 1
        chosen.append(cpu)
    return tuple(chosen)


class Evaluator:
    """Summed throughput of one host's configuration, memoised."""

    def __init__(self, sim):
        self.sim = sim
        self.cache = {}
        self.evaluations = 0

    def __call__(self, config):
        """``config``: a sorted tuple of (app, option) pairs."""
        if config not in self.cache:
            self.evaluations += 1
            placed = [(_stand_in(app, k), option)
                      for k, (app, option) in enumerate(config)]
            host = _host_with(self.sim, placed)
            result = model.evaluate(self.sim, host.vms)
            self.cache[config] = (float(result.vm_throughput.sum()),
                                  result.mc_util)
        return self.cache[config][0]

    def solo(self, app, option):
        self(((app, option),))
        value, mc = self.cache[((app, option),)]
        return value, mc


def _stand_in(app, k):
    return guests_mod.Guest(uuid=guests_mod.guest_uuid('optimum', k),
                            name=f'{app.name}-{k}', app=app, arrive=0)


def _key(pair):
    app, option = pair
    return (app.name, option.vcpu_nodes, option.mode, sorted(option.nodes))


def _feasible(sim, config):
    for node in range(sim.n_nodes):
        vcpus = sum(o.vcpus_on(node) for _, o in config)
        if vcpus > sim.cpus_per_node:
            return False
        mem = sum(_memory_on(sim, a, o, node) for a, o in config)
        if mem > sim.memory_mb_per_node:
            return False
    return True


def _memory_on(sim, app, option, node):
    if node not in option.nodes:
        return 0.0
    if option.mode == st.HOME:
        return app.memory_mb if node == min(option.nodes) else 0.0
    return app.memory_mb / len(option.nodes)


def _ilp(sim, n_hosts, counts, evaluate):
    """Counts per (app, host, option) from the integer program."""
    h = highspy.Highs()
    h.setOptionValue('output_flag', False)
    h.setOptionValue('random_seed', 0)
    variables = []  # (app, host, option, solo, mc)
    for app in counts:
        for host in range(n_hosts):
            for option in options(sim, app):
                solo, mc = evaluate.solo(app, option)
                variables.append((app, host, option, solo, mc))
    inf = highspy.kHighsInf
    for _, _, _, solo, _ in variables:
        h.addVar(0, inf)
        h.changeColCost(h.getNumCol() - 1, -solo)
    peak = h.getNumCol()
    h.addVar(0, inf)
    h.changeColCost(peak, CONTENTION_PRICE)
    for i in range(len(variables)):
        h.changeColIntegrality(i, highspy.HighsVarType.kInteger)
    for app, count in counts.items():
        idx = [i for i, v in enumerate(variables) if v[0] is app]
        h.addRow(count, count, len(idx), idx, [1.0] * len(idx))
    for host in range(n_hosts):
        mine = [i for i, v in enumerate(variables) if v[1] == host]
        for node in range(sim.n_nodes):
            cpu = [variables[i][2].vcpus_on(node) for i in mine]
            h.addRow(-inf, sim.cpus_per_node, len(mine), mine, cpu)
            mem = [_memory_on(sim, variables[i][0], variables[i][2], node)
                   for i in mine]
            h.addRow(-inf, sim.memory_mb_per_node, len(mine), mine, mem)
            # peak >= this controller's summed solo load
            load = [variables[i][4][node] for i in mine]
            h.addRow(-inf, 0.0, len(mine) + 1, mine + [peak],
                     load + [-1.0])
    h.run()
    values = h.getSolution().col_value
    hosts = [[] for _ in range(n_hosts)]
    for i, (app, host, option, _, _) in enumerate(variables):
        hosts[host].extend([(app, option)] * int(round(values[i])))
    return [tuple(sorted(c, key=_key)) for c in hosts]


def _improve(sim, configs, evaluate, budget):
    """Move one guest at a time while the modelled total rises."""
    improved = True
    while improved and evaluate.evaluations < budget:
        improved = False
        for src, config in enumerate(configs):
            for pair in sorted(set(config), key=_key):
                move = _best_move(sim, configs, src, pair, evaluate, budget)
                if move is not None:
                    configs = move
                    improved = True
                    break
            if improved:
                break
    return configs


def _best_move(sim, configs, src, pair, evaluate, budget):
    app = pair[0]
    rest = list(configs[src])
    rest.remove(pair)
    rest = tuple(sorted(rest, key=_key))
    before = evaluate(configs[src])
    for dst in range(len(configs)):
        for option in options(sim, app):
            if evaluate.evaluations >= budget:
                return None
            if dst == src and option == pair[1]:
                continue
            base = rest if dst == src else configs[dst]
            target = tuple(sorted(base + ((app, option),), key=_key))
            if not _feasible(sim, target):
                continue
            if dst == src:
                gain = evaluate(target) - before
            else:
                gain = (evaluate(rest) + evaluate(target) - before
                        - evaluate(configs[dst]))
            if gain > 1e-6:
                new = list(configs)
                new[src] = rest
                new[dst] = target
                if dst == src:
                    new[src] = target
                return new
    return None


def _joint_choices(sim, config, limit):
    """Every way to re-choose the options of ``config``'s guests at once.

    Guests of one application are interchangeable, so each application
    takes a multiset of options. None when there are more than ``limit``.
    """
    counts = collections.Counter(app for app, _ in config)
    per_app = []
    total = 1
    for app, count in sorted(counts.items(), key=lambda kv: kv[0].name):
        choices = options(sim, app)
        total *= math.comb(len(choices) + count - 1, count)
        if total > limit:
            return None
        per_app.append([[(app, o) for o in picked]
                        for picked in itertools.combinations_with_replacement(
                            choices, count)])
    return (tuple(sorted(itertools.chain.from_iterable(parts), key=_key))
            for parts in itertools.product(*per_app))


def _rechoose(sim, configs, evaluate, limit=JOINT_LIMIT):
    """Each host's options chosen jointly, where few enough to try all.

    A one-guest move cannot split a host between two guests that both
    spread over it: each half alone is worse while the other still
    spreads. Trying every combination of a host's options finds it.
    """
    found = []
    for config in configs:
        best, value = config, evaluate(config) if config else 0.0
        for choice in _joint_choices(sim, config, limit) or ():
            if _feasible(sim, choice) and evaluate(choice) > value + 1e-6:
                best, value = choice, evaluate(choice)
        found.append(best)
    return found


@dataclasses.dataclass(frozen=True)
class Solution:
    mean: float  # mean normalized throughput over the guests
    configs: tuple  # per host: ((app name, option), ...)
    evaluations: int


def solve(sim, n_hosts, apps, budget=SEARCH_EVALUATIONS):
    """The reference placement of ``apps`` (one entry per guest)."""
    counts = collections.Counter(apps)
    evaluate = Evaluator(sim)
    configs = _ilp(sim, n_hosts, counts, evaluate)
    while True:
        configs = _improve(sim, configs, evaluate,
                           budget + evaluate.evaluations)
        better = _rechoose(sim, configs, evaluate)
        if better == configs:
            break
        configs = better
    total = sum(evaluate(c) for c in configs)
    return Solution(mean=total / len(apps),
                    configs=tuple(tuple((a.name, o) for a, o in c)
                                  for c in configs),
                    evaluations=evaluate.evaluations)


def exhaustive(sim, n_hosts, apps):
    """Every assignment of every guest to every host and option (tiny)."""
    evaluate = Evaluator(sim)
    choices = [[(h, o) for h in range(n_hosts) for o in options(sim, a)]
               for a in apps]
    best = -math.inf
    for pick in itertools.product(*choices):
        configs = [[] for _ in range(n_hosts)]
        for app, (host, option) in zip(apps, pick):
            configs[host].append((app, option))
        configs = [tuple(sorted(c, key=_key)) for c in configs]
        if all(_feasible(sim, c) for c in configs):
            best = max(best, sum(evaluate(c) for c in configs if c))
    return best / len(apps)


def final_apps(spec):
    """The applications of the guests alive at the end of a stream."""
    return [g.app for g in spec.guests if g.depart is None]


def for_spec(spec):
    return solve(spec.host(), spec.n_hosts, final_apps(spec))
