"""Benchmarks on the lab host: a real two-node kernel, libvirtd and QEMU.

* **Cross-node page moves**: the page mover's Python path against a bare
  C ``move_pages`` loop on the same pages of one process, every pass
  moving all of them to the other node (tests/bench/pagemove.py, run in
  the lab host). Target: Python >= 90 % of C's pages per second.
* **The agent's period** (observe, decide, act, build the report) with
  real QEMU domains, against the bare reads it needs (libvirt's domain
  list, XML, vCPU and emulator placement; each guest's pidfile, command
  line and numa_maps; /proc/stat and each node's meminfo), in the same
  process, round by round. Target: <= 1.5x that floor. The cost per
  guest and per GB of guest memory is printed beside it.
* **Observation cost against guest size**: one guest at a time, from
  256 MiB to the largest the bench lab host holds, with 4 KiB pages (the
  lab kernel's THP off) and with transparent huge pages: the agent's
  period with its numa_maps bound (agent/backend/observation.py) and without,
  the bare reads and the numa_maps reads alone, per GB of guest memory.
  The same reads natively on this machine's kernel
  (tests/bench/numamaps_native.py) give the cost per GB on a real host,
  from which the period on a host of 1 TB of guest memory is
  extrapolated, with the bound (its rule run on that host's guests) and
  without. Target: <= 1 % of one core at the default period there.

Both are ratios of CPU time in the same run: the lab host is emulated
(TCG), so its absolute times say nothing about a real host. The results
are written to doc/source/labhost-results.inc, which the lab host page
includes. Without a lab host (no QEMU, kernel or busybox here) the
benchmark says so and is not run; NUMA_POLICY_REQUIRE_LAB=1 makes that a
failure.
"""

import argparse
import datetime
import os
import statistics
import subprocess
import sys

from agent.backend import observation
from nova_numa_policy.contracts import policy
from tests.bench import numamaps_native
from tests.labhost import domains
from tests.labhost import initramfs
from tests.labhost import machine
from tests.labhost import topology as topology_mod

PAGEMOVE_TARGET = 0.90
PERIOD_TARGET = 1.5
HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(os.path.dirname(os.path.dirname(HERE)), 'doc',
                       'source', 'labhost-results.inc')

# Room for eight guests beside libvirtd and the agent, and for one guest
# of 4 GiB; 6 GiB in all, beside what else this machine runs.
BENCH_TOPOLOGY = topology_mod.LabTopology(
    name='bench-two-nodes', nodes=2, cpus_per_node=2,
    memory_mb_per_node=3072, distances=((10, 21), (21, 10)), nic_node=1)
GUEST_SIZES_MB = (256, 1024, 4096)
# The lab kernel's THP setting for each kind of guest memory: QEMU asks
# for huge pages on guest RAM (madvise), 'never' refuses them.
PAGE_KINDS = (('4 KiB pages', 'never'), ('THP', 'madvise'))
# The extrapolation: 1 TB of guest memory, as 64 guests of 16 GiB.
HOST_GB = 1024
HOST_GUEST_GB = 16
CORE_SHARE_TARGET = observation.CORE_SHARE
POLICY_MIX = ('interleave', 'home', 'first-touch', 'auto')


def start_domains(lab, count, memory_mb):
    caps = lab.call('tests.labhost.inside:capabilities')
    for number in range(count):
        value = POLICY_MIX[number % len(POLICY_MIX)]
        xml, _ = domains.define_xml(
            f'bench-{number}', 1, memory_mb, {policy.POLICY_KEY: value},
            caps, nics=(domains.physnet_nic('physnet1', 1),))
        lab.call('tests.labhost.inside:start_domain', xml)


def start_sized_domain(lab, memory_mb):
    caps = lab.call('tests.labhost.inside:capabilities')
    xml, _ = domains.define_xml(
        f'bench-{memory_mb}', 1, memory_mb,
        {policy.POLICY_KEY: 'interleave'}, caps,
        nics=(domains.physnet_nic('physnet1', 1),))
    lab.call('tests.labhost.inside:start_domain', xml, timeout=1200)


