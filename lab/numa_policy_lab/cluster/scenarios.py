"""Cluster scenarios from the seeds: what arrives, on which hosts, when.

Every stream has three acts: the guests arrive a few per period in an
order the seed shuffles; after a settling time some of them leave and
guests of the same flavors replace them (the perturbation); the last
``window`` periods are measured. Replacements keep the final set of
flavors independent of the seed, so one best static placement (the
reference of ``optimum``) serves all seeds.
"""

import dataclasses
import math

import numpy as np

from numa_policy_lab.cluster import guests as g
from numa_policy_lab.sim import topology

SETTLE = 4  # periods after the last arrival before measuring or churning
WINDOW = 8  # measured periods at the end of every run

# Seed 002 §6: netperf and YCSB are network-bound (flavors say so and ask
# for NIC locality); memcached is memory-intensive, under 500 req/s.
NETPERF = g.App('netperf', 'netperf', 1, 1024, policy='first-touch',
                nic_locality='preferred', io_intensity='high', io_bound=True)
MEMCACHED = g.App('memcached', 'memcached', 1, 1024, policy='first-touch')
YCSB = g.App('ycsb', 'ycsb', 1, 1024, policy='first-touch',
             nic_locality='preferred', io_intensity='high', io_bound=True)


def _seed000(name, profile, vcpus, policy):
    # Seed 000 Table 4: the best policy of each access-imbalance class.
    return g.App(f'{name}-{vcpus}', profile, vcpus, 4096 * vcpus // 12,
                 policy=policy)


LOW = _seed000('low', 'private-stream', 12, 'first-touch')
MODERATE = _seed000('moderate', 'moderate', 12, 'first-touch+carrefour')
HIGH = _seed000('high', 'master-slave', 12, 'interleave+carrefour')
LOW24 = _seed000('low', 'private-stream', 24, 'first-touch')
MODERATE24 = _seed000('moderate', 'moderate', 24, 'first-touch+carrefour')
HIGH24 = _seed000('high', 'master-slave', 24, 'interleave+carrefour')
# Looks idle when the scheduler sees it, then sends bursts of traffic: no
# flavor hint, so only measured rates can tell (and they lag).
BURSTY = g.App('bursty', 'idle', 1, 1024, policy='first-touch')


@dataclasses.dataclass(frozen=True)
class Spec:
    """One scenario instance (a seed's stream) ready to run."""

    name: str
    host: object  # () -> sim.topology.SimHost
    n_hosts: int
    guests: tuple
    periods: int
    window: int
    loops: tuple  # what our agents run
    perturbation: int  # the period the churn starts
    # [numa_policy_scheduler] node_load_threshold of our plugins.
    threshold: float = 0.8


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    build: object  # seed -> Spec
    hostile: bool = False
    # Whether the best static placement (cluster/optimum.py) is computed.
    best_static: bool = True


