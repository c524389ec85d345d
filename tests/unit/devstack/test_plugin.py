"""The devstack plugin, phase by phase, against stubbed devstack helpers.

tests/devstack/run_plugin.sh sources the plugin the way stack.sh does,
with devstack's ini helpers writing real files and every call that would
touch the system or a service recorded in a log. These tests read the files
back with oslo.config's own parser and check the recorded calls.
"""

import logging
import os
import re
import shutil
import subprocess
import tempfile

import fixtures
from oslo_config import cfg
import oslo_messaging.opts

from nova_numa_policy.conf import loops as loops_conf
from nova_numa_policy.conf import opts as nnp_opts
from nova_numa_policy.loops import options as loop_options

from agent.service import cmd as agent_cmd
from tests import base as test_base
from tests import fixtures as host_fixtures

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
RUNNER = os.path.join(ROOT, 'tests', 'devstack', 'run_plugin.sh')
DEVSTACK = os.path.join(ROOT, 'devstack')

ALL_IN_ONE = 'key,mysql,rabbit,n-api,n-cond,n-sch,n-cpu,placement-api,tempest'
COMPUTE_ONLY = 'n-cpu,placement-client'
CONTROLLER_ONLY = 'key,mysql,rabbit,n-api,n-cond,n-sch,placement-api,tempest'
# What devstack's lib/nova writes before plugins run (its NOVA_FILTERS).
DEVSTACK_FILTERS = ('ComputeFilter,ComputeCapabilitiesFilter,'
                    'ImagePropertiesFilter,ServerGroupAntiAffinityFilter,'
                    'ServerGroupAffinityFilter,SameHostFilter,'
                    'DifferentHostFilter')
OUR_FILTERS = ['NumaPolicyFilter', 'NumaNicLocalityFilter',
               'NumaNodeLoadFilter']
STACK = ('stack:install', 'stack:post-config', 'stack:extra',
         'stack:test-config')


def read_ini(path):
    """{section: {key: [values]}} as oslo.config parses the file."""
    sections = {}
    cfg.ConfigParser(path, sections).parse()
    return sections


class DevstackNode:
    """A temporary node: devstack's variables, files and the call log."""

    def __init__(self, root, services, nova_conf='', **overrides):
        self.root = root
        self.nova_conf = os.path.join(root, 'nova.conf')
        self.tempest_conf = os.path.join(root, 'tempest.conf')
        self.conf_dir = os.path.join(root, 'etc', 'nova-numa-policy')
        self.conf = os.path.join(self.conf_dir, 'nova-numa-policy.conf')
        self.data_dir = os.path.join(root, 'data', 'nova-numa-policy')
        self.bin_dir = os.path.join(root, 'bin')
        self.horizon_dir = os.path.join(root, 'horizon')
        self.call_log = os.path.join(root, 'calls.log')
        with open(self.nova_conf, 'w') as f:
            f.write(nova_conf)
        with open(self.tempest_conf, 'w') as f:
            f.write('[compute]\nmax_microversion = latest\n')
        self.env = {
            'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
            'HOME': root,
            'DEST': os.path.join(root, 'opt'),
            'DATA_DIR': os.path.join(root, 'data'),
            'SERVICE_PROTOCOL': 'http',
            'SERVICE_HOST': '192.0.2.10',
            'SERVICE_TIMEOUT': '60',
            'STACK_USER': 'stack',
            'REGION_NAME': 'RegionOne',
            'NOVA_CONF': self.nova_conf,
            'NOVA_CPU_CONF': os.path.join(root, 'nova-cpu.conf'),
            'NOVA_STATE_PATH': os.path.join(root, 'data', 'nova'),
            'TEMPEST_CONFIG': self.tempest_conf,
            'LIBVIRT_GROUP': 'libvirt',
            'HORIZON_DIR': self.horizon_dir,
            'VIRT_DRIVER': 'libvirt',
            'ENABLE_DEBUG_LOG_LEVEL': 'True',
            'ENABLED_SERVICES': services,
            'NUMA_POLICY_CONF_DIR': self.conf_dir,
            'NUMA_POLICY_TEST_CALL_LOG': self.call_log,
            'NUMA_POLICY_TEST_BIN_DIR': self.bin_dir,
            # No kernel files unless a test gives a tree of its own.
            'NUMA_POLICY_PROC_DIR': os.path.join(root, 'host', 'proc'),
            'NUMA_POLICY_SYSFS_DIR': os.path.join(root, 'host', 'sys'),
        }
        self.env.update(overrides)

    def run(self, *steps):
        result = subprocess.run(['bash', RUNNER, *steps], env=self.env,
                                capture_output=True, text=True, timeout=60)
        if result.returncode:
            raise AssertionError(
                f'{" ".join(steps)} failed ({result.returncode}):\n'
                f'{result.stderr[-4000:]}')
        return result

    def calls(self, name=None):
        """Recorded calls as tuples, optionally only those of ``name``."""
        if not os.path.exists(self.call_log):
            return []
        with open(self.call_log) as f:
            calls = [tuple(line.rstrip('\n').split('\t')) for line in f]
        return [c for c in calls if name is None or c[0] == name]

    def started(self):
        return {call[1]: call[2:] for call in self.calls('run_process')}

    def project_conf(self):
        return read_ini(self.conf)


