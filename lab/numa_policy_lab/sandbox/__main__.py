"""``python -m numa_policy_lab.sandbox``: ``numa-policy-lab sandbox``.

nova's threading mode is decided before anything else is imported.
"""

from numa_policy_lab import sandbox

sandbox.threading_mode()

import argparse  # noqa: E402 - after the concurrency mode is decided
import sys  # noqa: E402

from numa_policy_lab.sandbox import cli  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(prog='numa-policy-lab sandbox',
                                     description=cli.DESCRIPTION)
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv), sys.stdout)


if __name__ == '__main__':
    sys.exit(main())
