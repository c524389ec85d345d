"""Run the benchmarks: ``python -m tests.bench [NAME ...]``.

Each benchmark module exposes ``main(argv)`` and returns 0 when its
targets are met. With no names, all of them run.
"""

import importlib
import sys

BENCHMARKS = ('scheduler', 'agent', 'loops', 'cluster')


def main(argv):
    names = [a for a in argv if not a.startswith('-')] or list(BENCHMARKS)
    options = [a for a in argv if a.startswith('-')]
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
