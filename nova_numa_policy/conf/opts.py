"""The ``oslo.config.opts`` entry point of the project's own groups.

The agent also reads two groups of library options; the agent lists them
through entry points of its own (``agent.service.opts``), as configuration
imports nothing but oslo.config.
"""

from nova_numa_policy.conf import agent
from nova_numa_policy.conf import collector
from nova_numa_policy.conf import loops
from nova_numa_policy.conf import policy
from nova_numa_policy.conf import reports
from nova_numa_policy.conf import rest
from nova_numa_policy.conf import scheduler

GROUP_MODULES = (policy, reports, scheduler, collector, rest, agent, loops)


def list_opts():
    """Return (group, options) pairs, every group of the project once."""
    pairs = []
    for module in GROUP_MODULES:
        pairs.extend(module.list_opts().items())
    return pairs
