"""The lab's whole cloud: the control plane and two linked compute lab hosts.

:class:`Cloud` starts, in this order and each stage timed:

1. the control plane on this machine's 127.0.0.1
   (tests/cloud/control.py);
2. ``lab-compute-1`` and ``lab-compute-2`` (tests/cloud/compute.py),
   booted side by side, on one link (192.168.77.0/24) with libvirtd
   listening on it for migrations; in each, nova-compute with our
   driver and our agent as a long-running daemon (below);
3. both computes registered with nova and mapped into cell1
   (``nova-manage cell_v2 discover_hosts``);
4. both agents' reports stored by our collector.

The agent runs as a compute node runs it: ``numa-policy-agent`` as the
user ``nova``, linked into ``/usr/bin`` with its privileged helper,
which it starts through sudo with the rule of ``etc/sudoers.d``
(tests/labhost/deploy.py), reading ``/etc/nova/nova.conf`` and
``/etc/nova/numa-policy-agent.conf``. The latter is the file
devstack/plugin.sh wrote for the compute (its ``stack:post-config``
phase, run when compute.py writes nova.conf), with one change: the
broker's URL, which devstack's ``get_transport_url`` gives as the
controller's and the stubbed helper as a documentation address, is the
control plane's as the lab host reaches it. Like the plugin on a
compute node of several nodes, the lab host's ``kernel.numa_balancing``
is turned on: the agent's locality signal.

Everything runs in the thread that calls :meth:`Cloud.start`; it must
live as long as the cloud (the services and QEMU die with it).
"""

import atexit
from concurrent import futures
import configparser
import functools
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from tests.cloud import compute as compute_mod
from tests.cloud import configs
from tests.cloud import control
from tests.cloud import endpoints
from tests.cloud import l2agent
from tests.cloud import layout as lay
from tests.cloud import resources
from tests.labhost import deploy
from tests.labhost import initramfs
from tests.labhost import machine
from tests.labhost import network
from tests.labhost import ssh as ssh_mod
from tests.labhost import topology as topology_mod

# Unlike hosts, so that the scheduler has something to tell them apart
# by (tests/cloud/test_scheduling.py): two nodes with the uplink on node
# 1, and four with it on node 0. Two CPUs a node on both, so that a
# migration's guest fits one node at either end.
COMPUTES = (('lab-compute-1', topology_mod.TWO_NODES),
            ('lab-compute-2', topology_mod.FOUR_NODES_NIC_ON_0))
COMPUTE_MICROVERSION = '2.86'
# A server's fields that say where a delete (or any action) stands.
SERVER_STATE = ('status', 'OS-EXT-STS:task_state', 'OS-EXT-STS:vm_state',
                'OS-EXT-SRV-ATTR:host', 'fault')
REGISTER_TIMEOUT = 900
# An Open vSwitch agent that is not alive and logged nothing for this
# long is restarted once (_wait_for_l2_agents); its imports alone were
# silent for 147 s on a slow hour.
L2_STALL_SECONDS = 420
# nova's state and instances directory in each lab host: a tmpfs this
# large (a limit, not memory taken), which nova reports as the host's
# DISK_GB: tempest's classes keep their servers of 1 GB disks until they
# end, and two run at once (at 4 GB, placement once offered a boot one
# host of two, the other's DISK_GB all held: cloud.rst). The tiny image
# and the guests' overlays take a few MB of it.
STATE_DISK_GB = 12
REPORT_TIMEOUT = 300
AGENT_LOG = '/tmp/numa-policy-agent.log'
AGENT_BINARY = '/usr/bin/numa-policy-agent'
# A start's own options (start_agent's extra_config), after the others.
AGENT_EXTRA_CONF = '/etc/nova/numa-policy-agent-extra.conf'
# Its pgrep/pkill pattern, with a bracket: the shell running pkill, whose
# own command line holds the pattern, does not match it.
_AGENT_PATTERN = f"'[{AGENT_BINARY[0]}]{AGENT_BINARY[1:]}'"
# What it prints (oslo.log writes its log to the file above only).
AGENT_OUTPUT = '/tmp/numa-policy-agent.out'
# The agent's own state (handled arrivals, interrupts' affinity as
# found), on the lab host's tmpfs, the agent's to write.
AGENT_STATE_DIR = '/tmp/nova/numa-policy'


