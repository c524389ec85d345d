"""The ``oslo.config.opts`` entry point for oslo-config-generator."""

from nova_numa_policy.conf import policy
from nova_numa_policy.conf import reports

GROUP_MODULES = (policy, reports)


def list_opts():
    """Return (group, options) pairs, every group of the project once."""
    pairs = []
    for module in GROUP_MODULES:
        pairs.extend(module.list_opts().items())
    return pairs
