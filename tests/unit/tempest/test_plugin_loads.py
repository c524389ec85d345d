"""The tempest plugin loads, registers its options and its tests are found.

Nothing here talks to a cloud: the tempest tests are imported and listed,
never run.
"""

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import uuid

from oslo_config import cfg

from nova_numa_policy.tempest_plugin import plugin
from tests import base as test_base

PLUGIN_PATH = 'nova_numa_policy.tempest_plugin.plugin:NumaPolicyTempestPlugin'
TESTS = 'nova_numa_policy.tempest_plugin.tests'
EXPECTED_TESTS = {
    f'{TESTS}.api.test_flavor_numa_policy.FlavorNumaPolicyTest': {
        'test_every_policy_value_is_accepted',
        'test_every_nic_locality_value_is_accepted',
        'test_every_io_intensity_value_is_accepted',
        'test_unknown_policy_is_refused_naming_the_allowed_values',
        'test_unknown_nic_locality_is_refused_naming_the_allowed_values',
        'test_unknown_io_intensity_is_refused_naming_the_allowed_values',
        'test_misspelt_key_is_refused',
        'test_every_memory_tier_value_and_a_percent_are_accepted',
        'test_unknown_memory_tiers_and_a_bad_percent_are_refused',
    },
    f'{TESTS}.scenario.test_boot_numa_policy.BootNumaPolicyTest': {
        'test_agent_reports_the_instance_where_nova_placed_it',
        'test_agent_reports_the_policy_applied',
        'test_domain_xml_interleaves_memory',
    },
}
# A listed tempest test id: module.Class.method[id-<uuid>,<other attrs>].
LISTED = re.compile(r'^(?P<cls>[\w.]+)\.(?P<method>\w+)\[(?P<attrs>[^\]]*)\]$')


def installed_entry_point():
    """Our tempest.test_plugins entry point, or None before it is added."""
    for entry_point in importlib.metadata.entry_points(
            group='tempest.test_plugins'):
        if entry_point.value == PLUGIN_PATH:
            return entry_point
    return None


class PluginTest(test_base.TestCase):

    def test_load_tests_points_at_the_tests_package(self):
        test_dir, top_level = plugin.NumaPolicyTempestPlugin().load_tests()
        self.assertTrue(os.path.isfile(os.path.join(test_dir, '__init__.py')))
        relative = os.path.relpath(test_dir, top_level)
        self.assertEqual(TESTS, relative.replace(os.sep, '.'))

    def test_register_opts_adds_the_group_and_service_available(self):
        conf = cfg.ConfigOpts()
        plugin.NumaPolicyTempestPlugin().register_opts(conf)
        conf([])
        self.assertEqual('numa-policy', conf.numa_policy.catalog_type)
        self.assertIsNone(conf.numa_policy.ssh_user)
        self.assertFalse(conf.numa_policy.driver_extension)
        self.assertFalse(conf.service_available.numa_policy)

    def test_register_opts_beside_tempests_own_options(self):
        # As inside tempest: service_available already exists there.
        from tempest import config as tempest_config
        conf = cfg.ConfigOpts()
        tempest_config.register_opt_group(
            conf, tempest_config.service_available_group,
            tempest_config.ServiceAvailableGroup)
        plugin.NumaPolicyTempestPlugin().register_opts(conf)
        conf([])
        self.assertTrue(conf.service_available.nova)
        self.assertFalse(conf.service_available.numa_policy)

    def test_opt_lists_cover_every_registered_option(self):
        lists = dict(plugin.NumaPolicyTempestPlugin().get_opt_lists())
        self.assertEqual({'numa_policy', 'service_available'}, set(lists))
        self.assertEqual(['numa_policy'],
                         [o.name for o in lists['service_available']])


class EntryPointTest(test_base.TestCase):
    """Through tempest's own plugin machinery.

    Runs once the package declares the entry point (setup.cfg) and is
    reinstalled.
    """

    def setUp(self):
        super().setUp()
        self.entry_point = installed_entry_point()
        if self.entry_point is None:
            self.skipTest(
                'the tempest.test_plugins entry point is not installed: '
                'add it to setup.cfg and reinstall the package')

    def test_entry_point_loads_the_plugin_class(self):
        self.assertIs(plugin.NumaPolicyTempestPlugin, self.entry_point.load())

    def test_tempest_plugin_manager_finds_the_tests(self):
        from tempest.test_discover import plugins
        load_tests = plugins.TempestTestPluginManager(
        ).get_plugin_load_tests_tuple()
        self.assertEqual(plugin.NumaPolicyTempestPlugin().load_tests(),
                         load_tests[self.entry_point.name])

    def test_tempest_list_plugins_shows_it(self):
        tempest = shutil.which('tempest', path=os.path.dirname(
            sys.executable))
        self.assertIsNotNone(tempest, 'tempest console script not found')
        result = subprocess.run([tempest, 'list-plugins'],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn(self.entry_point.name, result.stdout)
        self.assertIn(PLUGIN_PATH, result.stdout)


class DiscoveryTest(test_base.TestCase):
    """The tempest tests import and list with idempotent ids."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        test_dir, top_level = plugin.NumaPolicyTempestPlugin().load_tests()
        cls.result = subprocess.run(
            [sys.executable, '-m', 'testtools.run', 'discover',
             '-t', top_level, '-s', test_dir, '--list'],
            capture_output=True, text=True, timeout=120)
        cls.listed = cls.result.stdout.split()

    def _parsed(self):
        return [LISTED.match(line) for line in self.listed]

    def test_listing_succeeds_without_import_failures(self):
        self.assertEqual(0, self.result.returncode, self.result.stderr)
        self.assertNotIn('FailedTest', self.result.stdout)
        self.assertNotIn('ModuleImportFailure', self.result.stdout)

    def test_expected_tests_are_listed(self):
        found = {}
        for match in self._parsed():
            self.assertIsNotNone(match, self.result.stdout)
            found.setdefault(match['cls'], set()).add(match['method'])
        self.assertEqual(EXPECTED_TESTS, found)

    def test_every_test_has_a_unique_uuid4_idempotent_id(self):
        ids = []
        for match in self._parsed():
            attrs = match['attrs'].split(',')
            [test_id] = [a[3:] for a in attrs if a.startswith('id-')]
            self.assertEqual(4, uuid.UUID(test_id).version, match.string)
            ids.append(test_id)
        self.assertTrue(ids)
        self.assertEqual(len(ids), len(set(ids)))
