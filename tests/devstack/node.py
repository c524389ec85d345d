"""A devstack node in a temporary tree, with devstack's own library.

:class:`Node` lays out what stack.sh would find on a node where
devstack's earlier steps have run: the pinned devstack tree
(:mod:`tests.devstack.tree`) copied to ``<root>/devstack`` with a
``local.conf`` that enables the plugin, ``$DEST`` holding the plugin's
checkout (this repository), the requirements checkout devstack's
``setup_develop`` edits (its upper constraints: ours), nova's files as
devstack's lib/nova leaves them, all owned by the stack user; then runs
the plugin's phases through tests/devstack/with_devstack.sh as that
user. What devstack starts goes through tests/devstack/unitctl.py.

devstack runs as a user with sudo, never as root: the stack user is
made by devstack's own ``tools/create-stack-user.sh`` (tox's
``devstack`` environment runs it first).
"""

import os
import pwd
import shutil
import subprocess
import sys
import tempfile

import psutil

from tests.cloud.services import tail
from tests.devstack import tree
from tests.devstack import unitctl

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RUNNER = os.path.join(HERE, 'with_devstack.sh')
UNITCTL = os.path.join(HERE, 'unitctl.py')
STACK_USER = 'stack'
PLUGIN = 'nova-numa-policy'
PHASE_TIMEOUT = 300
HORIZON_INIT = '# Horizon\'s local/enabled package\n'
# What the plugin starts, by devstack service name.
SERVICES = ('numa-policy-api', 'numa-policy-collector', 'numa-policy-agent')


class PhaseFailed(Exception):
    """with_devstack.sh ended non-zero; the message ends with its output."""