class PluginTestCase(test_base.TestCase):

    def node(self, services=ALL_IN_ONE, nova_conf='', **overrides):
        root = tempfile.mkdtemp(prefix='devstack-')
        self.addCleanup(shutil.rmtree, root, True)
        return DevstackNode(root, services, nova_conf, **overrides)


class NovaConfigTest(PluginTestCase):

    def test_filters_appended_to_devstack_filters(self):
        node = self.node(nova_conf=(
            f'[filter_scheduler]\nenabled_filters = {DEVSTACK_FILTERS}\n'))
        node.run(*STACK)
        section = read_ini(node.nova_conf)['filter_scheduler']
        self.assertEqual(
            [DEVSTACK_FILTERS + ',' + ','.join(OUR_FILTERS)],
            section['enabled_filters'])

    def test_available_filters_keep_novas_own(self):
        node = self.node()
        node.run(*STACK)
        section = read_ini(node.nova_conf)['filter_scheduler']
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          'placement_filters.all_filters'],
                         section['available_filters'])
        self.assertEqual(['nova.scheduler.weights.all_weighers,'
                          'placement_filters.all_weighers'],
                         section['weight_classes'])

    def test_without_enabled_filters_novas_defaults_are_kept(self):
        node = self.node()
        node.run('stack:post-config')
        enabled = read_ini(node.nova_conf)['filter_scheduler'][
            'enabled_filters'][0].split(',')
        self.assertEqual(nova_default('enabled_filters') + OUR_FILTERS,
                         enabled)

    def test_nova_conf_is_valid_for_novas_own_options(self):
        # Parse the result with nova's real option definitions: a MultiStr
        # written as one line, or a typo in a group, would show here.
        node = self.node(nova_conf=(
            f'[filter_scheduler]\nenabled_filters = {DEVSTACK_FILTERS}\n'))
        node.run('stack:post-config')
        from nova.conf import scheduler
        conf = cfg.ConfigOpts()
        scheduler.register_opts(conf)
        conf([], default_config_files=[node.nova_conf])
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          'placement_filters.all_filters'],
                         conf.filter_scheduler.available_filters)
        self.assertEqual(OUR_FILTERS,
                         conf.filter_scheduler.enabled_filters[-3:])
        self.assertEqual(['nova.scheduler.weights.all_weighers',
                          'placement_filters.all_weighers'],
                         conf.filter_scheduler.weight_classes)

    def test_post_config_twice_changes_nothing(self):
        node = self.node()
        node.run('stack:post-config')
        with open(node.nova_conf) as f:
            first = f.read()
        node.run('stack:post-config')
        with open(node.nova_conf) as f:
            self.assertEqual(first, f.read())

    def test_reports_topic_shared_with_the_agents(self):
        node = self.node(NUMA_POLICY_REPORTS_TOPIC='reports_x')
        node.run('stack:post-config')
        self.assertEqual(['reports_x'], read_ini(node.nova_conf)[
            'numa_policy_reports']['topic'])
        self.assertEqual(['reports_x'], node.project_conf()[
            'numa_policy_reports']['topic'])

    def test_report_ttl_is_the_same_for_the_scheduler_and_the_api(self):
        node = self.node(NUMA_POLICY_REPORT_TTL='60')
        node.run('stack:post-config')
        for parsed in (read_ini(node.nova_conf), node.project_conf()):
            self.assertEqual(['60'],
                             parsed['numa_policy_scheduler']['report_ttl'])

    def test_report_ttl_left_at_its_default_unless_set(self):
        node = self.node()
        node.run('stack:post-config')
        self.assertNotIn('numa_policy_scheduler', read_ini(node.nova_conf))

    def test_uplinks_handed_over_in_novas_state_directory(self):
        # In nova.conf, so nova-compute (the driver extension) and the
        # agent (which reads nova-cpu.conf first) name the same file.
        node = self.node()
        node.run('stack:post-config')
        self.assertEqual(
            [os.path.join(node.env['NOVA_STATE_PATH'],
                          'numa-policy-uplinks.json')],
            read_ini(node.nova_conf)['numa_policy']['uplinks_file'])


