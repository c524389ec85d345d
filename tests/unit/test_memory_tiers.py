"""The memory-tier contract (hw:numa_memory_tiers), one row per rule."""

from xml.etree import ElementTree

from nova_numa_policy.contracts import exception
from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import tiers
from nova_numa_policy.virt import metadata
from tests import base as test_base

P = policy.POLICY_KEY
TIERS = tiers.MEMORY_TIERS_KEY
PCT = tiers.TOP_TIER_PERCENT_KEY
Mode = tiers.TierMode

# What nova writes before a scheduler refusal reaches the instance's
# fault, which keeps 255 characters.
NO_VALID_HOST = 'No valid host was found. '

# Each way a flavor or image makes nova own the guest's NUMA topology:
# (extra specs, image properties, the setting the refusal names).
NOVA_TOPOLOGIES = [
    ({'hw:numa_nodes': '2'}, {}, 'hw:numa_nodes=2'),
    ({'hw:cpu_policy': 'dedicated'}, {}, 'hw:cpu_policy=dedicated'),
    ({'hw:cpu_policy': 'mixed'}, {}, 'hw:cpu_policy=mixed'),
    ({'hw:mem_page_size': 'large'}, {}, 'hw:mem_page_size=large'),
    ({'resources:PCPU': '2'}, {}, 'resources:PCPU=2'),
    ({}, {'hw_numa_nodes': 2}, 'image hw_numa_nodes=2'),
]


class ResolveTiersTest(test_base.TestCase):

    # (name, extra specs, expected mode, expected percent)
    CASES = [
        ('no_key_is_any', {}, Mode.ANY, None),
        ('unrelated_keys_are_any', {'hw:cpu_policy': 'shared'}, Mode.ANY,
         None),
        ('any', {TIERS: 'any'}, Mode.ANY, None),
        ('top', {TIERS: 'top'}, Mode.TOP, None),
        ('tiered_defaults_its_percent', {TIERS: 'tiered'}, Mode.TIERED,
         tiers.DEFAULT_TOP_TIER_PERCENT),
        ('tiered_with_a_percent', {TIERS: 'tiered', PCT: '30'},
         Mode.TIERED, 30),
        ('lowest_percent', {TIERS: 'tiered', PCT: '1'}, Mode.TIERED, 1),
        ('highest_percent', {TIERS: 'tiered', PCT: '100'}, Mode.TIERED,
         100),
        ('whitespace_is_ignored', {TIERS: ' tiered ', PCT: ' 75 '},
         Mode.TIERED, 75),
    ]

    def test_cases(self):
        for name, specs, mode, percent in self.CASES:
            got = tiers.resolve_tiers(specs)
            self.assertIs(mode, got.mode, name)
            self.assertEqual(percent, got.top_tier_percent, name)

    def test_no_specs_at_all_is_the_any_constant(self):
        self.assertEqual(tiers.ANY, tiers.resolve_tiers(None))
        self.assertEqual(tiers.MemoryTiers(Mode.ANY, None), tiers.ANY)

    def test_the_default_percent_is_in_range(self):
        self.assertTrue(tiers.MIN_TOP_TIER_PERCENT
                        <= tiers.DEFAULT_TOP_TIER_PERCENT
                        <= tiers.MAX_TOP_TIER_PERCENT)

    def test_the_default_percent_differs_from_an_explicit_other_one(self):
        # The default is filled in only when the flavor gives none.
        self.assertNotEqual(
            tiers.resolve_tiers({TIERS: 'tiered'}),
            tiers.resolve_tiers({TIERS: 'tiered', PCT: '20'}))


