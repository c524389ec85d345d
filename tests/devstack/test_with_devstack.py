"""The plugin's every phase with devstack's own library, on real services.

tests/unit/devstack runs the phases against stand-ins of devstack's
helpers; here they run with devstack's (the pinned tree of
:mod:`tests.devstack.tree`): its ``iniset``, ``database_connection_url``,
``recreate_database`` against the machine's MariaDB,
``configure_keystone_authtoken_middleware``, ``create_service_user`` and
the catalog helpers against a real keystone, ``run_process`` writing
systemd units that tests/devstack/unitctl.py starts, ``wait_for_service``
and ``stop_process``. What is checked is what the system says: the
files as oslo.config parses them, the database's tables, keystone's
users and catalog, the processes' owners and command lines, the API
answering a token, the agent's and the collector's own log lines.

Three nodes: a controller on this machine (keystone and the rest of a
controller borrowed from the cloud tier's control plane: the ports of
tests/cloud/endpoints.py must be free), a compute node on this machine
(no libvirtd: the agent waits for it), and a compute node in a lab host
with libvirtd, where the agent starts for real.

``tox -e devstack`` (not in tox's default list: it needs the pinned
tree, which CI cannot download; doc/source/devstack.rst).
"""

import grp
import os
import re
import stat
import subprocess
import sys
import time

import fixtures
from oslo_config import cfg
import pymysql
from testtools import content

from tests import base as test_base
from tests.cloud import accounts
from tests.cloud import control
from tests.cloud import layout as lay
from tests.devstack import node as node_mod
from tests.devstack import tree
from tests.labhost import fixture as lab_fixture
from tests.labhost import topology as topology_mod

DB_USER = 'numa_devstack'
DB_PASSWORD = 'numa-devstack-db'
DB_NAME = 'numa_devstack_policy'
API_PORT = 8798
SERVICE_TYPE = 'numa-policy-devstack'
SERVICE_USER = 'numa-policy-devstack'
STACK = ('stack:install', 'stack:post-config', 'stack:extra',
         'stack:test-config')
# What devstack's lib/nova writes before plugins run (its NOVA_FILTERS).
NOVA_CONF = ('[filter_scheduler]\n'
             'enabled_filters = ComputeFilter,ComputeCapabilitiesFilter,'
             'ImagePropertiesFilter\n')
OUR_FILTERS = ['NumaPolicyFilter', 'NumaNicLocalityFilter',
               'NumaNodeLoadFilter']
LOCAL = {'SERVICE_HOST': '127.0.0.1', 'HOST_IP': '127.0.0.1',
         'RABBIT_HOST': '127.0.0.1', 'RABBIT_USERID': 'guest',
         'RABBIT_PASSWORD': 'guest'}
COMPUTE_SERVICES = 'n-cpu,placement-client'
WAIT = 60


def read_ini(path):
    sections = {}
    cfg.ConfigParser(path, sections).parse()
    return sections


def value(sections, section, option):
    return sections[section][option][-1]


def _mysql():
    return pymysql.connect(host='127.0.0.1', user='root', connect_timeout=10)


def database_user(create):
    """devstack's database account: it connects with a password, always."""
    connection = _mysql()
    try:
        with connection.cursor() as cursor:
            for host in ('127.0.0.1', 'localhost'):
                cursor.execute(f"DROP USER IF EXISTS '{DB_USER}'@'{host}'")
                if create:
                    cursor.execute(f"CREATE USER '{DB_USER}'@'{host}' "
                                   f"IDENTIFIED BY '{DB_PASSWORD}'")
                    cursor.execute(f"GRANT ALL PRIVILEGES ON *.* TO "
                                   f"'{DB_USER}'@'{host}'")
            if not create:
                cursor.execute(f'DROP DATABASE IF EXISTS `{DB_NAME}`')
    finally:
        connection.close()


def tables(database):
    connection = _mysql()
    try:
        with connection.cursor() as cursor:
            cursor.execute('SELECT table_name FROM information_schema.tables'
                           ' WHERE table_schema = %s', (database,))
            return sorted(row[0] for row in cursor.fetchall())
    finally:
        connection.close()


class DevstackTestCase(test_base.TestCase):

    def wait_for(self, what, predicate, timeout=WAIT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = predicate()
            if found:
                return found
            time.sleep(0.5)
        self.fail(f'not within {timeout} s: {what}')

    def assertRunsAs(self, facts, user, group=None):
        """The unit's command runs as ``user`` (and ``group``)."""
        running = facts['running']
        self.assertIsNotNone(running, 'not running:\n' + facts['log'][-2000:])
        self.assertEqual(user, running['user'])
        # A console script runs as its interpreter with the script next.
        argv = facts['unit']['ExecStart'][-1].split()
        self.assertEqual(argv, running['cmdline'][-len(argv):])
        self.assertTrue(facts['enabled'])
        if group is not None:
            self.assertEqual(grp.getgrnam(group).gr_gid, running['gid'])

    def assertStopped(self, facts):
        self.assertIsNone(facts['running'])
        self.assertFalse(facts['enabled'])


class LocalNodeTestCase(DevstackTestCase):

    def node(self, localrc, nova_conf=NOVA_CONF):
        node = node_mod.Node.lay_out({**LOCAL, **localrc}, nova_conf)
        self.addCleanup(node.close)
        self.addCleanup(self._attach_logs, node)
        return node

    def _attach_logs(self, node):
        self.addDetail('with_devstack.log',
                       content.text_content(node_mod.tail(node.log, 200)))
        for service in node_mod.SERVICES:
            self.addDetail(f'{service}.log', content.text_content(
                node.service_log(service)[-6000:]))


class ControllerTest(LocalNodeTestCase):
    """A controller: the collector and the API, keystone's accounts."""

    def setUp(self):
        super().setUp()
        database_user(create=True)
        self.addCleanup(database_user, create=False)
        # keystone (and the rest of a controller), from the cloud tier.
        workdir = self.useFixture(fixtures.TempDir()).path
        self.control = control.ControlPlane(os.path.join(workdir, 'cloud'))
        self.control.start()
        self.addCleanup(self.control.stop)

    def test_every_phase_with_devstacks_library(self):
        node = self.node({
            'ENABLED_SERVICES': 'key,mysql,rabbit,n-api,n-cond,n-sch,'
                                'placement-api,horizon',
            'DATABASE_USER': DB_USER,
            'DATABASE_PASSWORD': DB_PASSWORD,
            # devstack's SQLAlchemy plugin counting queries is installed
            # by devstack into its own venv, not here.
            'MYSQL_GATHER_PERFORMANCE': 'False',
            'ADMIN_PASSWORD': lay.ADMIN_PASSWORD,
            'SERVICE_PASSWORD': lay.SERVICE_PASSWORD,
            'NUMA_POLICY_ENABLE_HORIZON': 'True',
            'NUMA_POLICY_DB_NAME': DB_NAME,
            'NUMA_POLICY_API_LISTEN_ADDRESS': '127.0.0.1',
            'NUMA_POLICY_API_PORT': str(API_PORT),
            'NUMA_POLICY_REPORTS_TOPIC': 'numa_policy_reports_devstack',
            'NUMA_POLICY_SERVICE_USER': SERVICE_USER,
            'NUMA_POLICY_SERVICE_TYPE': SERVICE_TYPE,
            'NUMA_POLICY_SERVICE_NAME': 'nova-numa-policy-devstack',
        })
        keystone = lay.keystone_url()
        node.run(*STACK, keystone_uri=keystone)

        # post-config: nova.conf and ours, as oslo.config reads them.
        nova = read_ini(node.nova_conf)
        self.assertEqual(
            ['ComputeFilter', 'ComputeCapabilitiesFilter',
             'ImagePropertiesFilter', *OUR_FILTERS],
            value(nova, 'filter_scheduler', 'enabled_filters').split(','))
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          'placement_filters.all_filters'],
                         nova['filter_scheduler']['available_filters'])
        ours = read_ini(node.conf)
        self.assertEqual(
            f'mysql+pymysql://{DB_USER}:{DB_PASSWORD}@127.0.0.1/{DB_NAME}'
            '?charset=utf8',
            value(ours, 'numa_policy_collector', 'connection'))
        self.assertEqual('rabbit://guest:guest@127.0.0.1:5672/',
                         value(ours, 'DEFAULT', 'transport_url'))
        self.assertEqual(keystone, value(ours, 'keystone_authtoken',
                                         'auth_url'))
        # install: the panel's file in Horizon's enabled directory,
        # Horizon's own package file as it was.
        horizon_init = os.path.join(node.horizon_enabled, '__init__.py')
        self.assertEqual({'__init__.py', '_2190_admin_numa_policy_panel.py'},
                         set(os.listdir(node.horizon_enabled)))
        with open(horizon_init) as f:
            self.assertEqual(node_mod.HORIZON_INIT, f.read())

        # post-config: the service user, the catalog entry, in keystone.
        session = accounts.admin_session()
        identity = {'service_type': 'identity', 'interface': 'public'}
        users = session.get('/v3/users', params={'name': SERVICE_USER},
                            endpoint_filter=identity).json()['users']
        self.assertEqual(1, len(users))
        services = session.get('/v3/services', params={'type': SERVICE_TYPE},
                               endpoint_filter=identity).json()['services']
        self.assertEqual(1, len(services))
        endpoints = session.get(
            '/v3/endpoints', params={'service_id': services[0]['id']},
            endpoint_filter=identity).json()['endpoints']
        self.assertEqual([('public', f'http://127.0.0.1:{API_PORT}')],
                         [(e['interface'], e['url']) for e in endpoints])

        # extra: devstack's mysql made the database, db-sync its tables.
        self.assertTrue(tables(DB_NAME), f'no table in {DB_NAME}')
        # The processes devstack's units name, as the stack user.
        self.assertRunsAs(node.facts('numa-policy-api'), 'stack')
        self.assertRunsAs(node.facts('numa-policy-collector'), 'stack')
        self.wait_for('the collector listening', lambda: re.search(
            r'Collecting reports from topic numa_policy_reports_devstack',
            node.service_log('numa-policy-collector')))
        # The API checks a token as the user devstack configured it with.
        api = f'http://127.0.0.1:{API_PORT}/v1/hosts'
        answer = session.get(api, headers={
            'X-Auth-Token': session.get_token()}, authenticated=False,
            raise_exc=False)
        self.assertEqual(200, answer.status_code, answer.text[:500])
        anonymous = session.get(api, authenticated=False, raise_exc=False)
        self.assertEqual(401, anonymous.status_code)

        # unstack: devstack's stop_process stops and disables each unit.
        node.run('unstack')
        for service in ('numa-policy-api', 'numa-policy-collector'):
            self.assertStopped(node.facts(service))
        self.assertIn('Collector stopped; counters',
                      node.service_log('numa-policy-collector'))
        # clean: our files and the panel gone, Horizon's left.
        node.run('clean')
        self.assertFalse(os.path.exists(node.conf_dir))
        self.assertEqual(['__init__.py'], os.listdir(node.horizon_enabled))


