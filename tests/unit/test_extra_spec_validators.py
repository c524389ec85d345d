"""nova's own validator sees our keys once the package is installed.

No configuration is involved: nova loads validators from the
``nova.api.extra_spec_validators`` entry point of every installed package.
"""

from nova.api.validation.extra_specs import validators
from nova import exception as nova_exc

from nova_numa_policy.contracts import exception
from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import tiers
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
                             policy.IO_INTENSITY_VALUES),
                            (tiers.MEMORY_TIERS_KEY,
                             tiers.TIER_MODE_VALUES),
                            (tiers.TOP_TIER_PERCENT_KEY,
                             ('1', '50', '100'))):
            for value in values:
                validators.validate(key, value)

    def test_bogus_policy_is_rejected_naming_the_allowed_values(self):
        exc = self.assertRaises(nova_exc.ValidationError,
                                validators.validate,
                                policy.POLICY_KEY, 'bogus')
        for value in policy.POLICY_VALUES:
            self.assertIn(value, str(exc))

    def test_bogus_companions_are_rejected(self):
        for key in (policy.NIC_LOCALITY_KEY, policy.IO_INTENSITY_KEY,
                    tiers.MEMORY_TIERS_KEY, tiers.TOP_TIER_PERCENT_KEY):
            self.assertRaises(nova_exc.ValidationError,
                              validators.validate, key, 'bogus')

    def test_bogus_tier_mode_is_rejected_naming_the_allowed_values(self):
        exc = self.assertRaises(nova_exc.ValidationError,
                                validators.validate,
                                tiers.MEMORY_TIERS_KEY, 'lower')
        self.assertIn('any, top, tiered', str(exc))

    def test_top_tier_percent_out_of_range_is_rejected(self):
        for value, words in (('0', "min value of '1'"),
                             ('101', "max value of '100'"),
                             ('half', 'not a valid integer')):
            exc = self.assertRaises(nova_exc.ValidationError,
                                    validators.validate,
                                    tiers.TOP_TIER_PERCENT_KEY, value)
            self.assertIn(words, str(exc), value)

    def test_validator_and_resolver_accept_the_same_values(self):
        # One list of values feeds both; a value the API accepts must never
        # be refused later by the resolver, and the reverse.
        for value in policy.POLICY_VALUES:
            validators.validate(policy.POLICY_KEY, value)
            self.assertEqual(value, policy.resolve(
                {policy.POLICY_KEY: value}).value)

    def test_validator_and_resolver_agree_on_the_percent(self):
        # nova-api parses the percent with int(); so does the resolver,
        # so a flavor nova stores is never refused later, nor the reverse.
        for value in ('1', '100', ' 50', '+7', '5_0', '0', '101', '-1',
                      'half', '50.0', '', '1e2'):
            try:
                validators.validate(tiers.TOP_TIER_PERCENT_KEY, value)
                api_accepts = True
            except nova_exc.ValidationError:
                api_accepts = False
            try:
                tiers.resolve_tiers({tiers.MEMORY_TIERS_KEY: 'tiered',
                                     tiers.TOP_TIER_PERCENT_KEY: value})
                resolver_accepts = True
            except exception.InvalidNumaPolicy:
                resolver_accepts = False
            self.assertEqual(api_accepts, resolver_accepts, repr(value))

    def test_validator_and_resolver_accept_the_same_tier_modes(self):
        for mode in tiers.TIER_MODE_VALUES:
            validators.validate(tiers.MEMORY_TIERS_KEY, mode)
            self.assertEqual(mode, policy.resolve(
                {tiers.MEMORY_TIERS_KEY: mode}).memory_tiers.mode.value)

    def test_descriptions_explain_every_tier_mode(self):
        description = validators.VALIDATORS[
            tiers.MEMORY_TIERS_KEY].description
        for mode in tiers.TIER_MODE_VALUES:
            self.assertIn(f'{mode}:', description)
        self.assertIn(str(tiers.DEFAULT_TOP_TIER_PERCENT),
                      validators.VALIDATORS[
                          tiers.TOP_TIER_PERCENT_KEY].description)

    def test_descriptions_explain_every_policy(self):
        description = validators.VALIDATORS[policy.POLICY_KEY].description
        for value in policy.POLICY_VALUES:
            self.assertIn(value, description)
