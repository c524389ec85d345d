"""``numa-policy-lab``: the lab's command line.

``numa-policy-lab simulate host --scenario NAME --loops LIST --periods N
--seed S [--json] [--dry-run]`` runs a simulated host with and without the
loops; ``--list-scenarios`` names the scenarios; ``simulate cluster`` runs
the cluster study, ``simulate tiers`` the memory-tier modes on a host
with a lower tier (``sim/tiers.py``), ``simulate tiered-cluster`` the
same modes over a cluster of such hosts (``cluster/tiered.py``) and
``sandbox`` the one-command sandbox.
"""

import argparse
import dataclasses
import json
import sys

from nova_numa_policy.loops import runner
from numa_policy_lab.cluster import cli as cluster_cli
from numa_policy_lab.sandbox import cli as sandbox_cli
from numa_policy_lab.sim import experiment
from numa_policy_lab.sim import scenarios
from numa_policy_lab.sim import tiers


def _loops(text):
    names = [n for n in (text or '').split(',') if n]
    runner.strategies(names)  # raises ValueError on an unknown name
    return names


def simulate_host(args, out):
    if args.list_scenarios:
        for s in scenarios.SCENARIOS.values():
            out.write(f'{s.name}: {s.description} '
                      f'(target loops: {", ".join(s.target_loops) or "-"})\n')
        return 0
    if not args.scenario:
        out.write('error: --scenario is required\n')
        return 2
    base = experiment.run(args.scenario, (), args.periods, args.seed)
    run = experiment.run(args.scenario, args.loops, args.periods, args.seed,
                         dry_run=args.dry_run)
    report = _report(args, base, run)
    if args.json:
        out.write(json.dumps(report, indent=2, sort_keys=True) + '\n')
    else:
        _print_table(report, out)
    return 0


def _report(args, base, run):
    b, w = base.steady(), run.steady()
    return {
        'scenario': args.scenario, 'loops': args.loops,
        'periods': args.periods, 'seed': args.seed, 'dry_run': args.dry_run,
        'vms': {name: {'baseline': round(float(b[i]), 4),
                       'with_loops': round(float(w[i]), 4),
                       'pages_moved': run.pages_moved[name],
                       'vcpu_moves': run.vcpu_moves[name],
                       'auto_policy': run.auto_choices.get(name)}
                for i, name in enumerate(run.names)},
        'mean': {'baseline': round(float(b.mean()), 4),
                 'with_loops': round(float(w.mean()), 4)},
        'actions_applied': run.actions,
    }


def _print_table(report, out):
    out.write(f"{'vm':24} {'baseline':>9} {'loops':>9} {'pages':>9} "
              f"{'vcpu':>5}  auto\n")
    for name, v in report['vms'].items():
        out.write(f"{name:24} {v['baseline']:9.3f} {v['with_loops']:9.3f} "
                  f"{v['pages_moved']:9d} {v['vcpu_moves']:5d}  "
                  f"{v['auto_policy'] or '-'}\n")
    m = report['mean']
    out.write(f"{'mean':24} {m['baseline']:9.3f} {m['with_loops']:9.3f}\n")


def simulate_tiers(args, out):
    """Each memory-tier mode over seeds, as doc/source/results.rst shows."""
    seeds = range(args.seed, args.seed + max(1, args.seeds))
    rows = tiers.rows(seeds)
    if args.json:
        out.write(json.dumps([dataclasses.asdict(r) for r in rows],
                             indent=2, sort_keys=True) + '\n')
    else:
        out.write(tiers.rst_table(rows) + '\n')
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog='numa-policy-lab')
    sub = parser.add_subparsers(dest='command', required=True)
    simulate = sub.add_parser('simulate', help='run the NUMA simulator')
    what = simulate.add_subparsers(dest='target', required=True)
    host = what.add_parser('host', help='one simulated host')
    host.add_argument('--scenario', choices=sorted(scenarios.SCENARIOS))
    host.add_argument('--loops', type=_loops, default=[],
                      help='comma-separated: carrefour,brm,vnuioa,auto')
    host.add_argument('--periods', type=int, default=60)
    host.add_argument('--seed', type=int, default=0)
    host.add_argument('--json', action='store_true')
    host.add_argument('--dry-run', action='store_true',
                      help='decide and log, apply nothing')
    host.add_argument('--list-scenarios', action='store_true')
    host.set_defaults(func=simulate_host)
    tier = what.add_parser('tiers', help='memory-tier modes (nova stock, '
                           'top, tiered, any) on a host with a CXL '
                           'expander, simulated')
    tier.add_argument('--seed', type=int, default=0)
    tier.add_argument('--seeds', type=int, default=10,
                      help='run this many seeds from --seed')
    tier.add_argument('--json', action='store_true')
    tier.set_defaults(func=simulate_tiers)
    cluster_cli.register(what)
    cluster_cli.register_tiered(what)
    sandbox_cli.register(sub)
    return parser


def main(argv=None, out=None):
    args = build_parser().parse_args(argv)
    return args.func(args, out or sys.stdout)


if __name__ == '__main__':
    sys.exit(main())
