"""Placement traits saying what this host can enforce.

Only the names are decided here (pure); syncing them to the compute node
resource provider is not implemented yet, so ``from_conf`` returns None
and ``[numa_policy_agent] manage_traits`` is refused at start.
"""

import os_traits

from nova_numa_policy import backend

PREFIX = 'NUMA_POLICY_'


def trait_names(enforceable_policies, capabilities):
    """CUSTOM_ trait names for the policies and live capabilities."""
    names = [PREFIX + value for value in enforceable_policies]
    if backend.CAP_LIVE_NODESET in capabilities:
        names.append(PREFIX + 'LIVE_NODESET')
    return sorted(os_traits.normalize_name(name) for name in names)


def from_conf(conf):
    if conf.numa_policy_agent.manage_traits:
        raise NotImplementedError(
            '[numa_policy_agent] manage_traits is not implemented yet; '
            'set it to False')
    return None
