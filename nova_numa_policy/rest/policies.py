"""oslo.policy rules of the REST API: admin only by default.

What the API shows (host load, instance placement, agent actions) is
operator information about the whole cloud, so no rule is scoped to a
project's own resources.
"""

from oslo_config import cfg
from oslo_policy import policy

ADMIN = 'role:admin'
PREFIX = 'numa_policy:'

HOSTS_LIST = PREFIX + 'hosts:list'
HOSTS_SHOW = PREFIX + 'hosts:show'
INSTANCES_LIST = PREFIX + 'instances:list'
INSTANCES_SHOW = PREFIX + 'instances:show'
ACTIONS_LIST = PREFIX + 'actions:list'
EXPLAIN = PREFIX + 'explain'


def _rule(name, description, *paths):
    return policy.DocumentedRuleDefault(
        name=name, check_str=ADMIN, description=description,
        operations=[{'method': 'GET', 'path': path} for path in paths],
        scope_types=['project'])


RULES = (
    _rule(HOSTS_LIST, 'List compute hosts and their latest NUMA report.',
          '/v1/hosts'),
    _rule(HOSTS_SHOW, "Show a host's NUMA nodes, NICs, instances and "
          "report history.", '/v1/hosts/{host}',
          '/v1/hosts/{host}/reports'),
    _rule(INSTANCES_LIST, 'List instances with their requested and '
          'applied NUMA policy.', '/v1/instances'),
    _rule(INSTANCES_SHOW, "Show an instance's NUMA policy and memory per "
          "node.", '/v1/instances/{uuid}'),
    _rule(ACTIONS_LIST, 'List the actions agents took and why.',
          '/v1/actions'),
    _rule(EXPLAIN, 'Explain why each host passes or fails the scheduler '
          'filters, and how it is weighed, for a flavor.', '/v1/explain'),
)


def list_rules():
    """The ``oslo.policy.policies`` entry point."""
    return list(RULES)


def get_enforcer():
    """The ``oslo.policy.enforcer`` entry point (oslopolicy tools)."""
    conf = cfg.ConfigOpts()
    conf([], project='nova-numa-policy')
    return make_enforcer(conf)


def make_enforcer(conf):
    enforcer = policy.Enforcer(conf)
    enforcer.register_defaults(list_rules())
    return enforcer
