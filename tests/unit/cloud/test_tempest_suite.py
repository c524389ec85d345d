"""tempest's compute suite, ours and stock, without a cloud: the modules
are tempest's, the features are tempest's options and cover the cloud's
list, stock is nova's defaults, and the two runs' results are counted,
compared and tabled as they are."""

import importlib.util
import re

from tempest import config as tempest_config

from tests import base as test_base
from tests.cloud import tempest_results as results
from tests.cloud import tempest_suite as suite
from tests.cloud import tempestconf

SERVERS = 'tempest.api.compute.servers'
ACTIONS = f'{SERVERS}.test_server_actions.ServerActionsTestJSON'
MIGRATIONS = ('tempest.api.compute.admin.test_migrations.'
              'MigrationsAdminTest')


def result(test_id, status='success', reason=''):
    return results.Result(test_id, status, reason)


class SelectionTest(test_base.TestCase):

    def test_every_module_is_in_the_installed_tempest(self):
        for name in suite.MODULES:
            self.assertIsNotNone(importlib.util.find_spec(name), name)

    def test_the_environment_narrows_it(self):
        self.assertEqual(suite.MODULES, suite.selection(None))
        self.assertEqual(suite.MODULES, suite.selection(' '))
        self.assertEqual(
            ('tempest.api.compute.admin.test_migrations', SERVERS),
            suite.selection('tempest.api.compute.admin.test_migrations, '
                            f'{SERVERS},'))

    def test_a_name_that_is_not_dotted_is_refused(self):
        self.assertRaises(ValueError, suite.selection, 'tempest.api.*')

    def test_the_regex_matches_a_module_up_to_its_dot(self):
        regex = re.compile(suite.test_regex(
            ('tempest.api.compute.admin.test_servers', SERVERS)))
        self.assertTrue(regex.search(
            'tempest.api.compute.admin.test_servers.ServersAdminTestJSON.'
            'test_reset_state_server[id-1]'))
        self.assertTrue(regex.search(f'{ACTIONS}.test_reboot[id-2]'))
        self.assertFalse(regex.search(
            'tempest.api.compute.admin.test_servers_negative.'
            'ServersAdminNegativeTestJSON.test_x[id-3]'))
        self.assertFalse(regex.search(
            'tempest.api.compute.servers_other.C.test_y'))


class FeaturesTest(test_base.TestCase):

    def test_on_and_kept_off_cover_what_the_cloud_turns_off(self):
        on, off = set(suite.FEATURES_ON), set(suite.FEATURES_KEPT_OFF)
        self.assertEqual(set(), on & off)
        self.assertEqual(set(tempestconf.FEATURES_OFF), on | off)

    def test_the_issues_features_are_on(self):
        for name in ('resize', 'cold_migration', 'live_migration',
                     'block_migration_for_live_migration', 'pause',
                     'suspend', 'shelve', 'snapshot', 'rescue',
                     'interface_attach'):
            self.assertIn(name, suite.FEATURES_ON)

    def test_each_is_an_option_of_tempest(self):
        known = {opt.name for opt in tempest_config.ComputeFeaturesGroup}
        for name in suite.features(('ComputeFilter',)):
            self.assertIn(name, known)

    def test_values(self):
        features = suite.features(('ComputeFilter', 'NumaPolicyFilter'))
        self.assertEqual('True', features['resize'])
        self.assertEqual('True', features['block_migration_for_live_'
                                          'migration'])
        self.assertEqual('False', features['vnc_console'])
        self.assertEqual('ComputeFilter,NumaPolicyFilter',
                         features['scheduler_enabled_filters'])

    def test_written_over_the_clouds_defaults(self):
        facts = tempestconf.CloudFacts(
            auth_url='http://127.0.0.1:5000/v3', region='RegionOne',
            admin_username='admin', admin_password='pw',
            admin_project='admin', admin_domain='Default', image_ref='i1',
            image_ref_alt='i2', flavor_ref='f1', flavor_ref_alt='f2',
            network_name='net', catalog_types=frozenset({'compute'}),
            enabled_filters=('ComputeFilter', 'NumaPolicyFilter'))
        workspace = tempestconf.Workspace('/ws')
        plain = tempestconf.sections(facts, workspace)
        self.assertEqual('False', plain['compute-feature-enabled']['resize'])
        written = tempestconf.sections(facts, workspace, suite.features(
            suite.STOCK_FILTERS))['compute-feature-enabled']
        self.assertEqual('True', written['resize'])
        self.assertEqual('False', written['metadata_service'])
        self.assertEqual(','.join(suite.STOCK_FILTERS),
                         written['scheduler_enabled_filters'])


class StockTest(test_base.TestCase):

    def test_stock_is_novas_defaults(self):
        from nova.conf import scheduler
        defaults = {opt.name: opt.default
                    for opt in scheduler.filter_scheduler_opts}
        self.assertEqual(list(suite.STOCK_FILTERS),
                         defaults['enabled_filters'])
        self.assertEqual(list(suite.STOCK_WEIGHERS),
                         defaults['weight_classes'])
        self.assertEqual(
            {'filter_scheduler': {
                'enabled_filters': ','.join(suite.STOCK_FILTERS),
                'weight_classes': 'nova.scheduler.weights.all_weighers'}},
            suite.stock_scheduler_config())

    def test_the_stock_driver_is_novas_libvirt_driver(self):
        self.assertEqual({'DEFAULT': {'compute_driver':
                                      'libvirt.LibvirtDriver'}},
                         suite.stock_compute_config())
        module, name = suite.STOCK_DRIVER.rsplit('.', 1)
        self.assertIsNotNone(importlib.util.find_spec(f'nova.virt.{module}'))


