"""A real OpenStack control plane as processes on this machine's loopback.

keystone, placement, nova (API, conductor, scheduler with our filters
and weighers; cells v2), glance, neutron (ML2, Open vSwitch, flat and
VLAN on physnet1) and our collector and REST API, from the PyPI
packages of one release, on the machine's MariaDB and RabbitMQ::

    with ControlPlane('/tmp/numa-cloud') as cloud:
        session = cloud.admin_session()
        nova_conf = cloud.compute_config()   # for a lab host's compute

The settings of our own pieces are those devstack/plugin.sh writes
(tests/cloud/plugin.py).
"""

import dataclasses
import json
import os
import shutil
import time

from tests.cloud import accounts
from tests.cloud import configs
from tests.cloud import endpoints
from tests.cloud import infra
from tests.cloud import layout as lay
from tests.cloud import plugin
from tests.cloud import services
from tests.cloud import steps as start_steps

DEFAULT_WORKDIR = os.environ.get('NUMA_CLOUD_WORKDIR', '/tmp/numa-cloud')
# What start() writes in the work directory, and so what it may remove
# there (never anything else of a directory the caller named).
OWNED = ('etc', 'data', 'logs', 'opt', 'admin-openrc', 'control.json')
# Ports a service of ours answers on; the broker's is the machine's.
SERVICE_PORTS = {name: port for name, port in endpoints.PORTS.items()
                 if name != 'rabbitmq'}


class _ChainState:
    """How far a chain has got."""

    def __init__(self, chain):
        self.chain = chain
        self.step = 0
        self.services_started = False


class ControlPlaneError(Exception):
    """The control plane could not start."""


def taken_ports(is_open=services.port_open):
    """{service: port} of our ports that something already listens on."""
    return {name: port for name, port in SERVICE_PORTS.items()
            if is_open(port)}


def _clear(workdir):
    for name in OWNED:
        path = os.path.join(workdir, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)