def nova_default(option):
    from nova.conf import scheduler
    for opt in scheduler.filter_scheduler_opts:
        if opt.name == option:
            return list(opt.default)
    raise LookupError(option)


class NovaDefaultsTest(test_base.TestCase):
    """The settings' copies of nova's defaults are still nova's."""

    def _setting(self, name):
        with open(os.path.join(DEVSTACK, 'settings')) as f:
            for line in f:
                if line.startswith(f'{name}=${{{name}:-'):
                    return line.split(':-', 1)[1].rstrip('}\n').split(',')
        raise LookupError(name)

    def test_default_filters_match_nova(self):
        self.assertEqual(nova_default('enabled_filters'),
                         self._setting('NUMA_POLICY_NOVA_DEFAULT_FILTERS'))

    def test_default_weighers_match_nova(self):
        self.assertEqual(nova_default('weight_classes'),
                         self._setting('NUMA_POLICY_NOVA_DEFAULT_WEIGHERS'))


class DriverExtensionTest(PluginTestCase):

    def _compute_driver(self, node):
        node.run('stack:post-config')
        return read_ini(node.nova_conf).get('DEFAULT', {}).get(
            'compute_driver')

    def test_enabled_installs_the_shim_and_sets_the_compute_driver(self):
        node = self.node(NUMA_POLICY_DRIVER_EXTENSION='True')
        self.assertEqual(['numa_policy.NumaPolicyLibvirtDriver'],
                         self._compute_driver(node))
        self.assertEqual([('numa-policy-nova-driver-shim',)],
                         node.calls('numa-policy-nova-driver-shim'))

    def test_disabled_by_default(self):
        node = self.node()
        self.assertIsNone(self._compute_driver(node))
        self.assertEqual([], node.calls('numa-policy-nova-driver-shim'))

    def test_not_on_a_node_without_nova_compute(self):
        node = self.node(CONTROLLER_ONLY, NUMA_POLICY_DRIVER_EXTENSION='True')
        self.assertIsNone(self._compute_driver(node))

    def test_other_virt_driver_warns_and_keeps_its_driver(self):
        node = self.node(NUMA_POLICY_DRIVER_EXTENSION='True',
                         VIRT_DRIVER='fake')
        self.assertIsNone(self._compute_driver(node))
        [warning] = node.calls('warn')
        self.assertIn('VIRT_DRIVER=libvirt', warning[1])