class RefusesBadTiersTest(test_base.TestCase):

    RANGE = 'an integer from 1 to 100'

    # (name, extra specs, exception, words in the message)
    CASES = [
        ('unknown_mode_names_the_allowed_values', {TIERS: 'lower'},
         exception.InvalidNumaPolicy, ['lower', TIERS, 'any, top, tiered']),
        ('modes_are_case_sensitive', {TIERS: 'Top'},
         exception.InvalidNumaPolicy, ["'Top'"]),
        ('empty_mode', {TIERS: ''}, exception.InvalidNumaPolicy, [TIERS]),
        ('zero_percent', {TIERS: 'tiered', PCT: '0'},
         exception.InvalidNumaPolicy, ["'0'", PCT, RANGE]),
        ('percent_over_100', {TIERS: 'tiered', PCT: '101'},
         exception.InvalidNumaPolicy, ["'101'", RANGE]),
        ('negative_percent', {TIERS: 'tiered', PCT: '-5'},
         exception.InvalidNumaPolicy, ["'-5'", RANGE]),
        ('word_percent', {TIERS: 'tiered', PCT: 'half'},
         exception.InvalidNumaPolicy, ["'half'", RANGE]),
        ('fractional_percent', {TIERS: 'tiered', PCT: '50.5'},
         exception.InvalidNumaPolicy, ["'50.5'", RANGE]),
        ('percent_sign', {TIERS: 'tiered', PCT: '50%'},
         exception.InvalidNumaPolicy, ["'50%'", RANGE]),
        ('empty_percent', {TIERS: 'tiered', PCT: ''},
         exception.InvalidNumaPolicy, [PCT, RANGE]),
        ('percent_alone', {PCT: '30'}, exception.ConflictingNumaSpecs,
         [PCT, TIERS, 'tiered', 'unset', 'remove']),
        ('percent_with_any', {TIERS: 'any', PCT: '30'},
         exception.ConflictingNumaSpecs, [PCT, f'{TIERS} is any']),
        ('percent_with_top', {TIERS: 'top', PCT: '30'},
         exception.ConflictingNumaSpecs, [PCT, f'{TIERS} is top']),
        # A bad value is named before the conflict, as nova-api would.
        ('bad_percent_with_top', {TIERS: 'top', PCT: 'half'},
         exception.InvalidNumaPolicy, ["'half'"]),
    ]

    def test_cases(self):
        for name, specs, exc_type, words in self.CASES:
            exc = self.assertRaises(exc_type, tiers.resolve_tiers, specs)
            for word in words:
                self.assertIn(word, str(exc), name)

    def test_the_same_refusals_come_out_of_resolve(self):
        for name, specs, exc_type, _ in self.CASES:
            self.assertRaises(exc_type, policy.resolve, specs)

    def test_refusals_are_value_errors_of_ours(self):
        self.assertTrue(issubclass(exception.ConflictingNumaSpecs,
                                   exception.NumaPolicyError))
        self.assertTrue(issubclass(exception.ConflictingNumaSpecs,
                                   ValueError))

    def test_the_conflict_fits_in_an_instance_fault(self):
        exc = self.assertRaises(exception.ConflictingNumaSpecs,
                                tiers.resolve_tiers, {PCT: '30'})
        self.assertLess(len(NO_VALID_HOST + str(exc)), 255)


class MemoryTiersValueTest(test_base.TestCase):

    def test_tiered_without_a_percent_cannot_be_built(self):
        self.assertRaises(ValueError, tiers.MemoryTiers, Mode.TIERED)

    def test_a_percent_without_tiered_cannot_be_built(self):
        self.assertRaises(ValueError, tiers.MemoryTiers, Mode.TOP, 30)

    def test_it_is_frozen(self):
        self.assertRaises(AttributeError, setattr, tiers.ANY, 'mode',
                          Mode.TOP)


