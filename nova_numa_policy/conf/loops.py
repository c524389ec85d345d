"""Options of the ``[numa_policy_loops]`` group that hold for every loop.

Which loops run, the dry run, the pin count, the budgets and the
do-no-harm guard. Each loop declares its own thresholds in its module
(``OPTS`` of :mod:`nova_numa_policy.loops.carrefour` and the others),
listed and registered in this same group through
:mod:`nova_numa_policy.loops.options`;
:func:`nova_numa_policy.loops.settings.build_configs` turns the group
into the loops' ``Config`` dataclasses, the runner's ``Budget`` and the
do-no-harm guard's ``Config``.
"""

from oslo_config import cfg

from nova_numa_policy.conf import base

GROUP = cfg.OptGroup(
    'numa_policy_loops',
    title='NUMA policy loops',
    help='Which rebalancing loops the agent runs, their thresholds and the '
         'per-period budgets that bound what they may change.')

# The loops the nova_numa_policy.loops entry points name, in the order
# they run (configuration imports nothing of ours; a test holds the two
# sets equal).
LOOP_NAMES = ('carrefour', 'brm', 'vnuioa', 'auto', 'iopath')
# The loops run unless enabled_loops says otherwise: all but iopath,
# which changes the routing of the host's own interrupts and so runs
# only where the operator asks for it.
DEFAULT_LOOPS = ('carrefour', 'brm', 'vnuioa', 'auto')

_help = base.help_text

OPTS = [
    cfg.ListOpt(
        'enabled_loops', default=list(DEFAULT_LOOPS),
        item_type=cfg.types.String(choices=LOOP_NAMES),
        help=_help('Loops the agent runs each period. A loop whose backend '
                   'lacks a capability it needs is not started. iopath '
                   '(interrupt vectors and I/O threads on the node of the '
                   'guests that use them) runs only when listed.',
                   'A list of carrefour, brm, vnuioa, auto, iopath; empty '
                   'runs none.',
                   '``dry_run`` decides without acting.')),
    cfg.BoolOpt(
        'dry_run', default=False,
        help=_help('Decide and log every action with its reason, apply none: '
                   'the loops\' and the policy\'s enforcement alike, as '
                   '``[numa_policy_agent] dry_run`` does.',
                   'true or false.')),
    cfg.IntOpt(
        'hysteresis_pin_count', default=2, min=0,
        help=_help('vScope pin count of vNUIOA and ``auto``: a new choice '
                   'must win this many more periods in a row.',
                   'A non-negative integer.', '``brm_max_pin_count``.')),
    cfg.IntOpt(
        'pages_per_second', default=30000, min=0,
        help=_help('Pages (4 KiB) all loops together may move per second.',
                   'A non-negative integer; 30000 is about 117 MB/s.')),
    cfg.IntOpt(
        'vcpu_moves_per_period', default=16, min=0,
        help=_help('vCPU re-pins all loops together may make per period.',
                   'A non-negative integer.')),
    cfg.BoolOpt(
        'do_no_harm_guard', default=True,
        help=_help('Refuse actions that add load to the nodes of a guest '
                   'whose progress fell below its undisturbed level.',
                   'true or false.', '``do_no_harm_tolerance``.')),
    cfg.FloatOpt(
        'do_no_harm_tolerance', default=0.01, min=0.0, max=1.0,
        help=_help('Slowdown of a guest beyond which the guard protects it.',
                   'A fraction between 0 and 1.', '``do_no_harm_guard``.')),
]


register_opts, list_opts = base.group_functions(GROUP, OPTS)