def _stream(name, apps, seed, per_period, churn, phases=()):
    """Arrivals in a shuffled order, then ``churn`` replaced guests."""
    rng = np.random.default_rng(seed)
    order = [apps[i] for i in rng.permutation(len(apps))]
    arrivals = math.ceil(len(order) / per_period)
    churn_at = arrivals + SETTLE
    leaving = set(int(i) for i in rng.choice(len(order), churn,
                                             replace=False))
    guests = []
    for k, app in enumerate(order):
        guests.append(g.Guest(
            uuid=g.guest_uuid(name, k), name=f'{app.name}-{k}', app=app,
            arrive=k // per_period,
            depart=churn_at if k in leaving else None, phases=phases))
    for j, k in enumerate(sorted(leaving)):
        n = len(order) + j
        guests.append(g.Guest(
            uuid=g.guest_uuid(name, n), name=f'{order[k].name}-{n}',
            app=order[k], arrive=churn_at + j // per_period, phases=phases))
    last = churn_at + math.ceil(churn / per_period)
    return tuple(guests), churn_at, last + SETTLE + WINDOW


def _builder(name, host, n_hosts, apps, per_period, churn, loops,
             threshold=0.8):
    def build(seed):
        guests, churn_at, periods = _stream(name, apps, seed, per_period,
                                            churn)
        return Spec(name=name, host=host, n_hosts=n_hosts, guests=guests,
                    periods=periods, window=WINDOW, loops=loops,
                    perturbation=churn_at, threshold=threshold)
    return build


def _hostile(seed):
    # Bursty guests arrive idle, so the reports count no I/O-intensive
    # neighbour near any NIC; then they burst on and off every 3 periods.
    name = 'hostile-bursty'
    rng = np.random.default_rng(seed)
    first = 4
    bursts = tuple((p, 'netperf' if (p - 12) // 3 % 2 == 0 else 'idle')
                   for p in range(12, 60, 3))
    guests = []
    for k in range(12):
        guests.append(g.Guest(uuid=g.guest_uuid(name, k),
                              name=f'bursty-{k}', app=BURSTY,
                              arrive=k // first, phases=bursts))
    order = rng.permutation(12)
    for j, k in enumerate(order):
        n = 12 + j
        guests.append(g.Guest(uuid=g.guest_uuid(name, n),
                              name=f'netperf-{n}', app=NETPERF,
                              arrive=3 + int(k) // first))
    return Spec(name=name, host=topology.ivybridge4, n_hosts=3,
                guests=tuple(guests), periods=12 + 3 * 4 + WINDOW,
                window=WINDOW, loops=('vnuioa',), perturbation=12)


SCENARIOS = {s.name: s for s in (
    Scenario('netperf', 'vNUIOA single type (seed 002): 18 one-vCPU '
             'netperf guests on 3 four-socket hosts, NIC on node 0.',
             _builder('netperf', topology.ivybridge4, 3, [NETPERF] * 18,
                      3, 6, ('vnuioa',))),
    Scenario('netperf-dense', 'vNUIOA single type at 12 guests per host: '
             '36 netperf guests on 3 four-socket hosts (8 CPUs per node).',
             _builder('netperf-dense', topology.ivybridge4, 3,
                      [NETPERF] * 36, 6, 9, ('vnuioa',))),
    Scenario('io-mixed', 'vNUIOA mixed (seed 002 §6.2.2): 12 each of '
             'netperf, memcached and YCSB on 3 four-socket hosts (12 per '
             'host on average).',
             _builder('io-mixed', topology.ivybridge4, 3,
                      [NETPERF, MEMCACHED, YCSB] * 12, 4, 9, ('vnuioa',))),
    Scenario('low', 'Seed 000 low imbalance (private data, best policy '
             'first-touch): 6 twelve-vCPU guests on 2 AMD48 hosts.',
             _builder('low', topology.amd48, 2, [LOW] * 6, 2, 2,
                      ('carrefour',))),
    Scenario('moderate', 'Seed 000 moderate imbalance (best policy '
             'first-touch+carrefour): 6 twelve-vCPU guests on 2 AMD48.',
             _builder('moderate', topology.amd48, 2, [MODERATE] * 6, 2, 2,
                      ('carrefour',))),
    Scenario('high', 'Seed 000 high imbalance, master-slave (best policy '
             'interleave+carrefour): 6 twelve-vCPU guests on 2 AMD48.',
             _builder('high', topology.amd48, 2, [HIGH] * 6, 2, 2,
                      ('carrefour',))),
    Scenario('consolidation', 'Seed 000 Fig. 8: two 24-vCPU guests per '
             'AMD48 host, 3 hosts, two guests of each class (low, moderate, '
             'high); which classes share a host follows the arrival order.',
             # Two 24-vCPU guests fill a host, at the default load
             # threshold: the load filter judges measured load only.
             _builder('consolidation', topology.amd48, 3,
                      [LOW24, MODERATE24, HIGH24] * 2, 2, 2,
                      ('carrefour',))),
    Scenario('hostile-bursty', 'Honest limits: 12 guests that look idle '
             'when scheduled, then burst network traffic on and off, and '
             '12 netperf guests asking for NIC locality; 3 hosts.',
             _hostile, hostile=True, best_static=False),
)}
