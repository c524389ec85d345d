"""tempest.conf for the cloud tier, without a cloud: every option written
is one tempest knows, the facts land where tempest reads them, and the
test selection names tests that exist."""

import importlib
import os
import re

import fixtures
from oslo_concurrency import opts as concurrency_opts
from oslo_config import cfg
from oslo_log import log
from tempest import config as tempest_config

from tests import base as test_base
from tests.cloud import configs
from tests.cloud import tempestconf

CATALOG = frozenset({'identity', 'compute', 'placement', 'image', 'network',
                     'numa-policy'})


def facts(**overrides):
    values = dict(
        auth_url='http://127.0.0.1:5000/v3', region='RegionOne',
        admin_username='admin', admin_password='secret',
        admin_project='admin', admin_domain='Default',
        image_ref='img-1', image_ref_alt='img-2', flavor_ref='fl-1',
        flavor_ref_alt='fl-2', network_name='physnet1-flat',
        catalog_types=CATALOG)
    values.update(overrides)
    return tempestconf.CloudFacts(**values)


def known_options():
    """{section: {option names}} of tempest, oslo.log, oslo.concurrency."""
    known = {}
    for group, opts in tempest_config._opts:
        name = 'DEFAULT' if group is None else getattr(group, 'name', group)
        known.setdefault(name, set()).update(o.name for o in opts)
    logging_conf = cfg.ConfigOpts()
    log.register_options(logging_conf)
    known.setdefault('DEFAULT', set()).update(logging_conf)
    for group, opts in concurrency_opts.list_opts():
        known.setdefault(group, set()).update(o.name for o in opts)
    return known


class SectionsTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.workspace = tempestconf.Workspace('/tmp/ws')
        self.sections = tempestconf.sections(facts(), self.workspace)

    def test_every_option_is_one_tempest_knows(self):
        known = known_options()
        for section, options in self.sections.items():
            self.assertIn(section, known)
            unknown = set(options) - known[section]
            self.assertEqual(set(), unknown, section)

    def test_identity_is_keystone_v3_and_the_admin(self):
        identity = self.sections['identity']
        self.assertEqual('http://127.0.0.1:5000/v3', identity['uri_v3'])
        self.assertEqual('v3', identity['auth_version'])
        self.assertEqual('RegionOne', identity['region'])
        self.assertEqual({
            'use_dynamic_credentials': 'True',
            'create_isolated_networks': 'False',
            'admin_username': 'admin', 'admin_password': 'secret',
            'admin_project_name': 'admin', 'admin_domain_name': 'Default',
        }, self.sections['auth'])

    def test_a_v2_uri_is_refused(self):
        self.assertRaises(ValueError, tempestconf.sections,
                          facts(auth_url='http://127.0.0.1:5000/v2.0'),
                          self.workspace)

    def test_compute_has_the_images_flavors_and_network(self):
        compute = self.sections['compute']
        self.assertEqual(('img-1', 'img-2', 'fl-1', 'fl-2', 'physnet1-flat',
                          'latest', '1'),
                         (compute['image_ref'], compute['image_ref_alt'],
                          compute['flavor_ref'], compute['flavor_ref_alt'],
                          compute['fixed_network_name'],
                          compute['max_microversion'],
                          compute['min_compute_nodes']))

    def test_no_validation_and_no_console(self):
        self.assertEqual({'run_validation': 'False'},
                         self.sections['validation'])
        features = self.sections['compute-feature-enabled']
        for name in ('console_output', 'vnc_console', 'spice_console',
                     'serial_console', 'live_migration', 'resize'):
            self.assertEqual('False', features[name], name)

    def test_scheduler_filters_only_when_known(self):
        self.assertNotIn('scheduler_enabled_filters',
                         self.sections['compute-feature-enabled'])
        sections = tempestconf.sections(
            facts(enabled_filters=('ComputeFilter', 'NumaPolicyFilter')),
            self.workspace)
        self.assertEqual(
            'ComputeFilter,NumaPolicyFilter',
            sections['compute-feature-enabled']['scheduler_enabled_filters'])

    def test_services_follow_the_catalog(self):
        self.assertEqual({'nova': 'True', 'glance': 'True',
                          'neutron': 'True', 'cinder': 'False',
                          'swift': 'False', 'horizon': 'False'},
                         self.sections['service_available'])
        with_cinder = tempestconf.service_available(CATALOG | {'volumev3'})
        self.assertEqual('True', with_cinder['cinder'])
        self.assertEqual('False',
                         tempestconf.service_available({'image'})['nova'])

    def test_logs_and_locks_in_the_workspace(self):
        self.assertEqual('/tmp/ws/logs', self.sections['DEFAULT']['log_dir'])
        self.assertEqual('/tmp/ws/tempest_lock',
                         self.sections['oslo_concurrency']['lock_path'])
        self.assertEqual('/tmp/ws/etc/tempest.conf', self.workspace.conf)

    def test_rendered_file_parses_back(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'tempest.conf')
        configs.write(path, self.sections)
        parsed = {}
        cfg.ConfigParser(path, parsed).parse()
        self.assertEqual(['physnet1-flat'],
                         parsed['compute']['fixed_network_name'])
        self.assertEqual(['False'], parsed['validation']['run_validation'])


class SelectionTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.regex = re.compile(tempestconf.test_regex())

    def _selected(self, test_id):
        return bool(self.regex.search(test_id))

    def test_every_plugin_test(self):
        for test_id in (
                'nova_numa_policy.tempest_plugin.tests.api.'
                'test_flavor_numa_policy.FlavorNumaPolicyTest.'
                'test_misspelt_key_is_refused[id-6bf031ae]',
                'nova_numa_policy.tempest_plugin.tests.scenario.'
                'test_boot_numa_policy.BootNumaPolicyTest.'
                'test_domain_xml_interleaves_memory[id-1ef97dcc]'):
            self.assertTrue(self._selected(test_id), test_id)

    def test_the_named_server_tests_only(self):
        create = 'tempest.api.compute.servers.test_create_server.'
        delete = 'tempest.api.compute.servers.test_delete_server.'
        for test_id in (create + 'ServersTestJSON.test_list_servers[id-9a4,'
                                 'smoke]',
                        create + 'ServersTestJSON.test_list_servers_with_'
                                 'detail[id-585]',
                        delete + 'DeleteServersTestJSON.test_delete_active_'
                                 'server[id-925]'):
            self.assertTrue(self._selected(test_id), test_id)
        for test_id in (
                # A subclass that boots from a volume or a manual disk.
                create + 'ServersTestManualDisk.test_list_servers[id-9a4]',
                create + 'ServersTestBootFromVolume.test_list_servers[id-9]',
                # Needs SSH into the guest.
                create + 'ServersTestJSON.test_verify_created_server_vcpus'
                         '[id-cbc]',
                delete + 'DeleteServersTestJSON.test_delete_server_while_'
                         'in_pause_state[id-943]',
                'tempest.api.compute.flavors.test_flavors.FlavorsV2TestJSON.'
                'test_list_flavors[id-e36]'):
            self.assertFalse(self._selected(test_id), test_id)

    def test_the_ci_run_and_the_cloud_all_run_split_the_selection(self):
        create = ('tempest.api.compute.servers.test_create_server.'
                  'ServersTestJSON.test_list_servers[id-9a4,smoke]')
        delete = ('tempest.api.compute.servers.test_delete_server.'
                  'DeleteServersTestJSON.test_delete_active_server[id-925]')
        plugin = ('nova_numa_policy.tempest_plugin.tests.api.'
                  'test_flavor_numa_policy.FlavorNumaPolicyTest.'
                  'test_misspelt_key_is_refused[id-6bf031ae]')
        cold = ('tempest.api.compute.admin.test_migrations.'
                'MigrationsAdminTest.test_cold_migration[id-4bf,multinode]')
        pause = ('tempest.api.compute.servers.test_server_actions.'
                 'ServerActionsTestJSON.test_pause_unpause_server[id-bd6]')
        tests = (plugin, pause, create, cold, delete)
        ci = re.compile(tempestconf.test_regex(
            server_tests=tempestconf.ACTION_TESTS))
        cloud_all = re.compile(tempestconf.test_regex(
            plugin=None, server_tests=tempestconf.CLOUD_ALL_TESTS))
        self.assertEqual((True, True, False, False, False), tuple(
            bool(ci.search(t)) for t in tests))
        self.assertEqual((False, False, True, True, True), tuple(
            bool(cloud_all.search(t)) for t in tests))

    def test_the_named_server_tests_exist_in_tempest(self):
        for path, methods in (tempestconf.CLOUD_ALL_TESTS +
                              tempestconf.ACTION_TESTS):
            module, cls = path.rsplit('.', 1)
            test_class = getattr(importlib.import_module(module), cls)
            for method in methods:
                self.assertTrue(hasattr(test_class, method),
                                f'{path}.{method}')

    def test_no_whitespace_tempest_would_split_on(self):
        self.assertEqual(1, len(tempestconf.test_regex().split()))