class Node:
    """One node's tree under ``root`` (:meth:`lay_out` makes one)."""

    def __init__(self, root):
        self.root = root
        self.devstack = os.path.join(root, 'devstack')
        self.dest = os.path.join(root, 'opt')
        self.data = os.path.join(root, 'data')
        self.etc = os.path.join(root, 'etc')
        self.units = os.path.join(self.etc, 'systemd', 'system')
        self.state = os.path.join(root, 'units')
        self.log = os.path.join(root, 'with_devstack.log')
        self.conf_dir = os.path.join(self.etc, PLUGIN)
        self.conf = os.path.join(self.conf_dir, PLUGIN + '.conf')
        self.nova_conf = os.path.join(self.etc, 'nova', 'nova.conf')
        self.nova_cpu_conf = os.path.join(self.etc, 'nova', 'nova-cpu.conf')
        self.horizon_enabled = os.path.join(
            self.dest, 'horizon', 'openstack_dashboard', 'local', 'enabled')
        self.manager = unitctl.Manager(self.units, self.state)

    @classmethod
    def lay_out(cls, localrc, nova_conf=None, devstack_tree=None):
        """A new node in a fresh temporary directory.

        ``localrc``: local.conf's [[local|localrc]] settings beyond the
        node's paths; ``nova_conf``: nova.conf's and nova-cpu.conf's
        text as devstack's lib/nova leaves them, if this node has them;
        ``devstack_tree``: the pinned tree (by default the lab cache's,
        which a lab host, with a home of its own, is told).
        """
        root = tempfile.mkdtemp(prefix='numa-devstack-')
        os.chmod(root, 0o755)
        node = cls(root)
        node._lay_out(localrc, nova_conf, devstack_tree or tree.require())
        return node

    def _lay_out(self, localrc, nova_conf, devstack_tree):
        shutil.copytree(devstack_tree, self.devstack, symlinks=True)
        for path in (self.dest, self.data, self.units,
                     os.path.dirname(self.nova_conf), self.horizon_enabled):
            os.makedirs(path, exist_ok=True)
        # Horizon's own package file, as a Horizon checkout has it.
        with open(os.path.join(self.horizon_enabled, '__init__.py'),
                  'w') as f:
            f.write(HORIZON_INIT)
        os.symlink(ROOT, os.path.join(self.dest, PLUGIN))
        self._requirements()
        if nova_conf is not None:
            for path in (self.nova_conf, self.nova_cpu_conf):
                with open(path, 'w') as f:
                    f.write(nova_conf)
        settings = {
            # Packages are in place (this environment's virtualenv, which
            # devstack's global venv is): devstack's own offline mode.
            'OFFLINE': 'True',
            'DEST': self.dest,
            'DATA_DIR': self.data,
            'DEVSTACK_VENV': sys.prefix,
            'NUMA_POLICY_CONF_DIR': self.conf_dir,
            **localrc}
        with open(os.path.join(self.devstack, 'local.conf'), 'w') as f:
            f.write(local_conf(settings, self.plugin_url()))
        user = pwd.getpwnam(STACK_USER)
        for top, dirs, files in os.walk(self.root):
            for name in [top, *(os.path.join(top, n) for n in dirs + files)]:
                os.lchown(name, user.pw_uid, user.pw_gid)

    def _requirements(self):
        """$DEST/requirements as devstack's setup_develop edits it."""
        requirements = os.path.join(self.dest, 'requirements')
        os.makedirs(os.path.join(requirements, '.venv', 'bin'))
        shutil.copyfile(os.path.join(ROOT, 'constraints.txt'),
                        os.path.join(requirements, 'upper-constraints.txt'))
        os.symlink(os.path.join(sys.prefix, 'bin', 'edit-constraints'),
                   os.path.join(requirements, '.venv', 'bin',
                                'edit-constraints'))

    def plugin_url(self):
        return 'file://' + os.path.join(self.dest, PLUGIN)

    def systemctl(self):
        return ' '.join(['sudo', sys.executable, UNITCTL, '--units',
                         self.units, '--state', self.state])

    def run(self, *steps, keystone_uri=None):
        """The phases ``steps`` ("stack:install", "unstack", ...) in order."""
        env = {
            'PATH': ':'.join([os.path.join(sys.prefix, 'bin'),
                              '/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin']),
            # The plugin's checkout is this repository, root's.
            'GIT_CONFIG_COUNT': '1', 'GIT_CONFIG_KEY_0': 'safe.directory',
            'GIT_CONFIG_VALUE_0': '*',
            'NUMA_DEVSTACK_ETC': self.etc,
            'NUMA_DEVSTACK_SYSTEMCTL': self.systemctl(),
        }
        if keystone_uri:
            env['NUMA_DEVSTACK_KEYSTONE_URI'] = keystone_uri
        command = ['sudo', '-u', STACK_USER, '-H', 'env',
                   *(f'{k}={v}' for k, v in env.items()),
                   'bash', RUNNER, self.devstack, *steps]
        with open(self.log, 'a') as log:
            result = subprocess.run(command, cwd=self.root, stdout=log,
                                    stderr=subprocess.STDOUT,
                                    timeout=PHASE_TIMEOUT)
        if result.returncode:
            raise PhaseFailed(f'{" ".join(steps)} failed '
                              f'({result.returncode}); end of {self.log}:\n'
                              + tail(self.log))

    def unit(self, service):
        """The unit file devstack wrote for ``service``, parsed."""
        return self.manager.unit(unit_name(service))

    def pid(self, service):
        return self.manager.pid(unit_name(service))

    def service_log(self, service):
        try:
            with open(self.manager.log_path(unit_name(service))) as f:
                return f.read()
        except FileNotFoundError:
            return ''

    def facts(self, service):
        """What the system says of ``service``: JSON, for a lab host's call.

        ``unit``: its unit file's [Service] section as devstack wrote it;
        ``running``: its main process's user, real group and command line
        (None when not running); ``enabled``; ``log``: its output.
        """
        pid = self.pid(service)
        running = None
        if pid is not None:
            process = psutil.Process(pid)
            running = {'user': process.username(),
                       'gid': process.gids().real,
                       'cmdline': process.cmdline()}
        return {'unit': self.unit(service).get('Service', {}),
                'running': running,
                'enabled': self.manager.is_enabled(unit_name(service)),
                'log': self.service_log(service)}

    def close(self):
        self.manager.stop_all()
        shutil.rmtree(self.root, ignore_errors=True)


def unit_name(service):
    """devstack's name for the unit of ``service`` (_run_under_systemd)."""
    return f'devstack@{service}.service'


def local_conf(settings, plugin_url):
    lines = ['[[local|localrc]]']
    lines += [f'{name}={value}' for name, value in settings.items()]
    lines.append(f'enable_plugin {PLUGIN} {plugin_url}')
    return '\n'.join(lines) + '\n'
