"""The ``[numa_policy_loops]`` group whole: shared options and each loop's.

Configuration (``nova_numa_policy.conf.loops``) defines them all: the
options every loop shares and each loop's thresholds, which each loop
names as its ``OPTS``. This module puts them together in one group, as the
``nova_numa_policy.loops`` ``oslo.config.opts`` entry point for the
sample generator and as :func:`register_opts` for a process that runs
loops, finding the loops through their own entry points.
"""

from nova_numa_policy.conf import loops as loops_conf
from nova_numa_policy.loops import runner


def loop_opts():
    """Each loop's own options, in the default order the loops run in."""
    known = runner.registry()
    order = [n for n in loops_conf.LOOP_NAMES if n in known]
    order += sorted(set(known) - set(order))
    return [opt for name in order for opt in known[name].OPTS]


def list_opts():
    """The loops' own options, for the sample generator."""
    return [(loops_conf.GROUP, loop_opts())]


def register_opts(conf):
    """Register the whole ``[numa_policy_loops]`` group on ``conf``."""
    loops_conf.register_opts(conf)
    conf.register_opts(loop_opts(), group=loops_conf.GROUP)