def load_project_conf(test, node):
    """The file through the project's real options; unknown keys fail."""
    conf = cfg.ConfigOpts()
    for module in nnp_opts.GROUP_MODULES:
        module.register_opts(conf)
    loop_options.register_opts(conf)
    for group, group_opts in oslo_messaging.opts.list_opts():
        conf.register_opts(group_opts, group=group)
    conf.register_opt(cfg.BoolOpt('debug'))
    conf([], default_config_files=[node.conf])
    ours = {group.name for group, _ in nnp_opts.list_opts()}
    for section, values in node.project_conf().items():
        if section == 'keystone_authtoken':
            continue  # written by devstack's own helper (stubbed here)
        known = conf if section == 'DEFAULT' else conf[section]
        for key in values:
            test.assertIn(key, known, f'[{section}] {key} is no option')
        if section.startswith('numa_policy'):
            test.assertIn(section, ours)
    return conf


class ProjectConfigTest(PluginTestCase):

    def _load(self, node):
        return load_project_conf(self, node)

    def test_all_in_one_configures_every_component(self):
        node = self.node()
        node.run('stack:post-config')
        conf = self._load(node)
        self.assertEqual(8799, conf.numa_policy_api.bind_port)
        self.assertEqual('keystone', conf.numa_policy_api.auth_strategy)
        self.assertEqual(5.0, conf.numa_policy_agent.period)
        self.assertEqual('qemu:///system', conf.numa_policy_agent.libvirt_uri)
        self.assertEqual(
            'rabbit://stackrabbit:secret@192.0.2.10:5672/',
            conf.transport_url)
        self.assertEqual(
            'mysql+pymysql://root:secret@127.0.0.1/nova_numa_policy'
            '?charset=utf8', conf.numa_policy_collector.connection)
        self.assertIn(('configure_keystone_authtoken_middleware',
                       node.conf, 'numa-policy'),
                      node.calls())

    def test_api_port_and_physnets_are_settings(self):
        node = self.node(NUMA_POLICY_API_PORT='8888',
                         NUMA_POLICY_AGENT_PHYSNET_INTERFACES='public:br-ex')
        node.run('stack:post-config')
        conf = self._load(node)
        self.assertEqual(8888, conf.numa_policy_api.bind_port)
        self.assertEqual({'public': 'br-ex'},
                         conf.numa_policy_agent.physnet_interfaces)

    def test_cpu_measurements_are_off_unless_asked_for(self):
        for setting, option in (
                ('NUMA_POLICY_AGENT_BANDWIDTH_MONITORING',
                 'bandwidth_monitoring'),
                ('NUMA_POLICY_AGENT_HARDWARE_SAMPLING', 'hardware_sampling'),
                ('NUMA_POLICY_AGENT_ACCESS_MONITORING', 'access_monitoring')):
            node = self.node()
            node.run('stack:post-config')
            self.assertFalse(getattr(self._load(node).numa_policy_agent,
                                     option))
            node = self.node(COMPUTE_ONLY,
                             NUMA_POLICY_AGENT_PAGE_MIGRATION='False',
                             **{setting: 'True'})
            node.run('stack:post-config')
            self.assertTrue(getattr(self._load(node).numa_policy_agent,
                                    option))
            # Its daemon is privileged too: the file is root's.
            self.assertIn(('sudo_chmod', '0640', node.conf), node.calls())

    def test_the_io_path_is_off_unless_asked_for(self):
        node = self.node()
        node.run('stack:post-config')
        conf = self._load(node)
        self.assertFalse(conf.numa_policy_agent.io_path_steering)
        self.assertEqual(list(loops_conf.DEFAULT_LOOPS),
                         conf.numa_policy_loops.enabled_loops)
        node = self.node(COMPUTE_ONLY,
                         NUMA_POLICY_AGENT_PAGE_MIGRATION='False',
                         NUMA_POLICY_AGENT_IO_PATH_STEERING='True')
        node.run('stack:post-config')
        conf = self._load(node)
        self.assertTrue(conf.numa_policy_agent.io_path_steering)
        # The agent's own defaults, and iopath.
        self.assertEqual([*loops_conf.DEFAULT_LOOPS, 'iopath'],
                         conf.numa_policy_loops.enabled_loops)
        # Its daemon is privileged: the file is root's.
        self.assertIn(('sudo_chmod', '0640', node.conf), node.calls())

    def test_compute_node_gets_only_the_agent(self):
        node = self.node(COMPUTE_ONLY)
        node.run('stack:post-config')
        self._load(node)
        sections = set(node.project_conf())
        self.assertIn('numa_policy_agent', sections)
        self.assertNotIn('numa_policy_collector', sections)
        self.assertNotIn('numa_policy_api', sections)

    def test_controller_gets_no_agent(self):
        node = self.node(CONTROLLER_ONLY)
        node.run('stack:post-config')
        self.assertNotIn('numa_policy_agent', node.project_conf())

    def test_sqlite_without_mysql(self):
        node = self.node(ALL_IN_ONE.replace('mysql,', ''))
        node.run('stack:post-config', 'stack:extra')
        conf = self._load(node)
        self.assertEqual(
            f'sqlite:///{node.data_dir}/collector.sqlite',
            conf.numa_policy_collector.connection)
        self.assertEqual([], node.calls('recreate_database'))
        self.assertTrue(os.path.isdir(node.data_dir))


