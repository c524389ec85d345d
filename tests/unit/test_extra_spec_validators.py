"""nova's own validator sees our keys once the package is installed.

No configuration is involved: nova loads validators from the
``nova.api.extra_spec_validators`` entry point of every installed package.
"""

from nova.api.validation.extra_specs import validators
from nova import exception as nova_exc

from nova_numa_policy.contracts import policy
from tests import base as test_base


class NovaValidatorTest(test_base.TestCase):

    def test_entry_point_registered_our_keys(self):
        for key in policy.OUR_KEYS:
            self.assertIn(key, validators.VALIDATORS)

    def test_every_documented_value_is_accepted(self):
        for key, values in ((policy.POLICY_KEY, policy.POLICY_VALUES),
                            (policy.NIC_LOCALITY_KEY,
                             policy.NIC_LOCALITY_VALUES),
                            (policy.IO_INTENSITY_KEY,
                             policy.IO_INTENSITY_VALUES)):
            for value in values:
                validators.validate(key, value)

    def test_bogus_policy_is_rejected_naming_the_allowed_values(self):
        exc = self.assertRaises(nova_exc.ValidationError,
                                validators.validate,
                                policy.POLICY_KEY, 'bogus')
        for value in policy.POLICY_VALUES:
            self.assertIn(value, str(exc))

    def test_bogus_companions_are_rejected(self):
        for key in (policy.NIC_LOCALITY_KEY, policy.IO_INTENSITY_KEY):
            self.assertRaises(nova_exc.ValidationError,
                              validators.validate, key, 'bogus')

    def test_validator_and_resolver_accept_the_same_values(self):
        # One list of values feeds both; a value the API accepts must never
        # be refused later by the resolver, and the reverse.
        for value in policy.POLICY_VALUES:
            validators.validate(policy.POLICY_KEY, value)
            self.assertEqual(value, policy.resolve(
                {policy.POLICY_KEY: value}).value)

    def test_descriptions_explain_every_policy(self):
        description = validators.VALIDATORS[policy.POLICY_KEY].description
        for value in policy.POLICY_VALUES:
            self.assertIn(value, description)
