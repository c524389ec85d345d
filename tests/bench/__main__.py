"""Run the benchmarks: ``python -m tests.bench [NAME ...] [OPTION ...]``.

Each benchmark module exposes ``main(argv)`` and returns 0 when its
targets are met. With no names, all of them run.
"""

import importlib
import sys

BENCHMARKS = ('scheduler', 'agent', 'signals', 'pagemove', 'labhost', 'loops',
              'cluster')


def main(argv):
    # Leading words name benchmarks; everything from the first option on
    # goes to each of them (e.g. "scheduler --hosts 1000 10000").
    first_option = next((i for i, a in enumerate(argv) if a.startswith('-')),
                        len(argv))
    names = list(argv[:first_option]) or list(BENCHMARKS)
    options = list(argv[first_option:])
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        print(f"unknown benchmark(s) {', '.join(unknown)}; choose from "
              f"{', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    failed = []
    for name in names:
        print(f'=== benchmark: {name}', flush=True)
        module = importlib.import_module(f'tests.bench.{name}')
        if module.main(options) != 0:
            failed.append(name)
    if failed:
        print(f"targets missed: {', '.join(failed)}")
        return 1
    print('all benchmark targets met')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
