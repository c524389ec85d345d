"""Options of the ``[numa_policy]`` group: policy defaults."""

from oslo_config import cfg

from nova_numa_policy.conf import base

# Configuration imports nothing of ours; tests hold these equal to
# nova_numa_policy.contracts.policy.POLICY_VALUES and
# nova_numa_policy.decisions.enforcement.LARGE_GUEST_SHARE.
POLICY_VALUES = ('first-touch', 'interleave', 'home',
                 'first-touch+carrefour', 'interleave+carrefour', 'auto')
LARGE_GUEST_SHARE = 0.25

GROUP = cfg.OptGroup(
    'numa_policy',
    title='NUMA policy',
    help='How instances are given a NUMA memory policy.')

OPTS = [
    cfg.StrOpt(
        'default_policy',
        choices=POLICY_VALUES,
        help='''
The ``hw:numa_policy`` assumed for instances whose flavor names none.

Unset (the default), such instances get nova's own behaviour: the
kernel's default memory placement and no action from the agent. Never
applied to instances whose NUMA topology nova owns (``hw:numa_nodes``,
``hw:cpu_policy=dedicated`` or ``mixed``, ``hw:mem_page_size``).

Possible values:

* Unset, or one of the documented ``hw:numa_policy`` values.

Related options:

* The flavor extra spec ``hw:numa_policy`` always wins.
'''),
    cfg.FloatOpt(
        'large_guest_share',
        default=LARGE_GUEST_SHARE,
        min=0.0,
        max=1.0,
        help='''
The share of a host's CPUs above which a guest is large, read by the
libvirt driver extension at boot.

A large guest with ``hw:numa_policy`` ``first-touch`` (without NIC
locality), ``interleave`` or their ``+carrefour`` variants that half of
the host's NUMA nodes can hold is kept to a half whose nodes no other
guest uses, when there is one: interleave over that half, or
first-touch within it (``restrictive`` memory mode), its vCPUs pinned
there. With at most three such guests on a host, which ones share it
decides what each gets when they spread over every node; kept apart
they meet on no memory controller. Hosts of fewer than four NUMA nodes
have no half of two nodes and are not affected.

Possible values:

* A fraction of the host's CPUs; 1.0 keeps no guest to a half.

Related options:

* ``[numa_policy] default_policy``
'''),
    cfg.StrOpt(
        'uplinks_file',
        default='/var/lib/nova/numa-policy-uplinks.json',
        help='''
Where the agent writes the host's network uplinks and their NUMA nodes,
for the libvirt driver extension to read at boot.

One source of NIC locality for the scheduler (the agent's report), the
rebalancing loops (the agent's topology) and the driver extension (this
file): the agent writes what it discovered each time it reads the
host's topology. Without the file (no agent yet, or unreadable) the
driver extension reads nova's ``[neutron_physnet_<name>] numa_nodes``
and says so in its log.

Possible values:

* A path both nova-compute and the agent can reach; the agent must be
  able to write its directory. Empty: neither writes nor reads it.

Related options:

* ``[numa_policy_agent] physnet_interfaces``, ``bridge_interfaces``
'''),
]


register_opts, list_opts = base.group_functions(GROUP, OPTS)
