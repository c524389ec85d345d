"""The control plane's processes: what each runs, and running them.

A :class:`Spec` says what a process is (pure data, built by
:func:`specs`); a :class:`Processes` starts specs, waits for them and
kills them. Every process is the leader of its own process group (so a
WSGI server's workers go with it) and gets SIGKILL from the kernel when
the thread that started it dies (``PR_SET_PDEATHSIG``, as
tests/labhost/machine.py does for QEMU): no service outlives the test
process, however that one ends.

The WSGI services run under gunicorn, as deployments run them under a
WSGI server: gunicorn is pure Python, so it installs in a second with
no compiler, where uWSGI (devstack's choice) compiles C for a minute.
"""

import ctypes
import dataclasses
import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from tests.cloud import endpoints
from tests.cloud import layout as lay

PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)
# A service is given this long to answer (or log that it is up).
START_TIMEOUT = 180
HOOKS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     'gunicorn_hooks.py')
# gunicorn starts a new worker when one dies: a worker that cannot load
# its application would be restarted until the timeout.
WORKER_DIED = r'Worker \(pid:\d+\) exited with code|Worker failed to boot'
STOP_TIMEOUT = 5


class ServiceError(Exception):
    """A service of the control plane failed; the message quotes its log."""


@dataclasses.dataclass(frozen=True)
class Spec:
    """One process: a service that stays, or a step that must exit 0.

    A service is up once it accepts connections on ``port`` or, with no
    port, once its log matches ``ready``.
    """

    name: str
    argv: tuple
    env: tuple = ()
    port: int = None
    ready: str = None
    oneshot: bool = False
    ok_codes: tuple = (0,)
    failed: str = None
    # The variable of ``env`` that lists its configuration files, comma
    # separated, where the service reads no --config-file (a WSGI app).
    config_files_env: str = None


# Seconds gunicorn lets a worker be silent before killing it as hung.
WORKER_TIMEOUT = 300


def wsgi(name, port, app, env=(), config_files_env=None):
    """A gunicorn serving ``app`` on 127.0.0.1:``port``.

    One worker process with threads: this cloud serves a few tests, and
    every extra worker costs seconds of imports at start. The generous
    timeout keeps a worker that waits on a slow peer (nova-api on
    placement, say) from being killed as hung.
    """
    argv = (sys.executable, '-m', 'gunicorn', '--config', HOOKS,
            # Its control socket is one path per user, for every gunicorn.
            '--no-control-socket',
            '--bind', f'{endpoints.HOST_ADDRESS}:{port}',
            '--workers', '1', '--worker-class', 'gthread', '--threads', '4',
            '--timeout', str(WORKER_TIMEOUT), '--graceful-timeout', '5',
            '--name', name, '--error-logfile', '-', app)
    return Spec(name, argv, tuple(env), port=port, failed=WORKER_DIED,
                config_files_env=config_files_env)


def daemon(name, argv, ready):
    return Spec(name, tuple(argv), ready=ready)


def step(name, argv, env=(), ok_codes=(0,)):
    return Spec(name, tuple(argv), tuple(env), oneshot=True,
                ok_codes=ok_codes)


def specs(layout, numa_policy_commands):
    """{name: Spec} of every long-running service.

    ``numa_policy_commands`` is what devstack/plugin.sh asked to start
    (its recorded ``run_process`` calls); the collector is known once
    the plugin's extra phase has run.
    """
    port = endpoints.PORTS
    nova_conf = layout.conf('nova')
    neutron_args = ('--config-file', layout.conf('neutron'),
                    '--config-file', layout.conf('neutron', 'ml2_conf.ini'))
    collector = numa_policy_commands.get('numa-policy-collector')
    api_conf = layout.numa_policy_conf
    return {spec.name: spec for spec in (
        wsgi('keystone', port['keystone'], 'keystone.wsgi.api:application',
             [('OS_KEYSTONE_CONFIG_DIR', layout.conf_dir('keystone'))]),
        wsgi('placement', port['placement'],
             'placement.wsgi.api:application',
             [('OS_PLACEMENT_CONFIG_DIR', layout.conf_dir('placement'))]),
        wsgi('nova-api', port['nova'], 'nova.wsgi.osapi_compute:application',
             [('OS_NOVA_CONFIG_DIR', layout.conf_dir('nova'))]),
        daemon('nova-conductor',
               [lay.bin_path('nova-conductor'), '--config-file', nova_conf],
               r'Starting conductor node'),
        daemon('nova-scheduler',
               [lay.bin_path('nova-scheduler'), '--config-file', nova_conf],
               r'Starting scheduler node'),
        wsgi('glance-api', port['glance'], 'glance.wsgi.api:application',
             [('OS_GLANCE_CONFIG_DIR', layout.conf_dir('glance'))]),
        # Neutron's API is a WSGI application only; its RPC server (the
        # agents' peer) and its periodic jobs are processes of their own,
        # as devstack runs them for this release.
        wsgi('neutron-api', port['neutron'], 'neutron.wsgi.api:application',
             [('OS_NEUTRON_CONFIG_DIR', layout.conf_dir('neutron')),
              ('OS_NEUTRON_CONFIG_FILES', 'neutron.conf;ml2_conf.ini')]),
        daemon('neutron-rpc-server',
               [lay.bin_path('neutron-rpc-server'), *neutron_args],
               r'RPC server starting'),
        daemon('neutron-periodic-workers',
               [lay.bin_path('neutron-periodic-workers'), *neutron_args],
               r'Periodic workers process starting'),
        *([daemon('numa-policy-collector', collector,
                  r'Collecting reports from topic')] if collector else []),
        # The plugin starts numa-policy-api's own small server; here the
        # same application and file under a WSGI server, as deployments
        # run it (nova_numa_policy/rest/wsgi.py).
        wsgi('numa-policy-api', port['numa-policy'],
             'nova_numa_policy.rest.wsgi:application',
             [('NUMA_POLICY_API_WSGI', '1'),
              ('NUMA_POLICY_API_CONFIG', api_conf)],
             config_files_env='NUMA_POLICY_API_CONFIG'),
    )}