class ControlPlane:
    """Start and stop the control plane; ask it for sessions and settings.

    start() and stop() must run in the thread that lives as long as the
    services: they die with it (``PR_SET_PDEATHSIG``).
    """

    def __init__(self, workdir=DEFAULT_WORKDIR):
        self.layout = lay.Layout(os.path.abspath(workdir))
        self.processes = services.Processes(self.layout)
        self.startup_seconds = None
        self._touched_infra = False

    # -- start -----------------------------------------------------------

    def start(self):
        began = time.monotonic()
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began
        return self

    def _start(self):
        busy = taken_ports()
        if busy:
            raise ControlPlaneError(
                'ports already in use on this machine: ' + ', '.join(
                    f'{port} ({name})' for name, port in busy.items()))
        self._prepare_files()
        self._touched_infra = True
        infra.recreate_databases()
        self._run_chains(start_steps.chains(self.layout))
        self._write_client_files()

    def _prepare_files(self):
        layout = self.layout
        os.makedirs(layout.workdir, exist_ok=True)
        _clear(layout.workdir)
        for path in (layout.logs, layout.data):
            os.makedirs(path)
        for path, sections in configs.files(layout).items():
            configs.write(path, sections)
        for destination, source in configs.copies(layout).items():
            shutil.copyfile(source, destination)
        for service in ('nova', 'neutron', 'glance', 'keystone'):
            os.makedirs(layout.data_dir(service), exist_ok=True)
        # The plugin edits nova.conf and writes ours before anything runs;
        # the scheduler's options are its defaults, in both.
        plugin.run(layout, plugin.CONFIGURE)

    def _service_specs(self):
        # Read when first needed: the collector's command is recorded by
        # the plugin's extra phase, a step of the start.
        commands = plugin.started(plugin.read_calls(self.layout))
        return services.specs(self.layout, commands)

    def _run_chains(self, chains):
        """Run every chain, each as soon as the ones it follows are done."""
        pending = {chain.name: _ChainState(chain) for chain in chains}
        done = set()
        started = []
        while pending:
            for name, state in list(pending.items()):
                if set(state.chain.after) <= done and self._advance(
                        state, started):
                    done.add(name)
                    del pending[name]
            time.sleep(0.1)
        self.processes.wait(started)

    def _advance(self, state, started):
        """Move a chain on by what has finished; True once it is complete."""
        chain = state.chain
        while state.step < len(chain.steps):
            spec = chain.steps[state.step]
            if spec.name not in self.processes.names():
                self.processes.start(spec)
            if self.processes.state(spec.name) != 'done':
                return False
            state.step += 1
        if not state.services_started:
            specs = self._service_specs()
            for service in chain.services:
                if service not in specs:
                    raise ControlPlaneError(
                        f'devstack/plugin.sh did not start {service}; its '
                        f'calls: {plugin.call_log(self.layout)}')
                self.processes.start(specs[service])
                started.append(service)
            state.services_started = True
        if chain.then is None:
            return True
        if any(self.processes.state(service) != 'ready'
               for service in chain.services):
            return False
        getattr(self, '_' + chain.then)()
        return True

    def _create_accounts(self):
        accounts.apply(self.admin_session(), accounts.plan(
            plugin.registrations(plugin.read_calls(self.layout))))

    def _write_client_files(self):
        with open(self.layout.openrc, 'w') as f:
            f.write(accounts.openrc(self.env()))
        with open(self.layout.state, 'w') as f:
            json.dump({'pid': os.getpid(), 'logs': self.layout.logs,
                       'openrc': self.layout.openrc}, f)

    # -- stop ------------------------------------------------------------

    def stop(self):
        """Kill what was started; drop the databases and the vhost.

        Safe after a partial start and when called twice.
        """
        self.processes.stop_all()
        if self._touched_infra:
            infra.drop_databases()
            infra.delete_vhost()
            self._touched_infra = False
        if os.path.exists(self.layout.state):
            os.remove(self.layout.state)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()

    # -- for tests: a service stopped, started again or twice --------------

    def service_spec(self, name, extra_config=None, as_name=None):
        """What runs service ``name``; ``extra_config`` read after its own.

        ``extra_config``, ``{section: {option: value}}``, goes in a file
        of its own given last on the command line (a daemon's
        ``--config-file``), so that it overrides the service's file
        without touching it. ``as_name`` names a second copy.
        """
        spec = self._service_specs()[name]
        name = as_name or name
        if extra_config:
            path = os.path.join(self.layout.etc, f'{name}-extra.conf')
            configs.write(path, extra_config)
            spec = with_config_file(spec, path)
        return dataclasses.replace(spec, name=name)

    def start_service(self, spec):
        """Start a service and wait until it says it is up."""
        self.processes.start(spec)
        self.processes.wait([spec.name])

    def stop_service(self, name):
        self.processes.stop(name)

    def numa_policy_option(self, section, option):
        """A value of our services' file, as devstack/plugin.sh wrote it."""
        return _ini_value(self.layout.numa_policy_conf, section, option)

    def service_log(self, name):
        """What service ``name`` logged since its latest start."""
        return self.processes.log(name)

    def restart_service(self, name, extra_config=None):
        """Stop service ``name``; start it again, as it was or overridden."""
        spec = self.service_spec(name, extra_config)
        self.stop_service(name)
        self.start_service(spec)

    # -- for tests and computes --------------------------------------------

    def admin_session(self):
        return accounts.admin_session()

    def env(self):
        """The OS_* variables of the ``openstack`` client, as the admin."""
        return accounts.admin_env()

    def compute_config(self):
        """nova.conf sections for a nova-compute inside a lab host.

        Addresses are ``endpoints.GUEST_GATEWAY``; the reports topic is
        the one the plugin gave the scheduler.
        """
        return compute_config(self.layout.workdir)


def with_config_file(spec, path):
    """``spec`` reading ``path`` last: its variable's list, or argv's."""
    if spec.config_files_env is None:
        return dataclasses.replace(
            spec, argv=spec.argv + ('--config-file', path))
    env = tuple((key, f'{value},{path}' if key == spec.config_files_env
                 else value) for key, value in spec.env)
    return dataclasses.replace(spec, env=env)


def compute_config(workdir=DEFAULT_WORKDIR):
    """What a compute needs, for a control plane started in ``workdir``."""
    sections = configs.compute(endpoints.GUEST_GATEWAY)
    layout = lay.Layout(os.path.abspath(workdir))
    topic = _ini_value(layout.conf('nova'), 'numa_policy_reports', 'topic')
    if topic:
        sections['numa_policy_reports'] = {'topic': topic}
    return sections


def _ini_value(path, section, option):
    from oslo_config import cfg
    parsed = {}
    try:
        cfg.ConfigParser(path, parsed).parse()
    except OSError:
        return None
    values = parsed.get(section, {}).get(option)
    return values[-1] if values else None