class AgentStartupTest(PluginTestCase):
    """The agent built from what devstack writes, on a two-node host.

    libvirt's test driver and a sysfs tree stand in for the compute
    node; the page mover asks this machine's kernel for move_pages(2).
    The agent's startup log says which loops it started and skipped.
    """

    def started_loops(self, balancing='0', **overrides):
        """The loops started on a host whose sysctl is ``balancing``.

        None: a kernel without NUMA balancing.
        """
        tmp = self.useFixture(fixtures.TempDir()).path
        root = host_fixtures.two_sockets_nic_on_node1(
            os.path.join(tmp, 'root'))
        if balancing is not None:
            host_fixtures.write_sysctl(root, 'kernel/numa_balancing',
                                       balancing)
        node = self.node(COMPUTE_ONLY,
                         NUMA_POLICY_PROC_DIR=os.path.join(root, 'proc'),
                         NUMA_POLICY_SYSFS_DIR=os.path.join(root, 'sys'),
                         **overrides)
        self.stack_output = node.run('stack:post-config').stdout
        conf = load_project_conf(self, node)
        uri = 'test://' + host_fixtures.write_host_xml(
            os.path.join(tmp, 'host.xml'), [])
        # Only the host differs from a devstack compute node. (Overrides
        # live in the option group, shared by every ConfigOpts.)
        for option, value in (('libvirt_uri', uri), ('sysfs_root', root)):
            conf.set_override(option, value, group='numa_policy_agent')
            self.addCleanup(conf.clear_override, option,
                            group='numa_policy_agent')
        # nova.conf's, which the agent reads first (not loaded here).
        conf.set_override('uplinks_file', os.path.join(tmp, 'uplinks.json'),
                          group='numa_policy')
        self.addCleanup(conf.clear_override, 'uplinks_file',
                        group='numa_policy')
        log = self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        agent_cmd.build_agent(conf)
        line = re.search(r'Rebalancing loops started: (.*); not started: '
                         r'(.*)', log.output)
        self.assertIsNotNone(line, log.output)
        return (set(line.group(1).split(', ')),
                set(line.group(2).split(', ')), log.output)

    def test_every_loop_the_host_supports_starts(self):
        # The kernel's NUMA balancing was off: stack turns it on, and the
        # agent then has its locality signal.
        started, skipped, log = self.started_loops(balancing='0')
        self.assertEqual({'brm', 'vnuioa', 'auto', 'carrefour', 'tiering'},
                         started, log)
        self.assertEqual({'none'}, skipped, log)
        self.assertIn('turned on kernel.numa_balancing', self.stack_output)

    def test_a_kernel_without_numa_balancing_runs_no_carrefour(self):
        started, skipped, log = self.started_loops(balancing=None)
        self.assertEqual({'brm', 'vnuioa', 'auto', 'tiering'}, started, log)
        self.assertEqual({'carrefour'}, skipped, log)
        self.assertIn('loop carrefour not started: backend libvirt lacks '
                      "['access-counters']", log)
        self.assertIn('this kernel has no NUMA balancing', self.stack_output)

    def test_left_as_it_is_when_the_operator_says_so(self):
        started, skipped, log = self.started_loops(
            balancing='0', NUMA_POLICY_NUMA_BALANCING='False')
        self.assertEqual({'carrefour'}, skipped, log)

    def test_without_page_migration_the_page_moving_loops_stay_off(self):
        started, skipped, log = self.started_loops(
            NUMA_POLICY_AGENT_PAGE_MIGRATION='False')
        self.assertEqual({'brm'}, started, log)
        self.assertEqual({'carrefour', 'vnuioa', 'auto', 'tiering'}, skipped,
                         log)
        # The signal alone starts nothing that moves pages.
        self.assertIn('turned on kernel.numa_balancing', self.stack_output)

    def test_the_privsep_daemon_gets_a_file_only_root_may_write(self):
        node = self.node(COMPUTE_ONLY)
        node.run('stack:post-config')
        self.assertIn(('sudo_chown', 'root:stack', node.conf), node.calls())
        self.assertIn(('sudo_chmod', '0640', node.conf), node.calls())


