"""Page mover throughput: the agent's Python path against bare C.

Both move the same pages of the same child process (64 MiB of touched
anonymous memory) with move_pages(2), MPOL_MF_MOVE_ALL, in windows of the
same size: the C baseline is a loop around the syscall compiled with gcc
into a temporary directory; the Python path is the planner and the
executor (:class:`agent.backend.pagemoves.PageMover`) with its privileged calls
in-process (privsep's client mode off: the daemon's socket round trip is
measured by neither, its checks of the caller's arguments by the Python
path, the child being a guest to them through a pidfile). Reading
numa_maps is outside both timings.

On a one-node host the move is node 0 to node 0: the kernel still looks up
and checks every page and reports its node, but copies nothing, so this
measures the mover's overhead at its most visible. Across two nodes (the
lab host, tests/bench/labhost.py) each pass moves every page to the other
node and back. Target: Python >= 90 % of C's pages per second. Needs root
(or CAP_SYS_NICE) and gcc.
"""

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from oslo_config import cfg

from agent.backend import pagemoves
from agent.backend import pageplan
from agent import privsep
from agent.privsep import pagemover
from tests.unit.agent import memchild

TARGET = 0.90

_C_SOURCE = r'''
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

int main(int argc, char **argv) {
    long pid = atol(argv[1]);
    unsigned long start = strtoul(argv[2], NULL, 10);
    long pages = atol(argv[3]), batch = atol(argv[4]);
    int there = atoi(argv[5]), back = atoi(argv[6]);
    long passes = atol(argv[7]);
    void **addrs = malloc(batch * sizeof(void *));
    int *nodes = malloc(batch * sizeof(int));
    int *status = malloc(batch * sizeof(int));
    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    for (long pass = 0; pass < passes; pass++)
    for (long first = 0; first < pages; first += batch) {
        int node = pass % 2 ? back : there;
        long n = pages - first < batch ? pages - first : batch;
        for (long i = 0; i < n; i++) {
            addrs[i] = (void *)(start + (first + i) * 4096UL);
            nodes[i] = node;
        }
        if (syscall(SYS_move_pages, pid, n, addrs, nodes, status, 4) < 0) {
            perror("move_pages");
            return 1;
        }
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    printf("%.9f\n",
           (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    return 0;
}
'''


def build_baseline(directory):
    source = os.path.join(directory, 'move_pages_loop.c')
    binary = os.path.join(directory, 'move_pages_loop')
    with open(source, 'w') as f:
        f.write(_C_SOURCE)
    subprocess.run(['gcc', '-O2', '-o', binary, source], check=True)
    return binary


def c_seconds(binary, child, batch, route, passes):
    """Seconds per pass of the C loop; pass i moves to ``route[i % 2]``."""
    out = subprocess.run(
        [binary, str(child.pid), str(child.address), str(child.pages),
         str(batch), str(route[0]), str(route[1]), str(passes)],
        check=True, capture_output=True, text=True)
    return float(out.stdout) / passes


def _child_mapping(mover, child):
    return [v for v in mover.mappings(child.pid) if v.start == child.address]


def python_seconds(mover, child, route, passes):
    """Seconds per pass of the page mover, along the same route.

    The mappings are read before each pass (outside the timing, as in the
    agent, where the observation reads them): which node holds the pages
    changes from pass to pass.
    """
    elapsed = 0.0
    for number in range(passes):
        vmas = _child_mapping(mover, child)
        source, target = route[(number + 1) % 2], route[number % 2]
        start = time.thread_time()
        result = mover.move_mappings(child.pid, vmas, source, target,
                                     10 ** 9)
        elapsed += time.thread_time() - start
        if result.moved < child.pages or result.failed:
            raise RuntimeError(f'the Python path moved {result}')
    return elapsed / passes


def _pin_to_one_cpu():
    previous = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {max(previous)})
    return previous


