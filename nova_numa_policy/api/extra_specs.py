"""Nova API validators for ``hw:numa_policy`` and its companion keys.

Loaded by nova-api through the ``nova.api.extra_spec_validators`` entry
point: at microversion 2.86 and later nova rejects every ``hw:`` key it has
no validator for, and rejects a value outside ``enum`` with a 400 that lists
the allowed values.

Nova validates one key at a time, so combinations (a policy with
``hw:numa_nodes``, say) cannot be refused here; :func:`policy.resolve`
refuses them wherever the whole flavor is seen.
"""

from nova.api.validation.extra_specs import base

from nova_numa_policy.contracts import policy


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
]


def register():
    return VALIDATORS
