"""Trait names, the merge with a provider's traits, placement options."""

import fixtures
from oslo_config import cfg
from oslo_config import fixture as config_fixture

from nova_numa_policy import conf as npconf
from nova_numa_policy.contracts import backend

from agent.service import manager
from agent.service import traits
from tests import base as test_base
from tests.unit.agent import base

PLACEMENT_SECTION = """
[numa_policy_agent]
manage_traits = True

[placement]
auth_type = password
auth_url = http://keystone/identity
username = placement-agent
password = secret
project_name = service
user_domain_name = Default
project_domain_name = Default
region_name = RegionTwo
"""


class MergeTest(test_base.TestCase):

    def test_others_kept_ours_added_our_stale_removed(self):
        existing = {'HW_CPU_X86_AVX2', 'CUSTOM_RACK_7',
                    'CUSTOM_NUMA_POLICY_AUTO', 'CUSTOM_NUMA_POLICY_HOME'}
        self.assertEqual(
            {'HW_CPU_X86_AVX2', 'CUSTOM_RACK_7', 'CUSTOM_NUMA_POLICY_HOME',
             'CUSTOM_NUMA_POLICY_INTERLEAVE'},
            traits.merge(existing, ['CUSTOM_NUMA_POLICY_HOME',
                                    'CUSTOM_NUMA_POLICY_INTERLEAVE']))

    def test_a_lookalike_prefix_is_not_ours(self):
        self.assertEqual({'CUSTOM_NUMA_POLICYX'},
                         traits.merge({'CUSTOM_NUMA_POLICYX'}, []))

    def test_names_are_normalised_custom_traits(self):
        self.assertEqual(
            ['CUSTOM_NUMA_POLICY_FIRST_TOUCH_CARREFOUR',
             'CUSTOM_NUMA_POLICY_LIVE_NODESET'],
            traits.trait_names(['first-touch+carrefour'],
                               {backend.CAP_LIVE_NODESET}))


class FromConfTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(
            cfg.ConfigOpts())).conf
        npconf.agent.register_opts(self.conf)
        self.conf([], project='nova')

    def test_off_by_default(self):
        self.assertIsNone(traits.from_conf(self.conf))

    def test_on_without_credentials_is_refused(self):
        self.conf.set_override('manage_traits', True,
                               group='numa_policy_agent')
        exc = self.assertRaises(ValueError, traits.from_conf, self.conf)
        self.assertIn('[placement]', str(exc))

    def test_on_with_nova_style_placement_credentials(self):
        # Plugin options (auth_url...) exist only once auth_type is known,
        # so they come from a file, as from nova.conf in production.
        path = self.useFixture(fixtures.TempDir()).path + '/agent.conf'
        with open(path, 'w') as f:
            f.write(PLACEMENT_SECTION)
        self.conf(['--config-file', path], project='nova')
        syncer = traits.from_conf(self.conf)
        adapter = syncer._adapter
        self.assertEqual(('placement', 'RegionTwo'),
                         (adapter.service_type, adapter.region_name))
        self.assertEqual('http://keystone/identity',
                         adapter.session.auth.auth_url)


class RecordingTraits:
    def __init__(self):
        self.calls = []

    def sync(self, hostname, capabilities):
        self.calls.append((hostname, capabilities))
        return False


class AgentSyncTest(base.TestDriverHostTest):

    def test_each_period_syncs_without_asking_for_a_quick_resync(self):
        recording = RecordingTraits()
        agent = manager.Agent(self.backend, host='cn1', period=5.0,
                              traits=recording)
        # A failed sync waits for the next period: no resync.
        self.assertFalse(agent.run_once())
        self.assertEqual([(self.backend.hostname(),
                           self.backend.capabilities())], recording.calls)