class ResolveWithPolicyTest(test_base.TestCase):

    def test_our_keys_include_the_tier_keys(self):
        self.assertIn(TIERS, policy.OUR_KEYS)
        self.assertIn(PCT, policy.OUR_KEYS)

    def test_a_policy_without_tier_keys_gets_any(self):
        self.assertEqual(tiers.ANY,
                         policy.resolve({P: 'home'}).memory_tiers)
        self.assertEqual(tiers.ANY, policy.NumaPolicy('home').memory_tiers)

    def test_the_tier_key_alone_is_first_touch_plus_the_tier(self):
        for mode in tiers.TIER_MODE_VALUES:
            got = policy.resolve({TIERS: mode})
            self.assertIsNotNone(got, mode)
            self.assertEqual('first-touch', got.value, mode)
            self.assertEqual(Mode(mode), got.memory_tiers.mode)
            self.assertFalse(got.within_nova_topology)

    def test_the_tier_key_alone_keeps_its_percent(self):
        got = policy.resolve({TIERS: 'tiered', PCT: '40'})
        self.assertEqual(tiers.MemoryTiers(Mode.TIERED, 40),
                         got.memory_tiers)

    def test_the_tier_key_alone_is_not_the_operator_default(self):
        # Like hw:numa_nic_locality alone: first-touch, whatever
        # [numa_policy] default_policy says.
        got = policy.resolve({TIERS: 'top'}, default='interleave')
        self.assertEqual('first-touch', got.value)

    def test_the_operator_default_gets_any(self):
        got = policy.resolve({}, default='interleave')
        self.assertEqual(('interleave', tiers.ANY),
                         (got.value, got.memory_tiers))

    def test_no_key_at_all_is_still_no_policy(self):
        self.assertIsNone(policy.resolve({'hw:cpu_max_sockets': '2'}))

    def test_every_policy_composes_with_every_mode(self):
        for value in policy.POLICY_VALUES:
            for mode in tiers.TIER_MODE_VALUES:
                got = policy.resolve({P: value, TIERS: mode})
                self.assertEqual(value, got.value)
                self.assertEqual(Mode(mode), got.memory_tiers.mode)

    def test_every_policy_composes_with_a_tiered_percent(self):
        for value in policy.POLICY_VALUES:
            got = policy.resolve({P: value, TIERS: 'tiered', PCT: '70'})
            self.assertEqual(70, got.memory_tiers.top_tier_percent, value)

    def test_companion_keys_are_kept_beside_the_tier(self):
        got = policy.resolve({policy.NIC_LOCALITY_KEY: 'required',
                              TIERS: 'top'})
        self.assertEqual(
            (policy.NicLocality.REQUIRED, Mode.TOP),
            (got.nic_locality, got.memory_tiers.mode))

    def test_image_tier_properties_are_refused(self):
        for prop, flavor_key in (('hw_numa_memory_tiers', TIERS),
                                 ('hw_numa_top_tier_percent', PCT)):
            exc = self.assertRaises(
                exception.UnsupportedImageProperty, policy.resolve,
                {P: 'home'}, {prop: 'top'})
            self.assertIn(flavor_key, str(exc))


class NovaTopologyTest(test_base.TestCase):

    def test_top_and_any_compose_with_a_topology_nova_owns(self):
        for specs, props, _ in NOVA_TOPOLOGIES:
            for mode in (Mode.ANY, Mode.TOP):
                got = policy.resolve({**specs, TIERS: mode.value}, props)
                self.assertTrue(got.within_nova_topology, specs)
                self.assertIs(mode, got.memory_tiers.mode, specs)
                self.assertEqual('first-touch', got.value)

    def test_tiered_is_refused_with_a_topology_nova_owns(self):
        for specs, props, setting in NOVA_TOPOLOGIES:
            exc = self.assertRaises(
                exception.NumaPolicyConflict, policy.resolve,
                {**specs, TIERS: 'tiered'}, props)
            message = str(exc)
            for word in (f'{TIERS}=tiered', setting, f'{TIERS}=top',
                         'remove'):
                self.assertIn(word, message, setting)
            self.assertLess(len(NO_VALID_HOST + message), 255, message)

    def test_tiered_is_refused_beside_first_touch_too(self):
        self.assertRaises(
            exception.NumaPolicyConflict, policy.resolve,
            {P: 'first-touch', TIERS: 'tiered', PCT: '80',
             'hw:numa_nodes': '1'})

    def test_the_policy_conflict_is_named_first(self):
        exc = self.assertRaises(
            exception.NumaPolicyConflict, policy.resolve,
            {P: 'interleave', TIERS: 'tiered', 'hw:numa_nodes': '2'})
        self.assertIn(f'{P}=interleave', str(exc))

    def test_tiered_is_fine_where_nova_owns_nothing(self):
        got = policy.resolve({TIERS: 'tiered', 'hw:cpu_policy': 'shared'})
        self.assertFalse(got.within_nova_topology)
        self.assertIs(Mode.TIERED, got.memory_tiers.mode)


class RecordTest(test_base.TestCase):
    """The driver's domain metadata keeps the tier for the agent."""

    def _round_trip(self, specs):
        record = metadata.PolicyRecord(policy.resolve(specs))
        xml = metadata.render(record)
        return xml, metadata.parse_element(ElementTree.fromstring(xml))

    def test_each_mode_survives_the_record(self):
        for specs in ({TIERS: 'top'}, {P: 'home', TIERS: 'tiered'},
                      {P: 'interleave', TIERS: 'tiered', PCT: '35'}):
            xml, parsed = self._round_trip(specs)
            self.assertEqual(policy.resolve(specs), parsed.policy, xml)

    def test_a_record_without_tiers_is_written_as_before(self):
        xml, parsed = self._round_trip({P: 'home'})
        self.assertNotIn('memory-tiers', xml)
        self.assertNotIn('top-tier-percent', xml)
        self.assertEqual(tiers.ANY, parsed.policy.memory_tiers)