class ComputeTest(LocalNodeTestCase):
    """A compute node here: the agent, its file, the locality signal."""

    def _kernel(self):
        """A two-node kernel's files with NUMA balancing off."""
        root = self.useFixture(fixtures.TempDir()).path
        os.chmod(root, 0o755)
        proc = os.path.join(root, 'proc')
        sysfs = os.path.join(root, 'sys')
        os.makedirs(os.path.join(proc, 'sys', 'kernel'))
        with open(os.path.join(proc, 'sys', 'kernel', 'numa_balancing'),
                  'w') as f:
            f.write('0\n')
        for node in (0, 1):
            os.makedirs(os.path.join(sysfs, 'devices', 'system', 'node',
                                     f'node{node}'))
        return proc, sysfs

    def test_every_phase_with_devstacks_library(self):
        proc, sysfs = self._kernel()
        node = self.node({
            'ENABLED_SERVICES': COMPUTE_SERVICES,
            'NUMA_POLICY_PROC_DIR': proc,
            'NUMA_POLICY_SYSFS_DIR': sysfs,
        })
        node.run(*STACK)

        ours = read_ini(node.conf)
        self.assertEqual('5', value(ours, 'numa_policy_agent', 'period'))
        self.assertNotIn('numa_policy_collector', ours)
        # The privsep daemons read a file only root may write.
        mode = os.stat(node.conf)
        self.assertEqual((0, 0o640), (mode.st_uid,
                                      stat.S_IMODE(mode.st_mode)))
        with open(os.path.join(proc, 'sys', 'kernel',
                               'numa_balancing')) as f:
            self.assertEqual('1', f.read().strip())

        agent = node.facts('numa-policy-agent')
        self.assertEqual(['libvirt'], agent['unit']['Group'])
        self.assertIn(f'--config-file {node.nova_cpu_conf} --config-file '
                      f'{node.conf}', agent['unit']['ExecStart'][-1])
        self.assertRunsAs(agent, 'stack', group='libvirt')
        # No libvirtd on this machine: the agent says so and waits.
        self.wait_for('the agent waiting for libvirt', lambda: re.search(
            r'Waiting for it\.', node.service_log('numa-policy-agent')))

        node.run('unstack')
        self.assertStopped(node.facts('numa-policy-agent'))
        self.assertIn('numa-policy-agent stopped',
                      node.service_log('numa-policy-agent'))
        node.run('clean')
        self.assertFalse(os.path.exists(node.conf_dir))