class CloudError(Exception):
    """The cloud did not come up; the message says where it stopped."""


def agent_config(plugin_conf, transport_url, state_dir=AGENT_STATE_DIR):
    """The agent's file: the plugin's, with the lab host's differences.

    The broker's URL as the lab host reaches it, the agent's
    ``state_dir`` on the lab host's tmpfs (its default, under
    /var/lib/nova, is this machine's read-only /var/lib there: seen, the
    record of handled arrivals could not be kept), and a log file where
    devstack has journald.
    """
    parser = configparser.RawConfigParser(interpolation=None)
    parser.optionxform = str
    parser.read(plugin_conf)
    if not parser.has_section('numa_policy_agent'):
        raise CloudError(f'devstack/plugin.sh wrote no [numa_policy_agent] '
                         f'in {plugin_conf}: is the agent enabled on a '
                         f'compute?')
    parser['DEFAULT']['transport_url'] = transport_url
    parser['numa_policy_agent']['state_dir'] = state_dir
    parser['DEFAULT']['log_file'] = AGENT_LOG
    out = io.StringIO()
    parser.write(out)
    return out.getvalue()


def without_log_file(nova_conf):
    """nova.conf less its log file: the agent keeps its own log."""
    return '\n'.join(line for line in nova_conf.splitlines()
                     if not line.startswith('log_file ='))


class Nova:
    """nova's API at the microversion the tests ask for."""

    def __init__(self, session, microversion=COMPUTE_MICROVERSION):
        self.session = session
        self.base = endpoints.url('nova') + '/v2.1'
        self.headers = {'OpenStack-API-Version':
                        f'compute {microversion}'}

    def get(self, path, **kwargs):
        # The session sends a read again on a failed connection
        # (accounts.ReadRetryingSession).
        return self.session.get(self.base + path, headers=self.headers,
                                **kwargs).json()

    def post(self, path, body, **kwargs):
        return self.session.post(self.base + path, json=body,
                                 headers=self.headers, **kwargs)

    def delete(self, path, **kwargs):
        return self.session.delete(self.base + path, headers=self.headers,
                                   **kwargs)

    def hypervisors(self):
        return self.get('/os-hypervisors/detail')['hypervisors']

    def compute_services(self):
        return self.get('/os-services?binary=nova-compute')['services']

    def create_flavor(self, name, vcpus, ram, disk, extra_specs):
        flavor = self.post('/flavors', {'flavor': {
            'name': name, 'vcpus': vcpus, 'ram': ram,
            'disk': disk}}).json()['flavor']
        self.post(f'/flavors/{flavor["id"]}/os-extra_specs',
                  {'extra_specs': dict(extra_specs)})
        return flavor

    def create_server(self, name, flavor_id, image_id, networks, host=None):
        """A new server; ``host``, if given, is asked of the scheduler.

        A host asked for (microversion 2.74) still passes every filter,
        ours included: a host they refuse is no valid host.
        """
        body = {'name': name, 'flavorRef': flavor_id, 'imageRef': image_id,
                'networks': networks}
        if host is not None:
            body['host'] = host
        return self.post('/servers', {'server': body}).json()['server']

    def server(self, server_id):
        return self.get(f'/servers/{server_id}')['server']

    def wait_server(self, server_id, statuses, timeout=600):
        """The server once its status is one of ``statuses`` (or ERROR)."""
        wanted = set(statuses) | {'ERROR'}
        return resources.wait_for(
            lambda: self.server(server_id),
            lambda s: s['status'] in wanted and
            not s.get('OS-EXT-STS:task_state'),
            f'server {server_id} {"/".join(statuses)}', timeout, interval=3)

    def action(self, server_id, body):
        return self.post(f'/servers/{server_id}/action', body)

    def delete_server(self, server_id):
        self.delete(f'/servers/{server_id}')

    def wait_deleted(self, server_id, timeout=300, or_error=False):
        """Return once nova answers 404 for the server: True.

        ``or_error``: return False as soon as the server is in ERROR (a
        delete that failed) instead.
        """
        def answer():
            got = self.session.get(
                f'{self.base}/servers/{server_id}', headers=self.headers,
                raise_exc=False)
            if got.status_code == 404:
                return True
            server = got.json().get('server', {})
            if or_error and server.get('status') == 'ERROR':
                return False
            # What a delete that never ends left: the last seen of a
            # timeout, in CI's short log.
            state = {key: server.get(key) for key in SERVER_STATE}
            state['fault'] = (state['fault'] or {}).get('message')
            return state

        return resources.wait_for(answer, lambda gone: isinstance(gone, bool),
                                  f'server {server_id} deleted', timeout,
                                  interval=3)

    def delete_and_wait(self, server_id, timeout=300):
        """Delete the server and wait; once more if that delete failed."""
        self.delete_server(server_id)
        if not self.wait_deleted(server_id, timeout, or_error=True):
            self.delete_server(server_id)
            self.wait_deleted(server_id, timeout)


class Cloud:
    """The control plane and two compute lab hosts; start() and stop()."""

    def __init__(self, workdir=None, python=None, computes=COMPUTES):
        self.workdir = workdir or tempfile.mkdtemp(prefix='numa-cloud-')
        self.python = python or os.environ.get('NUMA_CLOUD_PYTHON') or \
            sys.executable
        self.computes_wanted = computes
        self.control = control.ControlPlane(self.workdir)
        self.computes = {}
        self.link_dir = None
        self.stages = {}
        # One key pair for the run: root's login to each compute's sshd,
        # as our tempest plugin's domain XML check uses it.
        self.ssh_key = None
        self.ssh_accesses = {}
        # Each nova-compute's log as it was once the cloud was up: what
        # its start said, before any test (a fault scenario restarting
        # the broker, say) added to it.
        self.logs_at_start = {}

    # -- start -------------------------------------------------------------

    def start(self):
        try:
            self._stage('control plane', self.control.start)
            self.link_dir = tempfile.mkdtemp(prefix='numa-cloud-link-')
            ends = network.link_ends(os.path.join(self.link_dir,
                                                  'link.sock'))
            settings = self.control.compute_config()
            self.ssh_key, public = ssh_mod.make_key_pair(self.link_dir)
            self.ssh_accesses = {
                name: ssh_mod.access(index, public)
                for index, (name, _) in enumerate(self.computes_wanted)}
            self._stage('both computes booted; libvirtd, nova-compute '
                        'and the agents started',
                        functools.partial(self._start_computes, ends,
                                          settings))
            self._stage('computes registered and mapped into cell1',
                        self._register)
            self._stage("neutron's Open vSwitch agents alive",
                        self._wait_for_l2_agents)
            self._stage('agents reporting to the collector',
                        self._wait_for_reports)
            self.logs_at_start = {name: host.log()
                                  for name, host in self.computes.items()}
        except BaseException:
            self.stop()
            raise
        return self

    def _stage(self, name, function):
        began = time.monotonic()
        try:
            return function()
        finally:
            self.stages[name] = time.monotonic() - began
            print(f'cloud stage: {name}: {self.stages[name]:.1f} s',
                  flush=True)

    def _start_computes(self, ends, settings):
        """Boot the computes side by side and start their services.

        Each QEMU is started from this thread (it dies with it); the rest
        of each compute's start, mostly waiting on its lab host, runs in
        a thread of its own, so that one lab host's boot overlaps the
        other's instead of following it (this machine has two cores).
        """
        for (name, topology), end in zip(self.computes_wanted, ends):
            host = compute_mod.ComputeHost(
                name, python=self.python, settings=settings,
                topology=topology, link=end, start_timeout=REGISTER_TIMEOUT,
                state_disk_gb=STATE_DISK_GB, ssh=self.ssh_accesses[name],
                ssh_key=self.ssh_key)
            self.computes[name] = host
            host.launch()
        with futures.ThreadPoolExecutor(len(self.computes)) as pool:
            started = [pool.submit(self._start_services, host)
                       for host in self.computes.values()]
            for future in started:
                future.result()

    def _start_services(self, host):
        host.finish_boot()
        host.start()
        host.start_l2_agent()
        self._start_agent(host)

    def _start_agent(self, host):
        lab = host.lab
        deploy.install(lab, os.path.dirname(self.python))
        plugin_conf = os.path.join(host.workdir, 'plugin', 'etc',
                                   'nova-numa-policy.conf')
        deploy.write_config(
            lab, agent_config(plugin_conf,
                              host.settings['DEFAULT']['transport_url']),
            without_log_file(host.nova_conf))
        # nova's state directory, nova's as a package makes it: the
        # agent writes the uplinks file there for nova-compute (root
        # here), and keeps its own state beside it.
        lab.run(f'mkdir -p {compute_mod.STATE_DIR} {AGENT_STATE_DIR} && '
                f'chown nova:nova {compute_mod.STATE_DIR} {AGENT_STATE_DIR} '
                f'&& echo 1 > /proc/sys/kernel/numa_balancing')
        self.start_agent(host.name)

    def start_agent(self, name, extra_config=None):
        """Start compute ``name``'s agent, as devstack/plugin.sh starts it.

        Where neutron's OVS agent runs: nova's file, the OVS agent's (its
        bridge mappings), ours. Its output is appended to, so that a
        restarted agent's lines follow those of its earlier run.
        ``extra_config``: ``{section: {option: value}}`` in a last file of
        its own (``AGENT_EXTRA_CONF``), read after ours, for this start
        only.
        """
        lab = self.computes[name].lab
        files = [deploy.NOVA_CONF, l2agent.CONF, deploy.AGENT_CONF]
        if extra_config:
            lab.run(deploy.files_script(
                ((AGENT_EXTRA_CONF, configs.render(extra_config)),)))
            files.append(AGENT_EXTRA_CONF)
        config = ' '.join(f'--config-file {path}' for path in files)
        lab.run(f'cd / && setsid {AGENT_BINARY} {config} '
                f'>> {AGENT_OUTPUT} 2>&1 < /dev/null &', user='nova')

    def stop_agent(self, name, signal_name='KILL', timeout=60):
        """Signal compute ``name``'s agent and wait until it is gone."""
        self.computes[name].lab.run(
            f'pkill -{signal_name} -f {_AGENT_PATTERN}', check=False)
        resources.wait_for(
            lambda: self.agent_running(name), lambda running: not running,
            f'the agent of {name} gone', timeout, interval=1)

    def agent_running(self, name):
        """Whether compute ``name``'s agent process is alive."""
        return bool(self.computes[name].lab.run(
            f'pgrep -f {_AGENT_PATTERN}', check=False).stdout.strip())

    def _register(self):
        nova = self.nova()
        names = set(self.computes)

        def seen():
            services = {s['host']: s for s in nova.compute_services()}
            return {n for n in names
                    if services.get(n, {}).get('state') == 'up'}

        deadline = time.monotonic() + REGISTER_TIMEOUT
        while seen() != names:
            for host in self.computes.values():
                if not host.running():
                    raise CloudError(f'nova-compute in {host.name} '
                                     f'stopped:\n{self.compute_log(host)}')
            if time.monotonic() > deadline:
                raise CloudError(
                    f'nova-compute up in {sorted(seen())} only, not '
                    f'{sorted(names)}, after {REGISTER_TIMEOUT} s\n'
                    + self.diagnostics())
            time.sleep(3)
        # The resource providers exist once the compute nodes do.
        resources.wait_for(
            lambda: {h['hypervisor_hostname'] for h in nova.hypervisors()},
            lambda found: names <= found, 'both hypervisors listed',
            REGISTER_TIMEOUT, interval=3)
        self.discover_hosts()

    def discover_hosts(self):
        """``nova-manage cell_v2 discover_hosts`` against the cloud."""
        result = subprocess.run(
            [lay.bin_path('nova-manage'), '--config-file',
             self.control.layout.conf('nova'), 'cell_v2', 'discover_hosts',
             '--verbose'], capture_output=True, text=True, timeout=300)
        if result.returncode:
            raise CloudError(f'discover_hosts failed: {result.stdout}'
                             f'{result.stderr}')
        return result.stdout

    def _wait_for_l2_agents(self):
        """Each compute's OVS agent reported to neutron: ports bind there.

        An agent that is not alive and has logged nothing for
        L2_STALL_SECONDS is restarted, once, saying so: on a slow hour
        one stopped for good just after its bridge's datapath line (CI,
        2026-11-30, 13:17), and the cloud never came up.
        """
        names = set(self.computes)
        url = endpoints.url('neutron') + '/v2.0/agents'
        stalls = {name: l2agent.Stall(L2_STALL_SECONDS) for name in names}
        restarted = set()

        def alive():
            answer = self.session().get(
                url, params={'binary': 'neutron-openvswitch-agent'},
                raise_exc=False)
            found = set()
            if answer.status_code == 200:
                found = {a['host'] for a in answer.json()['agents']
                         if a['alive']}
            for name in sorted(names - found - restarted):
                host = self.computes[name]
                size = host.l2_agent_log_size()
                if stalls[name].seen(size, time.monotonic()):
                    print(f'cloud: {name}: neutron-openvswitch-agent not '
                          f'alive and silent for {L2_STALL_SECONDS} s: '
                          'restarted', flush=True)
                    host.restart_l2_agent()
                    restarted.add(name)
            return found

        try:
            resources.wait_for(alive, lambda found: names <= found,
                               "each compute's Open vSwitch agent alive "
                               'in neutron',
                               REGISTER_TIMEOUT + L2_STALL_SECONDS,
                               interval=3)
        except resources.ResourceError as exc:
            logs = '\n'.join(
                f'--- neutron-openvswitch-agent in {h.name} (end) ---\n'
                + '\n'.join(h.l2_agent_log().splitlines()[-30:])
                for h in self.computes.values())
            raise CloudError(f'{exc}\n{logs}') from None

    def _wait_for_reports(self):
        names = set(self.computes)

        def hosts():
            answer = self.control.admin_session().get(
                endpoints.url('numa-policy') + '/v1/hosts',
                raise_exc=False)
            if answer.status_code != 200:
                return set()
            return {h['host'] for h in answer.json()['hosts']}

        try:
            resources.wait_for(hosts, lambda found: names <= found,
                               'a report of each agent in the collector',
                               REPORT_TIMEOUT, interval=3)
        except resources.ResourceError as exc:
            raise CloudError(f'{exc}\n{self.diagnostics()}') from None

    # -- use ---------------------------------------------------------------

    def session(self):
        return self.control.admin_session()

    def nova(self, microversion=COMPUTE_MICROVERSION):
        return Nova(self.session(), microversion)

    def numa_api(self, path):
        """GET of our REST API with a keystone token: (status, body)."""
        answer = self.session().get(endpoints.url('numa-policy') + path,
                                    raise_exc=False)
        try:
            body = answer.json()
        except ValueError:
            body = answer.text
        return answer.status_code, body

    def tempest_ssh_settings(self):
        """Our tempest plugin's ``ssh_*`` options for these computes."""
        return ssh_mod.tempest_settings(self.ssh_accesses, self.ssh_key)

    def agent_log(self, host):
        if host.lab is None:
            return ''
        return host.lab.run(f'cat {AGENT_OUTPUT} {AGENT_LOG}',
                            check=False).stdout

    def compute_log(self, host, lines=60):
        return '\n'.join(host.log().splitlines()[-lines:])

    def diagnostics(self, lines=40):
        parts = []
        for host in self.computes.values():
            if host.lab is None:
                continue
            parts.append(f'--- nova-compute in {host.name} (end) ---\n'
                         + self.compute_log(host, lines))
            agent = self.agent_log(host).splitlines()[-lines:]
            parts.append(f'--- numa-policy-agent in {host.name} (end) ---\n'
                         + '\n'.join(agent))
            l2 = host.l2_agent_log().splitlines()[-lines:]
            parts.append(f'--- neutron-openvswitch-agent in {host.name} '
                         f'(end) ---\n' + '\n'.join(l2))
        return '\n'.join(parts)

    def assert_active(self, test, server):
        """Fail ``test`` unless ``server`` is ACTIVE, saying why it is not.

        The computes' logs are read only then (why_not_active).
        """
        if server['status'] != 'ACTIVE':
            test.assertEqual('ACTIVE', server['status'],
                             self.why_not_active(server))

    def why_not_active(self, server, lines_per_compute=3):
        """A few short lines on why ``server`` is not ACTIVE.

        nova's fault (its message, and its traceback's last line, the
        exception), then each compute's last ERROR lines about the
        instance: the cause that nova's retries hide behind "Exceeded
        maximum number of retries". Short lines, last in an assertion's
        message, so that CI's tail of its log keeps them.
        """
        fault = server.get('fault') or {}
        found = [f'{server.get("status")}: {fault.get("message", "no fault")}']
        details = (fault.get('details') or '').strip().splitlines()
        if details:
            found.append(f'fault: {details[-1].strip()[:300]}')
        found.extend(self.compute_errors(server['id'], lines_per_compute))
        return '\n'.join(found)

    def compute_errors(self, uuid, lines_per_compute=3):
        """Each compute's last ERROR lines about instance ``uuid``."""
        found = []
        for host in self.computes.values():
            errors = [line for line in host.log().splitlines()
                      if uuid in line and ' ERROR ' in line]
            found.extend(f'{host.name}: {line[-300:]}'
                         for line in errors[-lines_per_compute:])
        return found

    def wait_all_deleted(self, nova, server_ids, timeout=300):
        """Wait for each of ``server_ids`` to be gone; say why one is not.

        Every one is waited for (one stuck delete does not leave the
        others unseen), then one error names each that stayed, its state
        and its computes' last ERROR lines: short, for CI's log tail.
        """
        stuck = []
        for server_id in server_ids:
            try:
                nova.wait_deleted(server_id, timeout)
            except resources.ResourceError as exc:
                stuck.append(str(exc))
                stuck.extend(self.compute_errors(server_id))
        if stuck:
            raise resources.ResourceError('\n'.join(stuck))

    def stage_summary(self):
        return '\n'.join(f'{name}: {seconds:.1f} s'
                         for name, seconds in self.stages.items())

    # -- stop --------------------------------------------------------------

    def stop(self):
        """Kill the lab hosts, stop the control plane; safe to repeat."""
        for host in self.computes.values():
            host.shutdown()
        self.computes = {}
        if self.link_dir is not None:
            shutil.rmtree(self.link_dir, ignore_errors=True)
            self.link_dir = None
        self.control.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()


_shared = {}


def shared():
    """One cloud for every module of a test process, stopped at its exit.

    Started by the first module that asks (its setUpModule), in that
    thread, which must be the process's main thread; a start that
    failed fails every later module at once instead of starting again.
    """
    if 'error' in _shared:
        raise CloudError(f'the cloud did not start: {_shared["error"]}')
    if 'cloud' not in _shared:
        cloud = Cloud(os.environ.get('NUMA_CLOUD_WORKDIR'))
        try:
            cloud.start()
        except BaseException as exc:
            _shared['error'] = repr(exc)[:2000]
            raise
        atexit.register(cloud.stop)
        _shared['cloud'] = cloud
        print('cloud up:\n' + cloud.stage_summary(), flush=True)
    return _shared['cloud']


def for_test_module():
    """The shared cloud for a test module's setUpModule.

    Where this machine cannot boot a lab host the module is skipped with
    the reason, or fails where a lab host must run (CI).
    """
    try:
        machine.check_available()
    except initramfs.LabUnavailable as exc:
        if machine.required():
            raise
        raise unittest.SkipTest(str(exc))
    return shared()
