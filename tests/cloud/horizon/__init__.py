"""Horizon with our panel against the lab's cloud, and a browser in it.

Horizon pins its own Django: it runs from a virtualenv of its own (the
horizon tier's, made by ``tests/horizon/run.sh --prepare``; tox's cloud
environment names it in ``NUMA_CLOUD_HORIZON_VENV``), under gunicorn on
``127.0.0.1:PORT``, with :mod:`tests.cloud.horizon.settings`. The browser
(:mod:`tests.cloud.horizon.browser`) runs from the same virtualenv.
"""

import json
import os
import secrets
import signal
import subprocess

from tests.cloud import resources
from tests.cloud import services

PORT = 8090
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
BROWSER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       'browser.py')
START_TIMEOUT = 120
BROWSER_TIMEOUT = 900


class HorizonError(Exception):
    """Horizon did not start, or the browser did not get through."""


def venv():
    """The Horizon virtualenv; HorizonError when there is none."""
    path = os.environ.get('NUMA_CLOUD_HORIZON_VENV', '')
    if not os.path.exists(os.path.join(path, 'bin', 'gunicorn')):
        raise HorizonError(
            f'no Horizon virtualenv with gunicorn at {path!r}: make one with '
            f'HORIZON_VENV=DIR tests/horizon/run.sh --prepare and name it '
            f'in NUMA_CLOUD_HORIZON_VENV')
    return path


class Horizon:
    """gunicorn serving Horizon and our panel, logged into by keystone."""

    def __init__(self, workdir, venv_path):
        self.workdir = workdir
        self.venv = venv_path
        self.process = None
        self.log_path = os.path.join(workdir, 'horizon.log')

    @property
    def url(self):
        return f'http://127.0.0.1:{PORT}'

    def environment(self):
        return {**os.environ,
                'PYTHONPATH': ROOT,
                'DJANGO_SETTINGS_MODULE': 'tests.cloud.horizon.settings',
                'NUMA_CLOUD_HORIZON_SECRET': secrets.token_hex(32),
                'NUMA_CLOUD_HORIZON_STATIC': os.path.join(
                    self.workdir, 'horizon-static')}

    def start(self):
        if services.port_open(PORT):
            # Another Horizon (or anything) there would be the one the
            # browser photographs.
            raise HorizonError(f'127.0.0.1:{PORT} is in use already: stop '
                               f'what listens there first')
        log = open(self.log_path, 'w')
        # A session of its own: stop() ends gunicorn's workers with it.
        self.process = subprocess.Popen(
            [os.path.join(self.venv, 'bin', 'gunicorn'),
             '--bind', f'127.0.0.1:{PORT}', '--workers', '1',
             '--threads', '4', '--timeout', '300',
             # As the cloud's services: no control socket at the one
             # path every gunicorn of the user shares.
             '--no-control-socket',
             'tests.cloud.horizon.wsgi:application'],
            cwd=ROOT, env=self.environment(), stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        try:
            resources.wait_for(
                lambda: (services.port_open(PORT)
                         or self.process.poll() is not None),
                bool, f'Horizon on {self.url}', START_TIMEOUT)
        except resources.ResourceError as exc:
            raise HorizonError(f'{exc}\n{services.tail(self.log_path)}')
        if self.process.poll() is not None:
            raise HorizonError(f'Horizon exited {self.process.returncode}:'
                               f'\n{services.tail(self.log_path)}')
        return self

    def browse(self, user, password, out_dir):
        """What the browser saw: {'pages': {name: {'png', 'text'}}}."""
        result = subprocess.run(
            [os.path.join(self.venv, 'bin', 'python'), BROWSER, self.url,
             user, password, out_dir],
            capture_output=True, text=True, timeout=BROWSER_TIMEOUT)
        if result.returncode:
            raise HorizonError(f'the browser did not get through:\n'
                               f'{result.stderr[-4000:]}\n--- Horizon ---\n'
                               f'{services.tail(self.log_path)}')
        return json.loads(result.stdout.strip().splitlines()[-1])

    def stop(self):
        """End gunicorn and its workers: SIGKILL to its process group.

        A test's Horizon keeps nothing worth a graceful shutdown (its
        sessions are signed cookies, its cache in memory), and it took
        one: gunicorn's master waited its whole graceful timeout (30 s)
        after SIGTERM or SIGINT, with its worker gone. The group, since a
        run's worker was once seen outliving its master by hours.
        """
        if self.process is None:
            return
        services.kill_group(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process = None
