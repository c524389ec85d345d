"""Nova API validators for ``hw:numa_policy`` and its companion keys.

Loaded by nova-api through the ``nova.api.extra_spec_validators`` entry
point: at microversion 2.86 and later nova rejects every ``hw:`` key it has
no validator for, and rejects a value outside ``enum`` with a 400 that lists
the allowed values, or an integer outside ``min`` and ``max``.

Nova validates one key at a time, so combinations (a policy with
``hw:numa_nodes``, or ``hw:numa_top_tier_percent`` without
``hw:numa_memory_tiers=tiered``, say) cannot be refused here;
:func:`policy.resolve` refuses them wherever the whole flavor is seen.
"""

from nova.api.validation.extra_specs import base

from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import tiers


def _policy_description():
    lines = ['The NUMA memory policy of the instance, applied by the '
             'nova-numa-policy agent. One of:']
    lines += [f'{spec.value}: {spec.meaning}' for spec in policy.POLICY_SPECS]
    return ' '.join(lines)


def _one_of(key, values, description):
    """A validator nova runs on ``key``: a string among ``values``."""
    return base.ExtraSpecValidator(
        name=key, description=description,
        value={'type': str, 'enum': list(values)})


def _percent(key, minimum, maximum, description):
    """A validator nova runs on ``key``: an integer in a closed range."""
    return base.ExtraSpecValidator(
        name=key, description=description,
        value={'type': int, 'min': minimum, 'max': maximum})


VALIDATORS = [
    _one_of(policy.POLICY_KEY, policy.POLICY_VALUES, _policy_description()),
    _one_of(policy.NIC_LOCALITY_KEY, policy.NIC_LOCALITY_VALUES,
            'Whether the instance must (required), should (preferred) or '
            'need not (none) run on a NUMA node local to its network '
            'uplink. Defaults to none.'),
    _one_of(policy.IO_INTENSITY_KEY, policy.IO_INTENSITY_VALUES,
            'Whether the instance is network-bound: high or low, or auto '
            '(the default) to let the agent classify it from its measured '
            'I/O rate.'),
    _one_of(tiers.MEMORY_TIERS_KEY, tiers.TIER_MODE_VALUES,
            "Which memory tiers may hold the instance's memory, on hosts "
            'with lower (slower, CPU-less) memory tiers. One of: any: the '
            'default, any node the NUMA policy allows, and the kernel may '
            'move pages to a lower tier; top: the top tier only, pages the '
            'kernel demotes under memory pressure moved back by the agent; '
            'tiered: the top tier first, and cold pages '
            'may live on a lower tier, keeping at least '
            f'{tiers.TOP_TIER_PERCENT_KEY} (default '
            f'{tiers.DEFAULT_TOP_TIER_PERCENT}) percent of the memory on '
            'the top tier.'),
    _percent(tiers.TOP_TIER_PERCENT_KEY, tiers.MIN_TOP_TIER_PERCENT,
             tiers.MAX_TOP_TIER_PERCENT,
             f'With {tiers.MEMORY_TIERS_KEY}=tiered only: the minimum '
             "share, in percent, of the instance's memory kept on the top "
             'memory tier. Defaults to '
             f'{tiers.DEFAULT_TOP_TIER_PERCENT}. Set without '
             f'{tiers.MEMORY_TIERS_KEY}=tiered, the flavor is refused when '
             'a server is scheduled.'),
]


def register():
    return VALIDATORS
