"""hw:numa_policy through nova's own in-process API (microversion 2.86)."""

from nova.tests.functional.api import client as api_client
from nova.tests.functional import integrated_helpers

from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import tiers


class ExtraSpecsApiTest(integrated_helpers._IntegratedTestBase):
    """nova-api validates our keys as soon as the package is installed."""

    microversion = '2.86'

    def setUp(self):
        super().setUp()
        self.flavor_id = self._create_flavor()

    def _post(self, specs):
        self.admin_api.post_extra_spec(self.flavor_id, {'extra_specs': specs})

    def _assert_rejected(self, key, value, allowed):
        exc = self.assertRaises(
            api_client.OpenStackApiException, self._post, {key: value})
        self.assertEqual(400, exc.response.status_code)
        body = exc.response.text
        self.assertIn(value, body)
        for allowed_value in allowed:
            self.assertIn(allowed_value, body)
        self.assertEqual({}, self.admin_api.get_extra_specs(self.flavor_id))

    def test_every_documented_policy_is_accepted(self):
        for value in policy.POLICY_VALUES:
            self._post({policy.POLICY_KEY: value})
            self.assertEqual(
                {policy.POLICY_KEY: value},
                self.admin_api.get_extra_specs(self.flavor_id))

    def test_bogus_policy_is_400_naming_the_allowed_values(self):
        self._assert_rejected(
            policy.POLICY_KEY, 'bogus', policy.POLICY_VALUES)

    def test_companion_keys_are_accepted(self):
        specs = {policy.POLICY_KEY: 'interleave',
                 policy.NIC_LOCALITY_KEY: 'required',
                 policy.IO_INTENSITY_KEY: 'high'}
        self._post(specs)
        self.assertEqual(
            specs, self.admin_api.get_extra_specs(self.flavor_id))

    def test_bad_nic_locality_is_400_naming_the_allowed_values(self):
        self._assert_rejected(
            policy.NIC_LOCALITY_KEY, 'sometimes', policy.NIC_LOCALITY_VALUES)

    def test_bad_io_intensity_is_400_naming_the_allowed_values(self):
        self._assert_rejected(
            policy.IO_INTENSITY_KEY, 'medium', policy.IO_INTENSITY_VALUES)

    def test_memory_tier_keys_are_accepted(self):
        for mode in tiers.TIER_MODE_VALUES:
            self._post({tiers.MEMORY_TIERS_KEY: mode})
            self.assertEqual(
                {tiers.MEMORY_TIERS_KEY: mode},
                self.admin_api.get_extra_specs(self.flavor_id))
        for percent in ('1', '30', '100'):
            specs = {tiers.MEMORY_TIERS_KEY: 'tiered',
                     tiers.TOP_TIER_PERCENT_KEY: percent}
            self._post(specs)
            self.assertEqual(
                specs, self.admin_api.get_extra_specs(self.flavor_id))

    def _assert_refused_unchanged(self, specs, words):
        """A 400 naming ``words``; the flavor keeps its extra specs."""
        before = {policy.POLICY_KEY: 'home',
                  tiers.MEMORY_TIERS_KEY: 'tiered',
                  tiers.TOP_TIER_PERCENT_KEY: '40'}
        self._post(before)
        exc = self.assertRaises(
            api_client.OpenStackApiException, self._post, specs)
        self.assertEqual(400, exc.response.status_code)
        for word in words:
            self.assertIn(word, exc.response.text)
        self.assertEqual(
            before, self.admin_api.get_extra_specs(self.flavor_id))

    def test_bad_memory_tiers_is_400_naming_the_allowed_values(self):
        self._assert_refused_unchanged(
            {tiers.MEMORY_TIERS_KEY: 'lower'},
            ['lower', *tiers.TIER_MODE_VALUES])

    def test_top_tier_percent_out_of_range_is_400(self):
        for percent, words in (('0', ["min value of '1'"]),
                               ('101', ["max value of '100'"]),
                               ('half', ['not a valid integer'])):
            self._assert_refused_unchanged(
                {tiers.MEMORY_TIERS_KEY: 'tiered',
                 tiers.TOP_TIER_PERCENT_KEY: percent},
                [f"'{percent}'", *words])

    def test_percent_without_tiered_is_left_to_the_resolver(self):
        # nova-api sees one key at a time; the scheduler refuses the
        # combination where the whole flavor is read.
        specs = {tiers.MEMORY_TIERS_KEY: 'top',
                 tiers.TOP_TIER_PERCENT_KEY: '30'}
        self._post(specs)
        self.assertEqual(
            specs, self.admin_api.get_extra_specs(self.flavor_id))

    def test_unknown_key_in_the_hw_namespace_is_still_rejected(self):
        exc = self.assertRaises(
            api_client.OpenStackApiException, self._post,
            {'hw:numa_polcy': 'interleave'})
        self.assertEqual(400, exc.response.status_code)

    def test_update_single_key(self):
        self.admin_api.put_extra_spec(
            self.flavor_id, policy.POLICY_KEY,
            {policy.POLICY_KEY: 'home'})
        self.assertEqual(
            {policy.POLICY_KEY: 'home'},
            self.admin_api.get_extra_spec(self.flavor_id, policy.POLICY_KEY))


class ExtraSpecsApiBeforeValidationTest(
        integrated_helpers._IntegratedTestBase):
    """Below 2.86 nova validates nothing; the resolver refuses later."""

    microversion = '2.85'

    def test_bogus_policy_is_stored_as_given(self):
        flavor_id = self._create_flavor()
        self.admin_api.post_extra_spec(
            flavor_id, {'extra_specs': {policy.POLICY_KEY: 'bogus'}})
        self.assertEqual({policy.POLICY_KEY: 'bogus'},
                         self.admin_api.get_extra_specs(flavor_id))