class KeystoneTest(PluginTestCase):

    def test_service_and_endpoint_registered(self):
        node = self.node()
        node.run('stack:post-config')
        self.assertEqual([('create_service_user', 'numa-policy')],
                         node.calls('create_service_user'))
        [service] = node.calls('get_or_create_service')
        self.assertEqual('numa-policy', service[2])
        self.assertEqual(
            [('get_or_create_endpoint', 'numa-policy', 'RegionOne',
              'http://192.0.2.10:8799')],
            node.calls('get_or_create_endpoint'))

    def test_nothing_registered_where_the_api_does_not_run(self):
        node = self.node(COMPUTE_ONLY)
        node.run('stack:post-config')
        self.assertEqual([], node.calls('get_or_create_service'))
        self.assertEqual([], node.calls('get_or_create_endpoint'))


class ServicesTest(PluginTestCase):

    def test_all_in_one_starts_three_services(self):
        node = self.node()
        node.run(*STACK)
        command = f'--config-file {node.conf}'
        self.assertEqual({
            'numa-policy-collector': (
                f'{node.bin_dir}/numa-policy-collector {command}',),
            'numa-policy-api': (f'{node.bin_dir}/numa-policy-api {command}',),
            'numa-policy-agent': (
                f'{node.bin_dir}/numa-policy-agent --config-file '
                f'{node.env["NOVA_CPU_CONF"]} {command}', 'libvirt'),
        }, node.started())
        self.assertEqual(
            [('wait_for_service', '60', 'http://192.0.2.10:8799')],
            node.calls('wait_for_service'))

    def test_schema_created_before_the_collector_starts(self):
        node = self.node()
        node.run(*STACK)
        names = [call[0] for call in node.calls()]
        self.assertLess(names.index('recreate_database'),
                        names.index('numa-policy-db-sync'))
        self.assertLess(names.index('numa-policy-db-sync'),
                        names.index('run_process'))
        self.assertIn(('numa-policy-db-sync', '--config-file', node.conf),
                      node.calls())

    def test_compute_node_starts_only_the_agent(self):
        node = self.node(COMPUTE_ONLY)
        node.run(*STACK)
        self.assertEqual(['numa-policy-agent'], list(node.started()))
        self.assertEqual([], node.calls('numa-policy-db-sync'))

    def test_agent_reads_the_ovs_agents_bridge_mappings_where_it_runs(self):
        ml2_conf = os.path.join(tempfile.mkdtemp(prefix='ml2-'),
                                'ml2_conf.ini')
        self.addCleanup(shutil.rmtree, os.path.dirname(ml2_conf), True)
        with open(ml2_conf, 'w') as f:
            f.write('[ovs]\nbridge_mappings = physnet1:br-physnet1\n')
        # devstack's Q_PLUGIN_CONF_FILE has no leading slash.
        node = self.node(COMPUTE_ONLY + ',q-agt',
                         Q_PLUGIN_CONF_FILE=ml2_conf.lstrip('/'))
        node.run(*STACK)
        (command, _group) = node.started()['numa-policy-agent']
        self.assertEqual(
            f'{node.bin_dir}/numa-policy-agent --config-file '
            f'{node.env["NOVA_CPU_CONF"]} --config-file {ml2_conf} '
            f'--config-file {node.conf}', command)

    def test_agent_reads_no_neutron_file_without_the_ovs_agent(self):
        node = self.node(COMPUTE_ONLY, Q_PLUGIN_CONF_FILE='etc/absent.ini')
        node.run(*STACK)
        (command, _group) = node.started()['numa-policy-agent']
        self.assertNotIn('absent', command)

    def test_controller_without_nova_compute_runs_no_agent(self):
        node = self.node(CONTROLLER_ONLY)
        node.run(*STACK)
        self.assertEqual({'numa-policy-collector', 'numa-policy-api'},
                         set(node.started()))

    def test_disable_service_in_local_conf_wins(self):
        node = self.node(DISABLED_SERVICES='numa-policy-api')
        node.run(*STACK)
        self.assertNotIn('numa-policy-api', node.started())
        self.assertEqual([], node.calls('get_or_create_endpoint'))

    def test_unstack_stops_every_service(self):
        node = self.node()
        node.run('unstack')
        self.assertEqual(
            {'numa-policy-agent', 'numa-policy-collector', 'numa-policy-api'},
            {call[1] for call in node.calls('stop_process')})

    def test_clean_removes_configuration_and_data(self):
        node = self.node()
        node.run(*STACK)
        self.assertTrue(os.path.exists(node.conf))
        node.run('clean')
        self.assertFalse(os.path.exists(node.conf_dir))
        self.assertFalse(os.path.exists(node.data_dir))

    def test_phases_without_work_do_nothing(self):
        node = self.node()
        node.run('stack:pre-install', 'stack:unknown-future-phase')
        self.assertEqual([], node.calls())

    def test_install_develops_the_checkout(self):
        # A node that runs the agent takes its extra (numpy); a controller
        # gets the plain package.
        node = self.node(NUMA_POLICY_DIR='/src/nnp')
        node.run('stack:install')
        self.assertEqual([('setup_develop', '/src/nnp', 'agent')],
                         node.calls('setup_develop'))
        node = self.node(services=CONTROLLER_ONLY, NUMA_POLICY_DIR='/src/nnp')
        node.run('stack:install')
        self.assertEqual([('setup_develop', '/src/nnp')],
                         node.calls('setup_develop'))


