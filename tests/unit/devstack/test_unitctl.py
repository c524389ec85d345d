"""The lab's service manager on unit files as devstack writes them."""

import grp
import os
import pwd
import textwrap

import fixtures
import psutil

from tests import base as test_base
from tests.devstack import tree
from tests.devstack import unitctl

# write_user_unit_file's lines, as devstack's iniset leaves them.
UNIT = textwrap.dedent('''\
    [Unit]
    Description = Devstack devstack@numa-policy-agent.service

    [Service]
    Environment = "PATH=/opt/venv/bin:/usr/bin" "LANG=C"
    User = stack
    ExecStart = /opt/venv/bin/numa-policy-agent --config-file /etc/a.conf
    KillMode = process
    TimeoutStopSec = 300
    ExecReload = /usr/bin/kill -HUP $MAINPID
    Group = libvirt

    [Install]
    WantedBy = multi-user.target
    ''')


class UnitFileTest(test_base.TestCase):

    def test_a_devstack_unit_gives_command_user_group_and_environment(self):
        settings = unitctl.service_settings(unitctl.parse_unit(UNIT))
        self.assertEqual(['/opt/venv/bin/numa-policy-agent', '--config-file',
                          '/etc/a.conf'], settings['argv'])
        self.assertEqual(('stack', 'libvirt', 300.0),
                         (settings['user'], settings['group'],
                          settings['stop_timeout']))
        self.assertEqual('/opt/venv/bin:/usr/bin', settings['env']['PATH'])
        self.assertEqual('C', settings['env']['LANG'])

    def test_a_relative_command_is_refused_as_systemd_would(self):
        unit = unitctl.parse_unit('[Service]\nExecStart = agent --x\n')
        self.assertRaisesRegex(unitctl.UnitError, 'not an absolute',
                               unitctl.service_settings, unit)

    def test_a_unit_without_exec_start_is_refused(self):
        self.assertRaisesRegex(unitctl.UnitError, 'no ExecStart',
                               unitctl.service_settings,
                               unitctl.parse_unit('[Service]\nUser = x\n'))

    def test_a_line_outside_a_section_is_not_a_unit(self):
        self.assertRaises(unitctl.UnitError, unitctl.parse_unit, 'x = 1\n')


class ManagerTest(test_base.TestCase):
    """The verbs on a real process, as the user running the tests."""

    def setUp(self):
        super().setUp()
        root = self.useFixture(fixtures.TempDir()).path
        self.units = os.path.join(root, 'units')
        os.makedirs(self.units)
        self.manager = unitctl.Manager(self.units, os.path.join(root, 's'))
        self.addCleanup(self.manager.stop_all)
        user = pwd.getpwuid(os.getuid())
        with open(os.path.join(self.units, 'devstack@x.service'), 'w') as f:
            f.write(f'[Service]\nUser = {user.pw_name}\n'
                    f'Group = {grp.getgrgid(os.getgid()).gr_name}\n'
                    'Environment = "MARK=devstack-unit"\n'
                    'ExecStart = /bin/sleep 300\nTimeoutStopSec = 5\n')

    def test_start_runs_the_unit_and_stop_ends_it(self):
        self.manager.enable('devstack@x.service')
        self.manager.start('devstack@x.service')
        pid = self.manager.pid('devstack@x.service')
        process = psutil.Process(pid)
        self.assertEqual(['/bin/sleep', '300'], process.cmdline())
        self.assertEqual('devstack-unit', process.environ()['MARK'])
        # A session of its own, as systemd gives each service.
        self.assertEqual(pid, os.getsid(pid))
        self.assertTrue(self.manager.is_enabled('devstack@x.service'))
        self.manager.stop('devstack@x.service')
        self.assertIsNone(self.manager.pid('devstack@x.service'))
        self.assertFalse(process.is_running()
                         and process.status() != psutil.STATUS_ZOMBIE)
        self.manager.disable('devstack@x.service')
        self.assertFalse(self.manager.is_enabled('devstack@x.service'))

    def test_a_second_start_keeps_the_running_process(self):
        self.manager.start('devstack@x.service')
        first = self.manager.pid('devstack@x.service')
        self.manager.start('devstack@x.service')
        self.assertEqual(first, self.manager.pid('devstack@x.service'))

    def test_is_enabled_answers_as_systemctl_does(self):
        self.assertEqual(1, unitctl.main(['--units', self.units, '--state',
                                          self.manager.state, 'is-enabled',
                                          'devstack@x.service']))
        self.assertEqual(5, unitctl.main(['--units', self.units, '--state',
                                          self.manager.state, 'enable',
                                          'devstack@missing.service']))


class TreeTest(test_base.TestCase):

    def test_the_series_a_stackrc_names(self):
        self.assertEqual('2026.2', tree.series(
            'X=1\nDEVSTACK_SERIES="2026.2"\n'))
        self.assertIsNone(tree.series('X=1\n'))

    def test_a_missing_tree_says_how_to_unpack_one(self):
        cache = self.useFixture(fixtures.TempDir()).path
        self.assertRaisesRegex(tree.TreeMissing,
                               r'python -m tests\.devstack\.tree unpack',
                               tree.require, cache)
