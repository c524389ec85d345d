"""The runner's steps that need no cloud: the workspace it writes, with
our plugin's group written on top by devstack/plugin.sh's test-config
phase (run for real, against devstack's stubbed helpers)."""

import os

import fixtures
from oslo_config import cfg

from tests import base as test_base
from tests.cloud import layout as lay
from tests.cloud import tempest_results
from tests.cloud import tempest_run
from tests.cloud import tempestconf


def read_ini(path):
    parsed = {}
    cfg.ConfigParser(path, parsed).parse()
    return parsed


class WorkspaceTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        root = self.useFixture(fixtures.TempDir()).path
        self.layout = lay.Layout(os.path.join(root, 'cloud'))
        os.makedirs(self.layout.data)
        self.workspace = tempestconf.Workspace(os.path.join(root, 'ws'))
        tempest_run.write_workspace(self.workspace, tempestconf.CloudFacts(
            auth_url='http://127.0.0.1:5000/v3', region='RegionOne',
            admin_username='admin', admin_password='pw',
            admin_project='admin', admin_domain='Default', image_ref='i1',
            image_ref_alt='i2', flavor_ref='f1', flavor_ref_alt='f2',
            network_name='net', catalog_types=frozenset({'compute'})))

    def test_directories_and_conf(self):
        for path in (self.workspace.logs, self.workspace.lock):
            self.assertTrue(os.path.isdir(path), path)
        self.assertEqual(['i1'],
                         read_ini(self.workspace.conf)['compute']['image_ref'])

    def test_plugin_writes_its_group_over_ours(self):
        tempest_run.plugin_test_config(self.layout, self.workspace, 'True')
        conf = read_ini(self.workspace.conf)
        self.assertEqual(['True'], conf['service_available']['numa_policy'])
        self.assertEqual(['True'], conf['service_available']['nova'])
        self.assertEqual({'catalog_type': ['numa-policy'],
                          'endpoint_type': ['public'],
                          'driver_extension': ['True'],
                          'report_timeout': ['180']}, conf['numa_policy'])
        # Ours is untouched.
        self.assertEqual(['latest'], conf['compute']['max_microversion'])
        self.assertEqual(['False'], conf['validation']['run_validation'])

    def test_driver_extension_false_is_passed_on(self):
        tempest_run.plugin_test_config(self.layout, self.workspace, 'False')
        self.assertEqual(['False'], read_ini(self.workspace.conf)[
            'numa_policy']['driver_extension'])


class PluginSettingsTest(test_base.TestCase):

    def test_the_clouds_settings_stay_under_the_plugins_own(self):
        root = self.useFixture(fixtures.TempDir()).path
        layout = lay.Layout(os.path.join(root, 'cloud'))
        os.makedirs(layout.data)
        workspace = tempestconf.Workspace(os.path.join(root, 'ws'))
        tempest_run.write_workspace(workspace, tempestconf.CloudFacts(
            auth_url='http://127.0.0.1:5000/v3', region='RegionOne',
            admin_username='admin', admin_password='pw',
            admin_project='admin', admin_domain='Default', image_ref='i1',
            image_ref_alt='i2', flavor_ref='f1', flavor_ref_alt='f2',
            network_name='net', catalog_types=frozenset({'compute'})),
            {'ssh_user': 'root', 'ssh_port': '2222',
             'ssh_hosts': 'lab-compute-1:127.0.0.2'})
        tempest_run.plugin_test_config(layout, workspace, 'True')
        group = read_ini(workspace.conf)['numa_policy']
        self.assertEqual(['root'], group['ssh_user'])
        self.assertEqual(['lab-compute-1:127.0.0.2'], group['ssh_hosts'])
        self.assertEqual(['numa-policy'], group['catalog_type'])


