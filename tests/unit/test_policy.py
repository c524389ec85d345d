"""The hw:numa_policy contract, one row per rule."""

from nova_numa_policy.contracts import exception
from nova_numa_policy.contracts import policy
from tests import base as test_base

P = policy.POLICY_KEY
NIC = policy.NIC_LOCALITY_KEY
IO = policy.IO_INTENSITY_KEY


class ResolvesValidFlavorsTest(test_base.TestCase):

    # (name, extra specs, image props, default, expected fields or None)
    CASES = [
        ('no_keys_means_no_policy', {}, {}, None, None),
        ('unrelated_keys_mean_no_policy', {'hw:cpu_max_sockets': '2'}, {},
         None, None),
        ('interleave_is_round_4k', {P: 'interleave'}, {}, None,
         dict(value='interleave', placement=policy.Placement.INTERLEAVE,
              carrefour=False, auto=False)),
        ('home_is_round_1g', {P: 'home'}, {}, None,
         dict(placement=policy.Placement.HOME, carrefour=False)),
        ('carrefour_rides_on_first_touch', {P: 'first-touch+carrefour'},
         {}, None,
         dict(placement=policy.Placement.FIRST_TOUCH, carrefour=True)),
        ('carrefour_rides_on_interleave', {P: 'interleave+carrefour'}, {},
         None, dict(placement=policy.Placement.INTERLEAVE, carrefour=True)),
        ('auto_defers_placement_to_run_time', {P: 'auto'}, {}, None,
         dict(placement=None, auto=True)),
        ('surrounding_whitespace_is_ignored', {P: ' home '}, {}, None,
         dict(value='home')),
        ('companions_default_to_none_and_auto', {P: 'home'}, {}, None,
         dict(nic_locality=policy.NicLocality.NONE,
              io_intensity=policy.IoIntensity.AUTO)),
        ('companions_are_typed', {P: 'home', NIC: 'required', IO: 'high'},
         {}, None, dict(nic_locality=policy.NicLocality.REQUIRED,
                        io_intensity=policy.IoIntensity.HIGH)),
        ('a_companion_alone_implies_first_touch', {NIC: 'preferred'}, {},
         None, dict(value='first-touch',
                    nic_locality=policy.NicLocality.PREFERRED)),
        ('operator_default_applies_to_plain_flavors', {}, {}, 'interleave',
         dict(value='interleave')),
        ('flavor_wins_over_operator_default', {P: 'home'}, {}, 'interleave',
         dict(value='home')),
        ('operator_default_never_touches_nova_topology',
         {'hw:numa_nodes': '2'}, {}, 'interleave', None),
        ('first_touch_is_compatible_with_nova_topology',
         {P: 'first-touch', 'hw:numa_nodes': '1'}, {}, None,
         dict(value='first-touch', within_nova_topology=True)),
        ('nic_locality_is_compatible_with_dedicated_cpus',
         {NIC: 'required', 'hw:cpu_policy': 'dedicated'}, {}, None,
         dict(nic_locality=policy.NicLocality.REQUIRED,
              within_nova_topology=True)),
        ('shared_cpu_policy_does_not_make_nova_own_the_topology',
         {P: 'interleave', 'hw:cpu_policy': 'shared'}, {}, None,
         dict(within_nova_topology=False)),
        ('unrelated_image_properties_are_ignored', {P: 'home'},
         {'hw_disk_bus': 'scsi'}, None, dict(value='home')),
    ]

    def test_cases(self):
        for name, specs, props, default, expected in self.CASES:
            got = policy.resolve(specs, props, default=default)
            if expected is None:
                self.assertIsNone(got, name)
                continue
            for field, want in expected.items():
                self.assertEqual(want, getattr(got, field),
                                 f'{name}: {field}')


class RefusesBadFlavorsTest(test_base.TestCase):

    # (name, extra specs, image props, exception, words in the message)
    CASES = [
        ('unknown_policy_names_the_allowed_values', {P: 'bogus'}, {},
         exception.InvalidNumaPolicy, ['bogus', *policy.POLICY_VALUES]),
        ('policy_names_are_case_sensitive', {P: 'Interleave'}, {},
         exception.InvalidNumaPolicy, ['Interleave']),
        ('bare_carrefour_is_not_a_value', {P: 'carrefour'}, {},
         exception.InvalidNumaPolicy, ['first-touch+carrefour']),
        ('unknown_nic_locality', {NIC: 'always'}, {},
         exception.InvalidNumaPolicy, ['required', 'preferred', 'none']),
        ('unknown_io_intensity', {P: 'home', IO: 'medium'}, {},
         exception.InvalidNumaPolicy, ['auto', 'low', 'high']),
        ('interleave_contradicts_numa_nodes',
         {P: 'interleave', 'hw:numa_nodes': '2'}, {},
         exception.NumaPolicyConflict, ['hw:numa_nodes=2', 'first-touch']),
        ('home_contradicts_dedicated_cpus',
         {P: 'home', 'hw:cpu_policy': 'dedicated'}, {},
         exception.NumaPolicyConflict, ['hw:cpu_policy=dedicated']),
        ('carrefour_contradicts_huge_pages',
         {P: 'first-touch+carrefour', 'hw:mem_page_size': 'large'}, {},
         exception.NumaPolicyConflict, ['hw:mem_page_size=large']),
        ('auto_contradicts_mixed_cpus',
         {P: 'auto', 'hw:cpu_policy': 'mixed'}, {},
         exception.NumaPolicyConflict, ['hw:cpu_policy=mixed']),
        ('interleave_contradicts_pcpu_resources',
         {P: 'interleave', 'resources:PCPU': '4'}, {},
         exception.NumaPolicyConflict, ['resources:PCPU=4']),
        ('interleave_contradicts_an_image_numa_topology',
         {P: 'interleave'}, {'hw_numa_nodes': 2},
         exception.NumaPolicyConflict, ['image hw_numa_nodes=2']),
        ('image_policy_is_refused_with_the_flavor_key_to_use', {},
         {'hw_numa_policy': 'interleave'},
         exception.UnsupportedImageProperty,
         ['hw_numa_policy', 'hw:numa_policy', 'flavor']),
        ('image_companion_is_refused_too', {P: 'home'},
         {'hw_numa_nic_locality': 'required'},
         exception.UnsupportedImageProperty, ['hw:numa_nic_locality']),
        ('bad_operator_default_is_refused', {}, {},
         exception.InvalidNumaPolicy, ['sideways']),
    ]

    def test_cases(self):
        for name, specs, props, exc_type, words in self.CASES:
            default = 'sideways' if 'default' in name else None
            exc = self.assertRaises(
                exc_type, policy.resolve, specs, props, default=default)
            for word in words:
                self.assertIn(word, str(exc), name)

    def test_every_refusal_is_a_value_error(self):
        # Callers that only know ValueError still get a clean refusal.
        for exc_type in (exception.InvalidNumaPolicy,
                         exception.NumaPolicyConflict,
                         exception.UnsupportedImageProperty):
            self.assertTrue(issubclass(exc_type, ValueError))


class PolicyTableTest(test_base.TestCase):

    def test_every_seed_policy_has_a_value(self):
        research = {spec.research_name for spec in policy.POLICY_SPECS}
        for name in ('first-touch', 'round-4K', 'round-1G',
                     'first-touch + Carrefour', 'round-4K + Carrefour'):
            self.assertIn(name, research)

    def test_only_auto_leaves_placement_open(self):
        for spec in policy.POLICY_SPECS:
            self.assertEqual(spec.auto, spec.placement is None, spec.value)
