"""What reading numa_maps costs on this machine's own kernel, per GB.

The agent reads every guest's ``/proc/<pid>/numa_maps``; the kernel
builds that text by walking the process's page tables, so its cost grows
with the resident memory and depends on the page size: one entry per
4 KiB page, or one per 2 MiB transparent huge page. The lab host's times
are emulated (TCG); these are native, for the extrapolation to a large
host (doc/source/agent.rst, "Observation cost").

One process maps anonymous memory of each size, asks for 4 KiB pages
(``MADV_NOHUGEPAGE``) or for huge pages (``MADV_HUGEPAGE``), touches
every page, then reads and sums its own numa_maps as the agent does
(:func:`agent.sensors.numamaps.read`,
:func:`agent.sensors.numamaps.memory_mb_from_text`),
timed in CPU time (the walk is the reader's system time). Reading one's
own numa_maps costs what reading a guest's does: the same walk.

Run alone: ``python -m tests.bench.numamaps_native [--sizes-mb ...]``.
"""

import argparse
import mmap
import statistics
import sys
import time

from agent.sensors import numamaps

PAGE = mmap.PAGESIZE
KINDS = (('4 KiB pages', 'MADV_NOHUGEPAGE'), ('THP', 'MADV_HUGEPAGE'))
DEFAULT_SIZES_MB = (256, 512, 1024, 2048, 4096)


def _huge_kb():
    """AnonHugePages of this process, in kB (THP actually obtained)."""
    with open('/proc/self/smaps_rollup') as f:
        for line in f:
            if line.startswith('AnonHugePages:'):
                return int(line.split()[1])
    return 0


def read_once():
    start = time.process_time()
    numamaps.memory_mb_from_text(numamaps.read('/', 'self'))
    return time.process_time() - start


def measure_size(size_mb, advice, reads):
    """(median CPU seconds of one read, share of the memory in THP)."""
    size = size_mb * 1024 * 1024
    area = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        area.madvise(getattr(mmap, advice))
        view = memoryview(area)
        view[::PAGE] = b'\x01' * (size // PAGE)
        view.release()
        huge = min(1.0, _huge_kb() / (size / 1024))
        read_once()
        times = [read_once() for _ in range(reads)]
        return statistics.median(times), huge
    finally:
        area.close()


def empty_read(reads):
    """The read of this process without the big mapping: subtracted."""
    read_once()
    return statistics.median(read_once() for _ in range(reads))


def measure(sizes_mb=DEFAULT_SIZES_MB, reads=9):
    """{kind: [(size MiB, ms per read, ms per GB, THP share)]}, base ms."""
    base = empty_read(reads)
    results = {}
    for kind, advice in KINDS:
        rows = []
        for size_mb in sizes_mb:
            seconds, huge = measure_size(size_mb, advice, reads)
            per_gb = max(seconds - base, 0.0) / (size_mb / 1024)
            rows.append((size_mb, seconds * 1e3, per_gb * 1e3, huge))
        results[kind] = rows
    return results, base * 1e3


def per_gb(rows):
    """ms per GB: the slope of a read's ms against the mapping's GB.

    A line through every size: the fixed part of a read (the process's
    other mappings) is its intercept, so no one size's noise, nor that
    of the read without the mapping, decides the cost per GB.
    """
    slope, _ = statistics.linear_regression(
        [row[0] / 1024 for row in rows], [row[1] for row in rows])
    return max(slope, 0.0)


def report(results, base_ms):
    lines = [f'numa_maps read, this machine\'s kernel (native), '
             f'without the big mapping {base_ms:.3f} ms:']
    for kind, rows in results.items():
        for size_mb, ms, ms_gb, huge in rows:
            lines.append(f'  {kind:12} {size_mb:6d} MiB: {ms:8.3f} ms per '
                         f'read, {ms_gb:7.3f} ms per GB (THP {huge:.0%})')
        lines.append(f'  {kind:12} slope: {per_gb(rows):.3f} ms per GB')
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(prog='bench numamaps_native')
    parser.add_argument('--sizes-mb', type=int, nargs='+',
                        default=list(DEFAULT_SIZES_MB))
    parser.add_argument('--reads', type=int, default=9)
    args = parser.parse_args(argv)
    results, base_ms = measure(args.sizes_mb, args.reads)
    print('\n'.join(report(results, base_ms)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