class CountsTest(test_base.TestCase):

    def test_module_of(self):
        self.assertEqual(f'{SERVERS}.test_server_actions',
                         suite.module_of(f'{ACTIONS}.test_reboot[id-1,'
                                         'smoke]'))
        self.assertEqual(f'{SERVERS}.test_server_actions',
                         suite.module_of(f'setUpClass ({ACTIONS})'))
        self.assertEqual('tempest.api.compute.admin.test_migrations',
                         suite.module_of(f'{MIGRATIONS}.test_list'))
        self.assertEqual('plain.module', suite.module_of('plain.module.f'))

    def test_counts_per_module(self):
        counted = suite.counts([
            result(f'{ACTIONS}.test_a'),
            result(f'{ACTIONS}.test_b', 'fail'),
            result(f'{ACTIONS}.test_c', 'skip'),
            result(f'{ACTIONS}.test_d', 'inprogress'),
            result(f'{MIGRATIONS}.test_e', 'xfail'),
            result(f'{MIGRATIONS}.test_f', 'uxsuccess')])
        self.assertEqual(
            {f'{SERVERS}.test_server_actions': suite.Counts(1, 1, 1, 1),
             'tempest.api.compute.admin.test_migrations':
                 suite.Counts(1, 1, 0, 0)},
            counted)
        self.assertEqual(4, counted[f'{SERVERS}.test_server_actions'].total)

    def test_counts_text(self):
        self.assertEqual('3/1/2', suite.Counts(3, 1, 2).text())
        self.assertEqual('3/1/2 +1 unfinished',
                         suite.Counts(3, 1, 2, 1).text())


class CompareTest(test_base.TestCase):

    def test_what_fails_with_ours_and_passes_stock_is_ours(self):
        ours = [result('m.C.test_same'),
                result('m.C.test_ours_fails', 'fail', 'tb\nBoom: ours'),
                result('m.C.test_both_fail', 'fail', 'tb'),
                result('m.C.test_stock_fails'),
                result('m.C.test_ours_skips', 'skip', 'why')]
        stock = [result('m.C.test_same'),
                 result('m.C.test_ours_fails'),
                 result('m.C.test_both_fail', 'fail', 'tb'),
                 result('m.C.test_stock_fails', 'fail', 'Boom: stock'),
                 result('m.C.test_ours_skips'),
                 result('m.C.test_ours_never_ran')]
        to_fix, stock_fails = suite.compare(ours, stock)
        self.assertEqual(
            [suite.Difference('m.C.test_ours_fails', 'stock', 'failed',
                              'tb\nBoom: ours'),
             suite.Difference('m.C.test_ours_never_ran', 'stock',
                              'not run', ''),
             suite.Difference('m.C.test_ours_skips', 'stock', 'skipped',
                              'why')],
            to_fix)
        self.assertEqual(
            [suite.Difference('m.C.test_stock_fails', 'ours', 'failed',
                              'Boom: stock')],
            stock_fails)

    def test_the_same_outcomes_differ_in_nothing(self):
        run = [result('m.C.test_a'), result('m.C.test_b', 'fail')]
        self.assertEqual(([], []), suite.compare(run, list(run)))


class ReportTest(test_base.TestCase):

    def test_table(self):
        text = suite.table(
            {'a.mod': suite.Counts(10, 1, 2)},
            {'a.mod': suite.Counts(11, 0, 2), 'b.mod': suite.Counts(1)})
        self.assertEqual(
            '==============  ==========  ===========\n'
            'tempest module  ours p/f/s  stock p/f/s\n'
            '==============  ==========  ===========\n'
            'a.mod           10/1/2      11/0/2\n'
            'b.mod           0/0/0       1/0/0\n'
            'total           10/1/2      12/0/2\n'
            '==============  ==========  ===========',
            text)

    def test_report(self):
        ours = [result(f'{MIGRATIONS}.test_a', 'fail',
                       'l1\nl2\nl3\nNoValidHost: none')]
        stock = [result(f'{MIGRATIONS}.test_a')]
        text = suite.report(('tempest.api.compute.admin.test_migrations',),
                            ours, stock, {'tempest with ours': 61.4})
        self.assertIn('selected: tempest.api.compute.admin.test_migrations',
                      text)
        self.assertIn('tempest.api.compute.admin.test_migrations  0/1/0'
                      '       1/0/0', text)
        self.assertIn('tempest with ours: 61 s', text)
        self.assertIn('did not pass with ours, passed stock (ours to fix): '
                      '1\n  ' + f'{MIGRATIONS}.test_a (failed)\n'
                      '      l2\n      l3\n      NoValidHost: none', text)
        self.assertIn('passed with ours, did not pass stock: 0', text)
