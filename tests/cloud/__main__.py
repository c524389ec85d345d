"""``python -m tests.cloud up|down``: the cloud by hand.

``up`` starts the control plane and stays in the foreground until
Ctrl-C (or SIGTERM); ``--computes`` adds the two compute lab hosts
(tests/cloud/cloud.py) and ``--horizon`` Horizon with our panel on
127.0.0.1:8090 (tests/cloud/horizon). ``up --detach`` leaves that
foreground process running in the background and returns once all of
it is up. ``down`` stops the cloud of a work directory: the services,
the lab hosts (they die with the foreground process), the databases and
the vhost.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

from tests.cloud import cloud as cloud_mod
from tests.cloud import control
from tests.cloud import horizon
from tests.cloud import infra
from tests.cloud import layout as lay

DETACHED_LOG = 'control.out'
# Written once everything asked for is up; a detached start waits for it.
READY = 'ready'
DOWN_TIMEOUT = 60


def parse_args(argv):
    parser = argparse.ArgumentParser(prog='python -m tests.cloud')
    commands = parser.add_subparsers(dest='command', required=True)
    for name, text in (('up', 'start the control plane, and what is asked'),
                       ('down', 'stop the cloud of WORKDIR')):
        command = commands.add_parser(name, help=text)
        command.add_argument('--workdir', default=control.DEFAULT_WORKDIR)
    up = commands.choices['up']
    up.add_argument('--detach', action='store_true',
                    help='return once the cloud is up; stop it with "down"')
    up.add_argument('--computes', action='store_true',
                    help='also boot the two compute lab hosts')
    up.add_argument('--horizon', action='store_true',
                    help='also serve Horizon with our panel on '
                         f'127.0.0.1:{horizon.PORT} (its virtualenv in '
                         'NUMA_CLOUD_HORIZON_VENV)')
    return parser.parse_args(argv)


def _summary(control_plane, computes=(), horizon_url=None, key=None):
    layout = control_plane.layout
    lines = [f'Control plane up in {control_plane.startup_seconds:.1f} s.',
             f'  openrc:  {layout.openrc}  (. it, then use "openstack")',
             f'  logs:    {layout.logs}/']
    for name, host in computes:
        lines.append(f'  compute: {name}: ssh -i {key} -p {host.ssh.port} '
                     f'root@{host.ssh.address}; nova-compute logs in '
                     f'{host.lab.share}/nova-compute/')
    if horizon_url:
        lines.append(f'  horizon: {horizon_url}  (admin / '
                     f'{lay.ADMIN_PASSWORD})')
    lines.append(f'  stop:    python -m tests.cloud down --workdir '
                 f'{layout.workdir}')
    return '\n'.join(lines)


def up(workdir, computes=False, with_horizon=False):
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    whole = cloud_mod.Cloud(workdir) if computes else None
    control_plane = whole.control if whole else control.ControlPlane(workdir)
    served = None
    try:
        (whole or control_plane).start()
        if with_horizon:
            served = horizon.Horizon(control_plane.layout.workdir,
                                     horizon.venv()).start()
        print(_summary(control_plane,
                       sorted(whole.computes.items()) if whole else (),
                       served.url if served else None,
                       whole.ssh_key if whole else None), flush=True)
        with open(os.path.join(control_plane.layout.workdir, READY), 'w'):
            pass
        while not stopping.wait(1):
            pass
    finally:
        print('Stopping the cloud...', flush=True)
        if served is not None:
            served.stop()
        (whole or control_plane).stop()
        _remove(os.path.join(control_plane.layout.workdir, READY))
    return 0


def _remove(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def up_detached(workdir, options=()):
    """Run ``up`` in a session of its own; return once the cloud is up."""
    layout = lay.Layout(os.path.abspath(workdir))
    os.makedirs(layout.workdir, exist_ok=True)
    ready = os.path.join(layout.workdir, READY)
    _remove(ready)
    out_path = os.path.join(layout.workdir, DETACHED_LOG)
    with open(out_path, 'w') as out:
        process = subprocess.Popen(
            [sys.executable, '-m', 'tests.cloud', 'up', '--workdir',
             layout.workdir, *options], stdin=subprocess.DEVNULL,
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            cwd=os.getcwd())
    while process.poll() is None:
        if os.path.exists(ready) and _pid(layout) == process.pid:
            with open(out_path) as f:
                print(f.read().strip())
            return 0
        time.sleep(0.5)
    with open(out_path) as f:
        print(f.read()[-4000:], file=sys.stderr)
    return 1


def _pid(layout):
    try:
        with open(layout.state) as f:
            return json.load(f)['pid']
    except (OSError, ValueError, KeyError):
        return None


def down(workdir):
    layout = lay.Layout(os.path.abspath(workdir))
    pid = _pid(layout)
    if pid is not None:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pid = None
    deadline = time.monotonic() + DOWN_TIMEOUT
    while pid is not None and _alive(pid):
        if time.monotonic() > deadline:
            print(f'process {pid} still running', file=sys.stderr)
            return 1
        time.sleep(0.5)
    # Whatever a process killed outright left behind.
    infra.drop_databases()
    infra.delete_vhost()
    print('Cloud down.')
    return 0


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == 'down':
        return down(args.workdir)
    options = [flag for flag, wanted in (('--computes', args.computes),
                                         ('--horizon', args.horizon))
               if wanted]
    if args.detach:
        return up_detached(args.workdir, options)
    return up(args.workdir, args.computes, args.horizon)


if __name__ == '__main__':
    sys.exit(main())
