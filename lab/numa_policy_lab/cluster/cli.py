"""``numa-policy-lab simulate cluster``: one scenario, one strategy, seeds.

``--seed S`` runs one stream; ``--seeds N`` runs seeds S..S+N-1 and adds
the relative standard deviation over them. ``--json`` prints per-guest
normalized throughput, the mean, its fraction of the best static
placement (a reference our loops may beat; where it is computed) and of
the bound of the same runs (which nothing may beat), the moves and the
loop actions the agents' do-no-harm guard refused.

``numa-policy-lab simulate tiered-cluster``: the hosts with a lower
memory tier (``tiered.py``), every strategy over seeds S..S+N-1, as
doc/source/results.rst shows them; ``--json`` for the numbers.
"""

import dataclasses
import json
import math

from numa_policy_lab.cluster import evidence
from numa_policy_lab.cluster import scenarios
from numa_policy_lab.cluster import strategies
from numa_policy_lab.cluster import tiered


def register(subparsers):
    """Add ``cluster`` to the ``simulate`` subcommands."""
    p = subparsers.add_parser('cluster', help='a cluster of simulated '
                              'hosts fed by a stream of VMs')
    p.add_argument('--scenario', choices=sorted(scenarios.SCENARIOS))
    p.add_argument('--strategy', choices=sorted(strategies.STRATEGIES),
                   default=evidence.OURS)
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--seeds', type=int, default=1,
                   help='run this many seeds from --seed; report the RSD')
    p.add_argument('--no-best-static', action='store_true',
                   help='skip the best static placement (a reference '
                   'solved offline, slow)')
    p.add_argument('--json', action='store_true')
    p.add_argument('--list-scenarios', action='store_true')
    p.set_defaults(func=simulate_cluster)
    return p


def simulate_cluster(args, out):
    if args.list_scenarios:
        for s in scenarios.SCENARIOS.values():
            tags = ', '.join(t for t, on in (('hostile', s.hostile),
                                             ('best static', s.best_static))
                             if on)
            out.write(f'{s.name}: {s.description} ({tags or "-"})\n')
        return 0
    if not args.scenario:
        out.write('error: --scenario is required\n')
        return 2
    seeds = list(range(args.seed, args.seed + max(1, args.seeds)))
    outcomes = [evidence.run_one(args.scenario, args.strategy, s)
                for s in seeds]
    best = (None if args.no_best_static
            else evidence.best_static_of(args.scenario))
    c = evidence.cell(args.scenario, args.strategy, seeds, outcomes, best)
    report = c.as_dict()
    report['vms'] = _per_guest(outcomes[0])
    if args.json:
        out.write(json.dumps(report, indent=2, sort_keys=True) + '\n')
    else:
        _print(report, out)
    return 0


def _per_guest(outcome):
    alive = [g for g in outcome.guests if g.depart is None]
    return {g.name: round(float(v), 4)
            for g, v in zip(alive, outcome.final())}


def _shown(value):
    return '-' if value is None else value


def _print(report, out):
    for name, value in report['vms'].items():
        out.write(f'{name:24} {value:7.3f}\n')
    out.write(f"mean {report['mean']:.3f}  best static "
              f"{_shown(report['best_static'])}  of it "
              f"{_shown(report['of_best_static'])}  bound "
              f"{_shown(report['bound'])}  of it "
              f"{_shown(report['of_bound'])}  rsd "
              f"{100 * report['rsd']:.2f} %  pages "
              f"{report['pages_moved']:.0f}  vcpu moves "
              f"{report['vcpu_moves']:.0f}  guard refusals "
              f"{report['guard_refusals']:.0f}  rejected "
              f"{report['rejected']:.1f}\n")


def register_tiered(subparsers):
    """Add ``tiered-cluster`` to the ``simulate`` subcommands."""
    p = subparsers.add_parser(
        'tiered-cluster', help='hosts with a CXL expander fed by a stream '
        'of guests of several memory-tier flavors: nova stock, the '
        "kernel's tiering alone, ours; simulated")
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--seeds', type=int, default=10,
                   help='run this many seeds from --seed')
    p.add_argument('--json', action='store_true')
    p.set_defaults(func=simulate_tiered)
    return p


def _finite(value):
    """JSON has no NaN: a figure of no guest at all is null."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def simulate_tiered(args, out):
    seeds = list(range(args.seed, args.seed + max(1, args.seeds)))
    rows = tiered.rows(seeds)
    if args.json:
        report = {'simulated': True, 'seeds': seeds,
                  'hosts': tiered.N_HOSTS,
                  'rows': [_finite(dataclasses.asdict(r)) for r in rows]}
        out.write(json.dumps(report, indent=2, sort_keys=True) + '\n')
        return 0
    out.write(f'SIMULATED (the model with the CXL figures of '
              f'sim/constants.py; nothing measured): {tiered.N_HOSTS} '
              f'xeon2_cxl hosts, seeds {seeds[0]}..{seeds[-1]}\n\n')
    out.write(tiered.cluster_table(rows) + '\n\n')
    out.write(tiered.flavor_table(rows) + '\n')
    return 0
