"""``python -m tests.cloud up|down``: the control plane by hand.

``up`` starts it and stays in the foreground until Ctrl-C (or SIGTERM);
``up --detach`` leaves that foreground process running in the
background and returns once the cloud is up. ``down`` stops the cloud
of a work directory: the services, the databases and the vhost.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

from tests.cloud import control
from tests.cloud import infra
from tests.cloud import layout as lay

DETACHED_LOG = 'control.out'
DOWN_TIMEOUT = 60


def parse_args(argv):
    parser = argparse.ArgumentParser(prog='python -m tests.cloud')
    commands = parser.add_subparsers(dest='command', required=True)
    for name, text in (('up', 'start the control plane'),
                       ('down', 'stop the control plane of WORKDIR')):
        command = commands.add_parser(name, help=text)
        command.add_argument('--workdir', default=control.DEFAULT_WORKDIR)
    commands.choices['up'].add_argument(
        '--detach', action='store_true',
        help='return once the cloud is up; stop it with "down"')
    return parser.parse_args(argv)


def _summary(cloud):
    layout = cloud.layout
    return (f'Control plane up in {cloud.startup_seconds:.1f} s.\n'
            f'  openrc: {layout.openrc}  (. it, then use "openstack")\n'
            f'  logs:   {layout.logs}/\n'
            f'  stop:   python -m tests.cloud down --workdir '
            f'{layout.workdir}')


def up(workdir):
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    cloud = control.ControlPlane(workdir)
    try:
        cloud.start()
        print(_summary(cloud), flush=True)
        while not stopping.wait(1):
            pass
    finally:
        print('Stopping the control plane...', flush=True)
        cloud.stop()
    return 0


def up_detached(workdir):
    """Run ``up`` in a session of its own; return once the cloud is up."""
    layout = lay.Layout(os.path.abspath(workdir))
    os.makedirs(layout.workdir, exist_ok=True)
    out_path = os.path.join(layout.workdir, DETACHED_LOG)
    with open(out_path, 'w') as out:
        process = subprocess.Popen(
            [sys.executable, '-m', 'tests.cloud', 'up', '--workdir',
             layout.workdir], stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
            cwd=os.getcwd())
    while process.poll() is None:
        if _pid(layout) == process.pid:
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
    print('Control plane down.')
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
    if args.detach:
        return up_detached(args.workdir)
    return up(args.workdir)


if __name__ == '__main__':
    sys.exit(main())
