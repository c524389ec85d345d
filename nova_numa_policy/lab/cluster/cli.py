"""``numa-policy simulate cluster``: one scenario, one strategy, seeds.

``--seed S`` runs one stream; ``--seeds N`` runs seeds S..S+N-1 and adds
the relative standard deviation over them. ``--json`` prints per-guest
normalized throughput, the mean, the fraction of the offline optimum
(where it is computed), the moves and the loop actions the agents'
do-no-harm guard refused.
"""

import json

from nova_numa_policy.lab.cluster import evidence
from nova_numa_policy.lab.cluster import scenarios
from nova_numa_policy.lab.cluster import strategies


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
    p.add_argument('--no-optimum', action='store_true',
                   help='skip the offline optimum')
    p.add_argument('--json', action='store_true')
    p.add_argument('--list-scenarios', action='store_true')
    p.set_defaults(func=simulate_cluster)
    return p


def simulate_cluster(args, out):
    if args.list_scenarios:
        for s in scenarios.SCENARIOS.values():
            tags = ', '.join(t for t, on in (('hostile', s.hostile),
                                             ('optimum', s.optimum)) if on)
            out.write(f'{s.name}: {s.description} ({tags or "-"})\n')
        return 0
    if not args.scenario:
        out.write('error: --scenario is required\n')
        return 2
    seeds = list(range(args.seed, args.seed + max(1, args.seeds)))
    outcomes = [evidence.run_one(args.scenario, args.strategy, s)
                for s in seeds]
    opt = None if args.no_optimum else evidence.optimum_of(args.scenario)
    c = evidence.cell(args.scenario, args.strategy, seeds, outcomes, opt)
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


def _print(report, out):
    for name, value in report['vms'].items():
        out.write(f'{name:24} {value:7.3f}\n')
    frac = report['fraction_of_optimum']
    out.write(f"mean {report['mean']:.3f}  optimum "
              f"{report['optimum'] if report['optimum'] is not None else '-'}"
              f"  fraction {frac if frac is not None else '-'}  rsd "
              f"{100 * report['rsd']:.2f} %  pages "
              f"{report['pages_moved']:.0f}  vcpu moves "
              f"{report['vcpu_moves']:.0f}  guard refusals "
              f"{report['guard_refusals']:.0f}  rejected "
              f"{report['rejected']:.1f}\n")
