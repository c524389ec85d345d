"""``python -m nova_numa_policy.lab.sandbox``: ``numa-policy sandbox``.

nova's threading mode is decided before anything else is imported.
"""

from nova_numa_policy.lab import sandbox

sandbox.threading_mode()

import argparse  # noqa: E402 - after the concurrency mode is decided
import sys  # noqa: E402

from nova_numa_policy.lab.sandbox import cli  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(prog='numa-policy sandbox',
                                     description=cli.DESCRIPTION)
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv), sys.stdout)


if __name__ == '__main__':
    sys.exit(main())