class HorizonTest(PluginTestCase):

    def _panel_checkout(self, node, files=('_1990_numa_policy_panel.py',)):
        panel_dir = os.path.join(node.root, 'panel', 'enabled')
        os.makedirs(panel_dir)
        for name in files:
            with open(os.path.join(panel_dir, name), 'w') as f:
                f.write('PANEL = "numa_policy"\n')
        os.makedirs(os.path.join(node.horizon_dir, 'openstack_dashboard',
                                 'local', 'enabled'))
        node.env['NUMA_POLICY_HORIZON_ENABLED_DIR'] = panel_dir
        return os.path.join(node.horizon_dir, 'openstack_dashboard', 'local',
                            'enabled', files[0]) if files else None

    def test_disabled_by_default_with_a_log_line(self):
        node = self.node(ALL_IN_ONE + ',horizon')
        node.run('stack:install')
        summaries = [call[1] for call in node.calls('echo_summary')]
        self.assertIn('Horizon panel skipped', ' '.join(summaries))

    def test_enabled_without_horizon_is_a_logged_no_op(self):
        node = self.node(NUMA_POLICY_ENABLE_HORIZON='True')
        installed = self._panel_checkout(node)
        node.run('stack:install')
        self.assertFalse(os.path.exists(installed))
        summaries = [call[1] for call in node.calls('echo_summary')]
        self.assertIn('Horizon panel skipped', ' '.join(summaries))

    def test_enabled_with_horizon_installs_and_clean_removes(self):
        node = self.node(ALL_IN_ONE + ',horizon',
                         NUMA_POLICY_ENABLE_HORIZON='True')
        installed = self._panel_checkout(node)
        node.run('stack:install')
        self.assertTrue(os.path.exists(installed))
        node.run('clean')
        self.assertFalse(os.path.exists(installed))

    def test_horizons_own_package_file_is_left_alone(self):
        # The panel's package has an __init__.py, and so has Horizon's
        # local/enabled: installing must not overwrite Horizon's, nor
        # clean remove it.
        node = self.node(ALL_IN_ONE + ',horizon',
                         NUMA_POLICY_ENABLE_HORIZON='True')
        installed = self._panel_checkout(
            node, files=('_1990_numa_policy_panel.py', '__init__.py'))
        horizons = os.path.join(os.path.dirname(installed), '__init__.py')
        with open(horizons, 'w') as f:
            f.write('# Horizon\'s\n')
        node.run('stack:install')
        node.run('clean')
        self.assertFalse(os.path.exists(installed))
        with open(horizons) as f:
            self.assertEqual('# Horizon\'s\n', f.read())

    def test_enabled_but_no_panel_in_checkout_warns(self):
        node = self.node(ALL_IN_ONE + ',horizon',
                         NUMA_POLICY_ENABLE_HORIZON='True')
        self._panel_checkout(node, files=())
        node.run('stack:install')
        [warning] = node.calls('warn')
        self.assertIn('No Horizon panel files', warning[1])