class LabComputeTest(DevstackTestCase):
    """A compute node in a lab host: its kernel, its libvirtd."""

    def setUp(self):
        super().setUp()
        self.lab = self.useFixture(lab_fixture.LabHostFixture(
            topology_mod.TWO_NODES, self.id())).lab
        # The driver shim's module in nova's package: devstack's venv is
        # the stack user's, this one root's, and read-only in the lab
        # host; the plugin's own run of the shim then finds it in place.
        subprocess.run([sys.executable, '-m', 'nova_numa_policy.virt.shim'],
                       check=True, capture_output=True)

    def call(self, function, *args, timeout=300):
        return self.lab.call(f'tests.devstack.inlab:{function}', *args,
                             timeout=timeout)

    def test_every_phase_with_devstacks_library(self):
        balancing = '/proc/sys/kernel/numa_balancing'
        before = self.lab.read(balancing).strip()
        self.addCleanup(self.lab.run, f'echo {before} > {balancing}')
        self.lab.run(f'echo 0 > {balancing}')
        root = self.call('lay_out', {
            **LOCAL, 'ENABLED_SERVICES': COMPUTE_SERVICES,
            # The driver extension, as the cloud's computes run it.
            'NUMA_POLICY_DRIVER_EXTENSION': 'True',
        }, NOVA_CONF, tree.require())
        self.addCleanup(self.call, 'close', root)
        self.addCleanup(lambda: self.addDetail(
            'with_devstack.log', content.text_content(self.call('log', root))))
        self.call('run', root, list(STACK), timeout=600)

        # The lab host's kernel: NUMA balancing turned on for the agent.
        self.assertEqual('1', self.lab.read(balancing).strip())
        agent = self.call('facts', root, 'numa-policy-agent')
        self.assertRunsAs(agent, 'stack', group='libvirt')
        # libvirtd answers here: the agent starts for real.
        self.wait_for('the agent starting', lambda: re.search(
            r'numa-policy-agent starting on \S+ \(libvirt qemu:///system',
            self.call('facts', root, 'numa-policy-agent')['log']),
            timeout=300)

        self.call('run', root, ['unstack'])
        stopped = self.call('facts', root, 'numa-policy-agent')
        self.assertStopped(stopped)
        self.assertIn('numa-policy-agent stopped', stopped['log'])
        self.call('run', root, ['clean'])
