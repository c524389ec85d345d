"""nova-api accepts the documented hw:numa_policy keys and values and
refuses others with 400 from compute microversion 2.86 on."""

from tempest.api.compute import base as compute_base
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from nova_numa_policy.tempest_plugin.tests import base


class FlavorNumaPolicyTest(compute_base.BaseV2ComputeAdminTest):

    # From 2.86 nova validates extra specs against the registered
    # validators; below it stores any value.
    min_microversion = '2.86'

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        base.skip_unless_deployed(cls.skipException)

    def setUp(self):
        super().setUp()
        self.flavor = base.create_flavor_like(
            self.addCleanup, self.admin_flavors_client,
            base.CONF.compute.flavor_ref, extra_specs=None)

    def _set(self, key, value):
        return self.admin_flavors_client.set_flavor_extra_spec(
            self.flavor['id'], **{key: value})

    def _assert_round_trip(self, key, values):
        for value in values:
            self._set(key, value)
            shown = self.admin_flavors_client.show_flavor_extra_spec(
                self.flavor['id'], key)
            self.assertEqual({key: value}, dict(shown))

    def _assert_refused_naming(self, key, value, allowed):
        error = self.assertRaises(lib_exc.BadRequest, self._set, key, value)
        message = error.resp_body['message']
        for name in allowed:
            self.assertIn(name, message)

    @decorators.idempotent_id('094ffcb5-e2ad-44ad-9143-896c25a17cd4')
    def test_every_policy_value_is_accepted(self):
        self._assert_round_trip(base.POLICY_KEY, base.POLICIES)

    @decorators.idempotent_id('2f3106a4-ac26-4737-a28a-f18310682573')
    def test_every_nic_locality_value_is_accepted(self):
        self._assert_round_trip(base.NIC_LOCALITY_KEY, base.NIC_LOCALITIES)

    @decorators.idempotent_id('024000fb-890b-433a-bbdd-d0400e982b41')
    def test_every_io_intensity_value_is_accepted(self):
        self._assert_round_trip(base.IO_INTENSITY_KEY, base.IO_INTENSITIES)

    @decorators.idempotent_id('1d982c26-7a4e-4566-ab5b-4705b817e5c3')
    def test_unknown_policy_is_refused_naming_the_allowed_values(self):
        self._assert_refused_naming(base.POLICY_KEY, 'round-robin',
                                    base.POLICIES)

    @decorators.idempotent_id('5debb211-4345-4e79-84cb-1c3699e293cf')
    def test_unknown_nic_locality_is_refused_naming_the_allowed_values(self):
        self._assert_refused_naming(base.NIC_LOCALITY_KEY, 'sometimes',
                                    base.NIC_LOCALITIES)

    @decorators.idempotent_id('80d99364-d97a-4a8c-b388-72f60748336e')
    def test_unknown_io_intensity_is_refused_naming_the_allowed_values(self):
        self._assert_refused_naming(base.IO_INTENSITY_KEY, 'extreme',
                                    base.IO_INTENSITIES)

    @decorators.idempotent_id('f28c1170-962d-408f-8528-5cfc02964476')
    def test_every_memory_tier_value_and_a_percent_are_accepted(self):
        self._assert_round_trip(base.MEMORY_TIERS_KEY, base.MEMORY_TIERS)
        self._assert_round_trip(base.TOP_TIER_PERCENT_KEY, ('1', '50', '100'))

    @decorators.idempotent_id('b904e377-8761-4e68-a182-d2f368381434')
    def test_unknown_memory_tiers_and_a_bad_percent_are_refused(self):
        self._assert_refused_naming(base.MEMORY_TIERS_KEY, 'fast',
                                    base.MEMORY_TIERS)
        for percent in ('0', '101', 'half'):
            self.assertRaises(lib_exc.BadRequest, self._set,
                              base.TOP_TIER_PERCENT_KEY, percent)

    @decorators.idempotent_id('6bf031ae-7c3c-4847-b1b2-8c81f0190ad3')
    def test_misspelt_key_is_refused(self):
        # A typo must not pass as a no-op: hw: is a namespace nova checks.
        self.assertRaises(lib_exc.BadRequest, self._set, 'hw:numa_polcy',
                          'interleave')