def size_sweep(lab, sizes, rounds):
    """{page kind: [(size MiB, observation_cost result)]}."""
    results = {}
    for kind, thp in PAGE_KINDS:
        lab.call('tests.labhost.inside:remove_domains')
        lab.call('tests.bench.labhost_guest:set_thp', thp)
        rows = []
        for size in sizes:
            try:
                start_sized_domain(lab, size)
            except (machine.LabError, machine.CallFailed) as exc:
                print(f'{kind}: no guest of {size} MiB here: {exc}',
                      flush=True)
                break
            cost = lab.call('tests.bench.labhost_guest:observation_cost',
                            rounds, timeout=3600)
            lab.call('tests.labhost.inside:remove_domains')
            print(f'{kind} {size} MiB: bound {_ms(cost["bound"]):.1f} ms, '
                  f'unbounded {_ms(cost["unbounded"]):.1f} ms, floor '
                  f'{_ms(cost["floor"]):.1f} ms, numa_maps '
                  f'{_ms(cost["numa_maps"]):.1f} ms', flush=True)
            rows.append((size, cost))
        results[kind] = rows
    return results


def _ms(times):
    """Mean CPU ms of a round: a bounded guest's reads come every few."""
    return statistics.mean(times) * 1000


def extrapolate(per_gb_ms, period=observation.DEFAULT_PERIOD):
    """A 1 TB host's numa_maps reads: ms per period, off and bound.

    Returns the ms per period without the bound, the mean and largest
    with it, and the bound's staleness bound in periods.
    The rule itself (observation.NumaMapsBound, its defaults) runs on a
    host of HOST_GB of guest memory in guests of HOST_GUEST_GB, each
    read costing ``per_gb_ms`` per GB, over ten staleness bounds of
    rounds after the first (which reads every guest, as the agent's
    first period does). Assumes the cost linear in resident memory.
    """
    cost = per_gb_ms / 1000 * HOST_GUEST_GB
    guests = [f'guest-{n}' for n in range(HOST_GB // HOST_GUEST_GB)]
    budget = observation.budget_for(period)
    bound = observation.NumaMapsBound(budget)
    max_age = observation.staleness_bound([cost] * len(guests), budget)
    spent = []
    for _ in range(10 * max_age + 1):
        total = 0.0
        for pid, uuid in enumerate(guests):
            if bound.due(uuid, pid):
                bound.read(uuid, pid, {0: 1}, cost)
                total += cost
        spent.append(total)
    spent = spent[1:]
    return (cost * len(guests) * 1000, statistics.mean(spent) * 1000,
            max(spent) * 1000, max_age)


def paired_ratio(numerators, denominators):
    return statistics.median(n / d for n, d in zip(numerators, denominators))


def _commit():
    try:
        return subprocess.run(['git', 'rev-parse', '--short', 'HEAD'],
                              capture_output=True, text=True, cwd=HERE,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'


def sweep_lines(sweep, native, native_base_ms):
    """The observation-cost tables: TCG by guest size, native per GB."""
    lines = [
        '',
        'Observation cost against guest size: one running QEMU domain at '
        'a time, in the same lab host (TCG CPU times, mean per period over '
        'the rounds; "per GB" divides by the guest\'s resident memory). '
        '"bound" is the agent with its numa_maps bound '
        '(``agent/backend/observation.py``, its defaults: '
        f'{observation.budget_for(observation.DEFAULT_PERIOD) * 1e3:.0f} ms '
        f'per period, every guest read at least every '
        f'{observation.MAX_AGE} periods, or as often as the budget allows '
        'when it cannot read them all in that many), "off" the same agent '
        'reading '
        'every guest every period.',
        '',
        '.. list-table::',
        '   :header-rows: 1',
        '',
        '   * - guest memory',
        '     - huge pages',
        '     - agent period, off (ms; ms/GB)',
        '     - agent period, bound (ms; ms/GB)',
        '     - bare reads (ms; ms/GB)',
        '     - numa_maps read alone (ms; ms/GB)',
        '     - read by the bound',
    ]
    for kind, rows in sweep.items():
        for size, cost in rows:
            gb = cost['memory_mb'] / 1024 or size / 1024

            def cell(key, gb=gb, cost=cost):
                ms = _ms(cost[key])
                return f'{ms:.1f}; {ms / gb:.1f}'

            reads = cost['reads']
            lines += [
                f'   * - {size} MiB ({kind})',
                f'     - {statistics.mean(cost["huge"]):.0%}',
                f'     - {cell("unbounded")}',
                f'     - {cell("bound")}',
                f'     - {cell("floor")}',
                f'     - {cell("numa_maps")}',
                f'     - {sum(reads)} of {len(reads)} periods',
            ]
    lines += [
        '',
        'The numa_maps read natively on this machine\'s own kernel (no '
        'lab host; tests/bench/numamaps_native.py): CPU ms of one read of '
        'the numa_maps of a process with an anonymous mapping of each '
        'size, every page touched (median of the reads), and per GB less '
        f'the read without it ({native_base_ms:.2f} ms). The cost per GB '
        'the extrapolation uses is the slope of a line through every size: '
        'the fixed part of a read is its intercept.',
        '',
        '.. list-table::',
        '   :header-rows: 1',
        '',
        '   * - pages',
        '     - ' + '\n     - '.join(
            f'{size} MiB (ms; ms/GB)'
            for size, *_ in next(iter(native.values()))),
        '     - slope, ms/GB',
    ]
    for kind, rows in native.items():
        lines.append(f'   * - {kind}')
        lines += [f'     - {ms:.2f}; {ms_gb:.3f}'
                  for _, ms, ms_gb, _ in rows]
        lines.append(f'     - {numamaps_native.per_gb(rows):.3f}')
    lines += [
        '',
        f'Extrapolated, not measured: numa_maps reads per period on a host '
        f'of {HOST_GB} GB of guest memory ({HOST_GB // HOST_GUEST_GB} '
        f'guests of {HOST_GUEST_GB} GB) at the default period of '
        f'{observation.DEFAULT_PERIOD:.0f} s, from the native cost per GB, '
        f'assumed linear in resident memory; with the bound, its rule run '
        f'over ten of its staleness bounds. Target: <= '
        f'{CORE_SHARE_TARGET:.0%} of one core '
        f'({observation.budget_for(observation.DEFAULT_PERIOD) * 1e3:.0f} '
        f'ms per period).',
        '',
        '.. list-table::',
        '   :header-rows: 1',
        '',
        '   * - pages',
        '     - ms/GB (native)',
        '     - off: ms per period (core share)',
        '     - bound: mean ms per period (core share)',
        '     - bound: largest period (ms)',
        '     - bound: each guest read at least every',
    ]
    for kind, rows in native.items():
        per_gb = numamaps_native.per_gb(rows)
        off, mean, peak, max_age = extrapolate(per_gb)
        period_ms = observation.DEFAULT_PERIOD * 1000
        lines += [
            f'   * - {kind}',
            f'     - {per_gb:.3f}',
            f'     - {off:.0f} ({off / period_ms:.1%})',
            f'     - {mean:.0f} ({mean / period_ms:.1%})',
            f'     - {peak:.0f}',
            f'     - {max_age} periods '
            f'({max_age * observation.DEFAULT_PERIOD / 60:.0f} min)',
        ]
    return lines


def write_results(moves, periods, args, boot_seconds, accel, extra=()):
    c_rate = moves['pages'] / statistics.median(moves['c'])
    py_rate = moves['pages'] / statistics.median(moves['python'])
    move_ratio = paired_ratio(moves['c'], moves['python'])
    period_ratio = paired_ratio(periods['agent'], periods['floor'])
    agent_ms = statistics.median(periods['agent']) * 1000
    floor_ms = statistics.median(periods['floor']) * 1000
    guests = periods['instances']
    memory_gb = periods['memory_mb'] / 1024
    lines = [
        '.. This file is written by ``tox -e bench labhost``; do not edit.',
        '',
        f'Run of {datetime.date.today().isoformat()} at commit '
        f'``{_commit()}``: a lab host of {BENCH_TOPOLOGY.nodes} nodes x '
        f'{BENCH_TOPOLOGY.cpus_per_node} CPUs x '
        f'{BENCH_TOPOLOGY.memory_mb_per_node} MiB under QEMU '
        f'({accel.upper()}), booted in {boot_seconds:.0f} s.',
        '',
        '.. list-table::',
        '   :header-rows: 1',
        '',
        '   * - benchmark',
        '     - ours',
        '     - baseline',
        '     - ratio',
        '     - target',
        f'   * - cross-node page moves, {moves["pages"]} pages of one '
        f'process, node 1 <-> node 0, {args.batch} pages per call, '
        f'{args.rounds} rounds of {moves["passes"]} passes',
        f'     - Python page mover: {py_rate / 1e3:.0f} k pages/s',
        f'     - C move_pages loop: {c_rate / 1e3:.0f} k pages/s',
        f'     - {move_ratio * 100:.1f} % of C',
        f'     - >= {PAGEMOVE_TARGET * 100:.0f} %',
        f'   * - agent period with {guests} running QEMU domains '
        f'({periods["memory_mb"]} MiB of guest memory), '
        f'{args.rounds} rounds',
        f'     - observe, decide, act, report: {agent_ms:.1f} ms CPU '
        f'({agent_ms / max(guests, 1):.2f} ms per guest, '
        f'{agent_ms / max(memory_gb, 1e-9):.1f} ms per GB)',
        f'     - the bare reads: {floor_ms:.1f} ms CPU',
        f'     - {period_ratio:.2f}x the floor',
        f'     - <= {PERIOD_TARGET}x',
        '',
        'Times are CPU times under emulation: only the ratios carry over '
        'to a real host.',
        *extra,
        '']
    with open(RESULTS, 'w') as f:
        f.write('\n'.join(lines))
    return move_ratio, period_ratio, lines


def main(argv=None):
    parser = argparse.ArgumentParser(prog='bench labhost')
    parser.add_argument('--size-mb', type=int, default=64)
    parser.add_argument('--batch', type=int, default=4096)
    parser.add_argument('--rounds', type=int, default=9)
    parser.add_argument('--passes', type=int, default=2)
    parser.add_argument('--domains', type=int, default=8)
    parser.add_argument('--domain-mb', type=int, default=128)
    parser.add_argument('--sizes-mb', type=int, nargs='+',
                        default=list(GUEST_SIZES_MB))
    parser.add_argument('--size-rounds', type=int,
                        default=observation.MAX_AGE)
    args, _ = parser.parse_known_args(argv)
    native, native_base_ms = numamaps_native.measure()
    print('\n'.join(numamaps_native.report(native, native_base_ms)),
          flush=True)
    try:
        lab = machine.LabHost(BENCH_TOPOLOGY).boot()
    except (initramfs.LabUnavailable, machine.LabError) as exc:
        print(f'lab host benchmarks not run: no lab host here: {exc}')
        return 1 if machine.required() else 0
    try:
        moves = lab.call('tests.bench.labhost_guest:pagemoves', args.size_mb,
                         args.batch, args.rounds, args.passes, timeout=1800)
        lab.start_libvirtd()
        start_domains(lab, args.domains, args.domain_mb)
        periods = lab.call('tests.bench.labhost_guest:agent_periods',
                           args.rounds, timeout=1800)
        sweep = size_sweep(lab, args.sizes_mb, args.size_rounds)
        move_ratio, period_ratio, lines = write_results(
            moves, periods, args, lab.boot_seconds, lab.accel,
            sweep_lines(sweep, native, native_base_ms))
    finally:
        lab.shutdown()
    print('\n'.join(line for line in lines if not line.startswith('..')))
    print(f'page moves: {move_ratio * 100:.1f} % of C (target >= '
          f'{PAGEMOVE_TARGET * 100:.0f} %); agent period: '
          f'{period_ratio:.2f}x its bare reads (target <= {PERIOD_TARGET}x)')
    met = move_ratio >= PAGEMOVE_TARGET and period_ratio <= PERIOD_TARGET
    return 0 if met else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