def _die_with_parent():
    # Runs in the child between fork and exec.
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setsid()


def tail(path, lines=40):
    try:
        with open(path, errors='replace') as f:
            return ''.join(f.readlines()[-lines:])
    except OSError as exc:
        return f'({exc})'


def port_open(port):
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((endpoints.HOST_ADDRESS, port)) == 0


def http_answers(port):
    """Whether an HTTP server on ``port`` answers, with any status.

    gunicorn listens before its worker has loaded the application: an
    open port alone does not say the service is up.
    """
    url = f'http://{endpoints.HOST_ADDRESS}:{port}/'
    try:
        urllib.request.urlopen(url, timeout=2).close()
    except urllib.error.HTTPError:
        return True
    except (OSError, http.client.HTTPException):
        return False
    return True


def log_matches(path, pattern, offset=0):
    """Whether the log, from byte ``offset`` on, matches ``pattern``."""
    try:
        with open(path, errors='replace') as f:
            f.seek(offset)
            return re.search(pattern, f.read()) is not None
    except FileNotFoundError:
        return False


class Processes:
    """The processes one control plane started, by name.

    Start them from the thread that lives as long as they should: the
    kernel's parent-death signal follows the starting thread.
    """

    def __init__(self, layout):
        self.layout = layout
        self._running = {}
        # Where each process's own lines begin in its log: a service
        # started again appends to the log of its earlier run.
        self._log_starts = {}

    def start(self, spec):
        if spec.name in self._running:
            raise ServiceError(f'{spec.name} started twice')
        env = dict(os.environ)
        env.update(spec.env)
        # Each line in the log as it is written, for a start's checks.
        env['PYTHONUNBUFFERED'] = '1'
        log_path = self.layout.log(spec.name)
        with open(log_path, 'ab') as log:
            log.write(f'=== {" ".join(spec.argv)}\n'.encode())
            log.flush()
            self._log_starts[spec.name] = log.tell()
            process = subprocess.Popen(
                spec.argv, env=env, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, preexec_fn=_die_with_parent,
                cwd=self.layout.workdir)
        self._running[spec.name] = (spec, process)
        return process

    def names(self):
        return set(self._running)

    def log(self, name):
        """What process ``name`` logged since its latest start."""
        with open(self.layout.log(name), errors='replace') as f:
            f.seek(self._log_starts.get(name, 0))
            return f.read()

    def failure(self, name, why):
        log_path = self.layout.log(name)
        return ServiceError(f'{name} {why}; end of {log_path}:\n'
                            f'{tail(log_path)}')

    def state(self, name):
        """'running', 'ready' or 'done'; raises if the process failed."""
        spec, process = self._running[name]
        code = process.poll()
        if spec.oneshot:
            if code is None:
                return 'running'
            if code not in spec.ok_codes:
                raise self.failure(name, f'exited with status {code}')
            return 'done'
        if code is not None:
            raise self.failure(name, f'exited with status {code}')
        log_path = self.layout.log(name)
        since = self._log_starts.get(name, 0)
        if spec.failed and log_matches(log_path, spec.failed, since):
            raise self.failure(name, 'failed')
        if spec.port is not None:
            return 'ready' if http_answers(spec.port) else 'running'
        if log_matches(log_path, spec.ready, since):
            return 'ready'
        return 'running'

    def wait(self, names, timeout=START_TIMEOUT):
        """Wait until every one of ``names`` is ready or done."""
        deadline = time.monotonic() + timeout
        pending = set(names)
        while pending:
            pending = {n for n in pending
                       if self.state(n) not in ('ready', 'done')}
            if not pending:
                return
            if time.monotonic() > deadline:
                name = sorted(pending)[0]
                raise self.failure(name, f'not up after {timeout} s')
            time.sleep(0.2)

    def run(self, spec, timeout=START_TIMEOUT):
        """Start a one-shot step and wait for it to exit 0."""
        self.start(spec)
        self.wait([spec.name], timeout)

    def stop(self, name):
        """Stop one process as stop_all stops them all; its group too."""
        _spec, process = self._running.pop(name)
        _stop([process])

    def stop_all(self):
        """Kill every process group started, even half-started ones.

        SIGTERM to all at once, then SIGKILL to what is left after
        STOP_TIMEOUT: a test cloud needs no graceful shutdown, only
        that nothing of it is left.
        """
        running = [process for _spec, process in self._running.values()]
        self._running.clear()
        _stop(running)


def _stop(running):
    """SIGTERM to each group, SIGKILL to what is left after STOP_TIMEOUT."""
    for process in running:
        kill_group(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    for process in running:
        try:
            process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for process in running:
        # Also what the leader left behind in its group (workers).
        kill_group(process.pid, signal.SIGKILL)
        process.wait()


def kill_group(pgid, signum):
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass
