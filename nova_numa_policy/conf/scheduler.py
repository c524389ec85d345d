"""Options of the ``[numa_policy_scheduler]`` group: filters and weighers."""

from oslo_config import cfg

from nova_numa_policy.conf import base

GROUP = cfg.OptGroup(
    'numa_policy_scheduler',
    title='NUMA policy scheduler plugins',
    help='How the nova-scheduler filters and weighers of nova-numa-policy '
         'read agent reports and judge hosts.')

STRICT = 'strict'
PERMISSIVE = 'permissive'

OPTS = [
    cfg.IntOpt(
        'report_ttl',
        default=180,
        min=1,
        help='''
Seconds after which a host's last report is stale, by its generation time.

A host whose report is stale is treated exactly like a host without an
agent. Scheduler and compute clocks are assumed to be synchronised (NTP),
as nova's own service heartbeats assume.

Possible values:

* A positive number of seconds; three agent periods is a good value.

Related options:

* ``no_report_mode`` decides what a host without a fresh report gets.
'''),
    cfg.StrOpt(
        'no_report_mode',
        default=STRICT,
        choices=[
            (STRICT, 'A host without a fresh report fails a flavor that '
                     'explicitly asks for a policy or for required NIC '
                     'locality.'),
            (PERMISSIVE, 'Such a host passes; the flavor may land where '
                         'the policy cannot be enforced.'),
        ],
        help='''
What a host without a fresh report gets from a filter whose question only
a report can answer.

Only flavors that name ``hw:numa_policy`` or
``hw:numa_nic_locality=required`` are affected; plain flavors always pass
hosts without a report, and weighers always weigh such hosts neutrally.
``strict`` (the default) guarantees that an instance that asked for a
policy gets it, at the price of "No valid host" while agents are down.

Possible values:

* ``strict`` or ``permissive``.

Related options:

* ``report_ttl`` decides when a report stops counting.
'''),
    cfg.FloatOpt(
        'node_load_threshold',
        default=0.8,
        min=0.0,
        max=1.0,
        help='''
Busy fraction of a NUMA node's CPUs above which the node counts as busy.

A node is busy when the load its agent *measured* on its CPUs is above
this fraction. ``NumaNodeLoadFilter`` fails a host where every node that
holds the instance is busy, for flavors that name a ``hw:numa_*`` key
(and plain ones with ``filter_plain_flavors``); when no host has a quiet
node, no host is refused for its load and the reason is logged. The new
instance's own vCPUs are not counted in that judgement (nova's CPU
allocation ratio decides how many a host takes); they count, at
``expected_vcpu_load`` each, in the headroom the weighers prefer. The
CPUs are those guests without dedicated CPUs may use, as nova's
``[compute] cpu_shared_set`` and ``cpu_dedicated_set`` on the host give
them (all of the node's where its agent does not say); pinned guests are
NUMATopologyFilter's. The default, 80 %, is where the vNUIOA
measurements saw performance start to drop.

Possible values:

* A fraction between 0.0 and 1.0.

Related options:

* Used by ``NumaNodeLoadFilter`` and both weighers.
* ``expected_vcpu_load``, ``filter_plain_flavors``.
'''),
    cfg.FloatOpt(
        'expected_vcpu_load',
        default=0.25,
        min=0.0,
        max=1.0,
        help='''
Busy share expected of each vCPU of the instance being scheduled.

The weighers prefer the node with the most headroom left once the new
instance runs there: the threshold minus the node's measured load and
the instance's vCPUs times this share, over the node's CPUs. It never
makes a filter refuse a host. The default, 0.25, is one over nova's
``initial_cpu_allocation_ratio`` (4.0): the mean share at which a host
filled to that ratio is exactly busy. With another ratio, use one over
it; where guests are known to be busier (or idler), say so here.

Possible values:

* A fraction between 0.0 and 1.0.

Related options:

* ``node_load_threshold``.
'''),
    cfg.BoolOpt(
        'filter_plain_flavors',
        default=False,
        help='''
Whether ``NumaNodeLoadFilter`` also judges flavors that name none of the
``hw:numa_*`` keys.

Off by default, so enabling the filter never refuses a plain flavor a
host nova would give it. On, plain flavors avoid busy nodes like policy
flavors do (never to "No valid host": when no host is quiet, load is set
aside).

Possible values:

* True or False.

Related options:

* ``weigh_plain_flavors`` does the same for the load weigher.
'''),
    cfg.FloatOpt(
        'io_intensive_rate',
        default=500.0,
        min=0.0,
        help='''
Network requests per second above which a reported instance counts as
I/O intensive (vNUIOA's threshold). Agents estimate requests from their
guests' interface counters: the larger of packets and full 1500-byte
frames per second.

The NIC-locality weigher divides a NIC-local node's headroom by one plus
the I/O-intensive instances already on it, which share that NIC.

Possible values:

* A non-negative rate in requests (or packets) per second.
'''),
    cfg.FloatOpt(
        'nic_locality_weight_multiplier',
        default=1.0,
        help='''
Multiplier of ``NumaNicLocalityWeigher``.

Only flavors with ``hw:numa_nic_locality`` ``required`` or ``preferred``,
or ``hw:numa_io_intensity=high``, are weighed; all other requests get the
same weight on every host, so this weigher never changes their placement.
Can be overridden per aggregate with metadata of the same name.

Possible values:

* A positive number prefers NIC-local headroom; 0.0 disables the weigher.
'''),
    cfg.FloatOpt(
        'node_load_weight_multiplier',
        default=1.0,
        help='''
Multiplier of ``NumaNodeLoadWeigher``.

Can be overridden per aggregate with metadata of the same name.

Possible values:

* A positive number prefers the host whose best node has the most
  headroom; 0.0 disables the weigher.

Related options:

* ``weigh_plain_flavors`` decides whether plain flavors are weighed.
'''),
    cfg.BoolOpt(
        'weigh_plain_flavors',
        default=False,
        help='''
Whether ``NumaNodeLoadWeigher`` also weighs flavors that name none of the
``hw:numa_*`` keys.

Off by default, so enabling the weigher never moves a plain flavor away
from where nova's own weighers put it.

Possible values:

* True or False.
'''),
    cfg.IntOpt(
        'max_hosts',
        default=20000,
        min=1,
        help='''
Most compute nodes whose report the scheduler keeps in memory.

A report from a new compute node when the cache is full evicts the node
whose report is the oldest received.

Possible values:

* A positive number larger than the number of compute nodes.
'''),
    cfg.StrOpt(
        'listener_pool',
        default='numa-policy-scheduler',
        help='''
Prefix of the notification pool (RabbitMQ queue) of each scheduler worker.

Every worker listens with its own pool, ``<prefix>.<host>.<pid>``, so that
every worker sees every report. Set a RabbitMQ policy with ``expires`` on
``^<prefix>\\.`` so queues of stopped workers are removed.

Possible values:

* A string that is a valid queue name prefix.

Related options:

* ``[numa_policy_reports] topic``.
'''),
]


register_opts, list_opts = base.group_functions(GROUP, OPTS)
