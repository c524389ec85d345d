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

from nova_numa_policy import policy
from tests.labhost import domains
from tests.labhost import initramfs
from tests.labhost import machine
from tests.labhost import topology as topology_mod

PAGEMOVE_TARGET = 0.90
PERIOD_TARGET = 1.5
HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(os.path.dirname(os.path.dirname(HERE)), 'doc',
                       'source', 'labhost-results.inc')

# Room for eight guests beside libvirtd and the agent.
BENCH_TOPOLOGY = topology_mod.LabTopology(
    name='bench-two-nodes', nodes=2, cpus_per_node=2,
    memory_mb_per_node=2048, distances=((10, 21), (21, 10)), nic_node=1)
POLICY_MIX = ('interleave', 'home', 'first-touch', 'auto')


def start_domains(lab, count, memory_mb):
    caps = lab.call('tests.labhost.inside:capabilities')
    for number in range(count):
        value = POLICY_MIX[number % len(POLICY_MIX)]
        xml, _ = domains.define_xml(
            f'bench-{number}', 1, memory_mb, {policy.POLICY_KEY: value},
            caps, nics=(domains.physnet_nic('physnet1', 1),))
        lab.call('tests.labhost.inside:start_domain', xml)


def paired_ratio(numerators, denominators):
    return statistics.median(n / d for n, d in zip(numerators, denominators))


def _commit():
    try:
        return subprocess.run(['git', 'rev-parse', '--short', 'HEAD'],
                              capture_output=True, text=True, cwd=HERE,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'


def write_results(moves, periods, args, boot_seconds, accel):
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
    args, _ = parser.parse_known_args(argv)
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
        move_ratio, period_ratio, lines = write_results(
            moves, periods, args, lab.boot_seconds, lab.accel)
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