def paired_ratio(c_times, py_times):
    """Median over rounds of C's time over Python's, round by round.

    Each round's pair ran back to back, under the same load: the median
    of their ratios is steadier than the ratio of two independent bests.
    """
    return statistics.median(c / py for c, py in zip(c_times, py_times))


def measure(size_mb, batch, rounds, passes, route=(0, 0)):
    """(pages, C times, Python times): ``route`` is (there, back)."""
    privsep.pages.set_client_mode(False)
    tmp = tempfile.mkdtemp(prefix='numa-pagemove-bench-')
    # In-process as root, on purpose (the daemon refuses root otherwise).
    cfg.CONF.set_override('user', 'root', group=privsep.SECTION)
    guests = memchild.GuestPidDir()
    guests.setUp()
    child = memchild.MemoryChild(size_mb << 20, guests=guests)
    child.setUp()
    try:
        binary = build_baseline(tmp)
        mover = pagemoves.PageMover(batch_pages=batch)
        if route[0] != route[1]:
            # Every round starts and (after an even number of passes)
            # ends with all the pages on route[1].
            passes += passes % 2
            for node in set(range(max(route) + 1)) - {route[1]}:
                mover.move_mappings(child.pid, _child_mapping(mover, child),
                                    node, route[1], 10 ** 9)
        c_times, py_times = [], []
        # Interleaved rounds in CPU time of the moving thread (user +
        # kernel): other load on the host preempts both but is not
        # counted, and the syscall's own work is. Both run on the same
        # CPU (the C loop inherits this process's affinity), so neither
        # gains from a core with warmer caches.
        previous = _pin_to_one_cpu()
        try:
            for _ in range(rounds):
                # Both start with every page on route[1] (an even number
                # of passes ends there).
                c_times.append(c_seconds(binary, child, batch, route,
                                         passes))
                py_times.append(python_seconds(mover, child, route,
                                               passes))
        finally:
            os.sched_setaffinity(0, previous)
        return child.pages, c_times, py_times, passes
    finally:
        child.cleanUp()
        guests.cleanUp()
        cfg.CONF.clear_override('user', group=privsep.SECTION)
        shutil.rmtree(tmp)
        privsep.pages.set_client_mode(True)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='bench pagemove')
    parser.add_argument('--size-mb', type=int, default=64)
    parser.add_argument('--batch', type=int,
                        default=pageplan.DEFAULT_BATCH_PAGES)
    parser.add_argument('--rounds', type=int, default=15)
    parser.add_argument('--passes', type=int, default=5,
                        help='moves of all the pages per round')
    args = parser.parse_args(argv)
    if platform.machine() not in pagemover.SYS_MOVE_PAGES:
        print(f'move_pages: no syscall number for {platform.machine()}')
        return 1
    if shutil.which('gcc') is None:
        print('gcc is needed to build the C baseline')
        return 1
    pages, c_times, py_times, _ = measure(args.size_mb, args.batch,
                                          args.rounds, args.passes)
    c_s, py_s = statistics.median(c_times), statistics.median(py_times)
    c_rate, py_rate = pages / c_s, pages / py_s
    ratio = paired_ratio(c_times, py_times)
    print(f'page mover: {pages} pages ({args.size_mb} MiB, 4 KiB pages) of '
          f'one child, {args.batch} pages per move_pages call, node 0 -> '
          f'node 0 (one-node host: every page is looked up and reported, '
          f'none copied); CPU time of the moving thread on one CPU, '
          f'medians of {args.rounds} interleaved rounds of {args.passes} '
          f'passes')
    print(f'  C move_pages loop : {c_rate / 1e6:8.2f} M pages/s '
          f'({c_s * 1000:.2f} ms)')
    print(f'  Python page mover : {py_rate / 1e6:8.2f} M pages/s '
          f'({py_s * 1000:.2f} ms)')
    print(f'  ratio (median of per-round ratios) {ratio * 100:.1f} % '
          f'(target >= {TARGET * 100:.0f} %)')
    return 0 if ratio >= TARGET else 1


if __name__ == '__main__':
    sys.exit(main())