class SummaryTest(test_base.TestCase):

    def test_a_run_with_a_skip_is_not_passed(self):
        outcome = [tempest_results.Result('a.test_one', 'success'),
                   tempest_results.Result('a.test_two', 'skip', 'no ssh')]
        ok, text = tempest_run.summary(outcome, 0, 'Totals\n Passed: 1\n')
        self.assertFalse(ok)
        self.assertIn('cloud tier tempest: FAILED', text)
        self.assertIn('no ssh', text)

    def test_the_closing_lines_are_quoted_clear_of_ci_counters(self):
        # .ci/run adds up lines starting " - Passed: N" and "Ran N tests":
        # tempest's own, in the tier's output, must not count twice.
        outcome = [tempest_results.Result('a.test_one', 'success')]
        ok, text = tempest_run.summary(
            outcome, 0, 'x\nTotals\n======\nRan: 1 tests in 2.0 sec.\n'
                        ' - Passed: 1\n')
        self.assertTrue(ok)
        self.assertIn('    Ran: 1 tests in 2.0 sec.', text)
        self.assertIn('     - Passed: 1', text)
        self.assertNotRegex(text, r'(?m)^ - Passed: |^Ran ')

    def _relaying_workspace(self):
        """A workspace with its log's folder, and our stdout captured."""
        workspace = tempestconf.Workspace(
            self.useFixture(fixtures.TempDir()).path)
        os.makedirs(os.path.dirname(workspace.run_log), exist_ok=True)
        out = self.useFixture(fixtures.StringStream('relayed'))
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', out.stream))
        return workspace, out

    def test_tempests_lines_reach_our_output_marked(self):
        workspace, out = self._relaying_workspace()
        code, output = tempest_run.run_tempest(
            workspace, ['printf', ' - Passed: 3\\n'])
        self.assertEqual((0, ' - Passed: 3\n'), (code, output))
        self.assertEqual('tempest|  - Passed: 3\n',
                         out.getDetails()['relayed'].as_text())
        with open(workspace.run_log) as f:
            self.assertEqual(' - Passed: 3\n', f.read())

    def test_a_run_past_its_deadline_is_stopped_with_its_workers(self):
        # The child keeps tempest's stdout open: killing the parent alone
        # would leave the relay reading until the child ends (60 s).
        workspace, _ = self._relaying_workspace()
        code, output = tempest_run.run_tempest(
            workspace, ['sh', '-c', 'echo started; sleep 60 & sleep 60'],
            deadline=0.5)
        self.assertEqual(tempest_results.STOPPED, code)
        self.assertEqual('started\ntempest_run: stopped, still running '
                         'after its deadline of 0.5 s\n', output)
        ok, text = tempest_run.summary([], code, output)
        self.assertFalse(ok)
        self.assertIn('FAILED (stopped at its deadline', text)

    def test_a_run_within_its_deadline_keeps_its_exit_code(self):
        workspace, _ = self._relaying_workspace()
        self.assertEqual((3, ''), tempest_run.run_tempest(
            workspace, ['sh', '-c', 'exit 3'], deadline=60))


class CommandTest(test_base.TestCase):

    def test_serial_by_default_and_in_the_workspace_conf(self):
        workspace = tempestconf.Workspace('/w')
        argv = tempest_run.tempest_command(workspace, 'x', 1)
        self.assertEqual(['run', '--config-file', '/w/etc/tempest.conf',
                          '--regex', 'x', '--serial'], argv[1:])
        self.assertEqual(['--concurrency', '2'],
                         tempest_run.tempest_command(workspace, 'x', 2)[-2:])
        self.assertEqual('--list-tests', tempest_run.tempest_command(
            workspace, 'x', 1, list_only=True)[-1])

    def test_nova_filters_read_from_nova_conf(self):
        root = self.useFixture(fixtures.TempDir()).path
        layout = lay.Layout(root)
        os.makedirs(layout.conf_dir('nova'))
        with open(layout.conf('nova'), 'w') as f:
            f.write('[filter_scheduler]\nenabled_filters = A, B,C\n')
        self.assertEqual(('A', 'B', 'C'), tempest_run.nova_filters(layout))
