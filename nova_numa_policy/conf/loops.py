"""Every option of the ``[numa_policy_loops]`` group, in one place.

``OPTS`` hold for every loop: which loops run, the dry run, the pin
count, the budgets and the do-no-harm guard. Each loop's own thresholds
follow (``CARREFOUR_OPTS`` and the others); each loop module names its
list as its ``OPTS``, and :mod:`nova_numa_policy.loops.options` lists
and registers them in this same group, in the order the loops run;
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
LOOP_NAMES = ('carrefour', 'brm', 'vnuioa', 'auto', 'iopath', 'tiering')
# The loops run unless enabled_loops says otherwise: all but iopath,
# which changes the routing of the host's own interrupts and so runs
# only where the operator asks for it. tiering acts on tiered guests
# (hw:numa_memory_tiers) only.
DEFAULT_LOOPS = ('carrefour', 'brm', 'vnuioa', 'auto', 'tiering')

_help = base.help_text

OPTS = [
    cfg.ListOpt(
        'enabled_loops', default=list(DEFAULT_LOOPS),
        item_type=cfg.types.String(choices=LOOP_NAMES),
        help=_help('Loops the agent runs each period. A loop whose backend '
                   'lacks a capability it needs is not started. iopath '
                   '(interrupt vectors and I/O threads on the node of the '
                   'guests that use them) runs only when listed; tiering '
                   'moves the pages of guests with '
                   'hw:numa_memory_tiers=tiered between memory tiers.',
                   'A list of carrefour, brm, vnuioa, auto, iopath, '
                   'tiering; empty runs none.',
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


# carrefour's thresholds (nova_numa_policy.loops.carrefour).
CARREFOUR_OPTS = [
    cfg.FloatOpt(
        'carrefour_mc_imbalance', default=0.35, min=0.0,
        help=_help('Relative std deviation of a guest\'s accesses over its '
                   'nodes above which Carrefour spreads its hot pages '
                   '(memory controllers imbalanced).',
                   'A fraction, 0.35 is the published Carrefour value.',
                   '``carrefour_min_local_ratio``.')),
    cfg.FloatOpt(
        'carrefour_min_local_ratio', default=0.80, min=0.0, max=1.0,
        help=_help('Share of local accesses below which Carrefour moves '
                   'pages to the vCPUs\' node (interconnect bottleneck).',
                   'A fraction between 0 and 1.',
                   '``carrefour_mc_imbalance``.')),
    cfg.FloatOpt(
        'carrefour_min_accesses_per_us', default=50.0, min=0.0,
        help=_help('Memory accesses per microsecond below which a guest is '
                   'not memory-bound and Carrefour leaves it alone.',
                   'A non-negative rate.')),
    cfg.IntOpt(
        'carrefour_min_samples', default=256, min=1,
        help=_help('Sampled accesses (the kernel\'s NUMA hinting faults, in '
                   'pages) below which Carrefour leaves a guest alone: too '
                   'few samples say nothing of where its accesses go. '
                   'Used instead of ``carrefour_min_accesses_per_us`` on '
                   'hosts whose signal is sampled.',
                   'A positive count.',
                   '``carrefour_min_accesses_per_us``.')),
]

# brm's thresholds (nova_numa_policy.loops.brm).
BRM_OPTS = [
    cfg.FloatOpt(
        'brm_ewma_old_weight', default=7.0 / 8.0, min=0.0, max=1.0,
        help=_help('Weight of the old value in BRM\'s per-node penalty '
                   'EWMA (seed 001: 7/8).', 'A fraction between 0 and 1.')),
    cfg.IntOpt(
        'brm_probability_step', default=25, min=1, max=100,
        help=_help('Points BRM\'s migration probability (0-100) moves per '
                   'period.', 'An integer between 1 and 100.',
                   '``[numa_policy_agent] period``.')),
    cfg.IntOpt(
        'brm_max_pin_count', default=0, min=0,
        help=_help('vScope pin count for BRM\'s vCPU moves (its probability '
                   'already damps).', 'A non-negative integer.',
                   '``hysteresis_pin_count``.')),
]

# vnuioa's thresholds (nova_numa_policy.loops.vnuioa).
VNUIOA_OPTS = [
    cfg.FloatOpt(
        'vnuioa_io_threshold', default=500.0, min=0.0,
        help=_help('Requests per second from which vNUIOA treats a guest as '
                   'I/O-intensive and places it near the NIC. The agent '
                   'estimates a guest\'s requests from its interface '
                   'counters: the larger of packets and full 1500-byte '
                   'frames per second.',
                   'A non-negative rate; seed 002 uses 500.')),
    cfg.FloatOpt(
        'vnuioa_node_load', default=0.80, min=0.0, max=1.0,
        help=_help('Load a node may reach after vNUIOA places a guest on it.',
                   'A fraction between 0 and 1.')),
    cfg.FloatOpt(
        'vnuioa_remote_factor', default=2.0, min=1.0,
        help=_help('vNUIOA moves memory only when a remote node sees more '
                   'than this many times the local accesses.',
                   'A factor of at least 1.')),
]

# auto's thresholds (nova_numa_policy.loops.auto).
AUTO_OPTS = [
    cfg.FloatOpt(
        'auto_low', default=0.85, min=0.0,
        help=_help('Access imbalance below which ``auto`` picks first-touch.',
                   'A fraction, below ``auto_high``.', '``auto_high``.')),
    cfg.FloatOpt(
        'auto_high', default=1.30, min=0.0,
        help=_help('Access imbalance above which ``auto`` picks interleave + '
                   'Carrefour (between the bounds: first-touch + Carrefour).',
                   'A fraction, above ``auto_low``.', '``auto_low``.')),
]

# iopath's own option; its I/O threshold is vNUIOA's
# (vnuioa_io_threshold): one rule says which guests are network-bound.
IOPATH_OPTS = [
    cfg.BoolOpt(
        'iopath_pin_threads', default=True,
        help=_help('Besides steering a NIC\'s interrupt vectors, pin the '
                   'emulator threads (and, where the host can, the vhost '
                   'workers) of each I/O-intensive guest to the node its '
                   'vCPUs run on.',
                   'true or false.', '``vnuioa_io_threshold``.')),
]


# tiering's own options (nova_numa_policy.loops.tiering): the free
# memory marks of a top-tier node between which it moves nothing.
TIERING_OPTS = [
    cfg.FloatOpt(
        'tiering_low_free', default=0.05, min=0.0, max=1.0,
        help=_help('Share of a top-tier node\'s memory under which it is '
                   'short: the cold pages (not written over the last '
                   'period) of tiered guests (hw:numa_memory_tiers) on it '
                   'move to a lower tier until it has tiering_high_free '
                   'free, never below a guest\'s hw:numa_top_tier_percent. '
                   'Keep it above the kernel\'s reclaim watermarks, so '
                   'that the agent acts before the kernel would.',
                   'A fraction between 0 and 1, under tiering_high_free.',
                   '``tiering_high_free``.')),
    cfg.FloatOpt(
        'tiering_high_free', default=0.10, min=0.0, max=1.0,
        help=_help('Share of a top-tier node\'s memory a move onto it '
                   'leaves free: pages a tiered guest writes come back up '
                   'from a lower tier only onto a node with more free, and '
                   'cold pages go down until a short node has this much.',
                   'A fraction between 0 and 1, above tiering_low_free.',
                   '``tiering_low_free``.')),
]


register_opts, list_opts = base.group_functions(GROUP, OPTS)