class TempestConfigTest(PluginTestCase):

    def test_plugin_group_and_service_available(self):
        node = self.node(NUMA_POLICY_DRIVER_EXTENSION='True')
        node.run(*STACK)
        conf = read_ini(node.tempest_conf)
        self.assertEqual(['True'], conf['service_available']['numa_policy'])
        self.assertEqual({
            'catalog_type': ['numa-policy'],
            'endpoint_type': ['public'],
            'driver_extension': ['True'],
            'report_timeout': ['180'],
        }, conf['numa_policy'])

    def test_options_exist_in_the_tempest_plugin(self):
        node = self.node(NUMA_POLICY_TEMPEST_SSH_KEY='/home/stack/.ssh/id',
                         NUMA_POLICY_TEMPEST_SSH_HOSTS='cmp1:192.0.2.21')
        node.run('stack:test-config')
        from nova_numa_policy.tempest_plugin import config
        known = {opt.name for opt in config.NumaPolicyGroup}
        written = read_ini(node.tempest_conf)['numa_policy']
        self.assertLessEqual(set(written), known)
        self.assertEqual(['stack'], written['ssh_user'])
        self.assertEqual(['cmp1:192.0.2.21'], written['ssh_hosts'])

    def test_no_ssh_settings_without_a_key(self):
        node = self.node()
        node.run('stack:test-config')
        written = read_ini(node.tempest_conf)['numa_policy']
        self.assertNotIn('ssh_user', written)

    def test_unavailable_where_the_api_does_not_run(self):
        node = self.node(CONTROLLER_ONLY, DISABLED_SERVICES='numa-policy-api')
        node.run('stack:test-config')
        self.assertEqual(['False'], read_ini(node.tempest_conf)[
            'service_available']['numa_policy'])

    def test_untouched_without_tempest(self):
        node = self.node(ALL_IN_ONE.replace(',tempest', ''))
        node.run('stack:test-config')
        self.assertNotIn('numa_policy', read_ini(node.tempest_conf))


class ShellcheckTest(test_base.TestCase):

    def test_plugin_is_shellcheck_clean(self):
        shellcheck = shutil.which('shellcheck')
        if shellcheck is None:
            self.fail('shellcheck is not installed: apt-get install '
                      'shellcheck (CI installs it in .ci/run)')
        lib = os.path.join(DEVSTACK, 'lib')
        files = [os.path.join(DEVSTACK, 'plugin.sh'),
                 os.path.join(DEVSTACK, 'settings')]
        files += sorted(os.path.join(lib, name) for name in os.listdir(lib))
        harness = os.path.join(ROOT, 'tests', 'devstack')
        files += [os.path.join(harness, name) for name in
                  ('run_plugin.sh', 'stubs.sh', 'fake_console_script',
                   'with_devstack.sh')]
        result = subprocess.run([shellcheck, '-x', *files], cwd=DEVSTACK,
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(0, result.returncode, result.stdout + result.stderr)
