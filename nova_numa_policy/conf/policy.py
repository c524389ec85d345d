"""Options of the ``[numa_policy]`` group: policy defaults."""

from oslo_config import cfg

from nova_numa_policy import policy

GROUP = cfg.OptGroup(
    'numa_policy',
    title='NUMA policy',
    help='How instances are given a NUMA memory policy.')

OPTS = [
    cfg.StrOpt(
        'default_policy',
        choices=policy.POLICY_VALUES,
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
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return {GROUP: OPTS}
