"""The lab's service manager: what devstack's ``$SYSTEMCTL`` asks of systemd.

devstack's ``run_process`` writes a unit file (``write_user_unit_file``)
and runs ``$SYSTEMCTL enable`` and ``start`` on it; ``stop_process`` runs
``is-enabled``, ``stop`` and ``disable``. This machine (and a lab host)
has no systemd running as its init, so tests/devstack/with_devstack.sh
points ``$SYSTEMCTL`` here: the same verbs, carried out on the unit files
exactly as devstack wrote them. ``start`` runs ``ExecStart`` as the
unit's ``User`` and ``Group`` with its ``Environment``, in a session of
its own, output to ``<state>/<unit>.log``; ``stop`` sends SIGTERM to the
main process (devstack's ``KillMode=process``) and waits up to the unit's
``TimeoutStopSec`` before SIGKILL, as systemd does.

Run as root (devstack calls it through sudo)::

    unitctl.py --units DIR --state DIR VERB [UNIT]
"""

import argparse
import grp
import os
import pwd
import shlex
import signal
import subprocess
import sys
import time

# systemd's own default when a unit names none.
DEFAULT_STOP_TIMEOUT = 90
# What a service started by systemd finds in its environment before the
# unit's Environment= lines.
BASE_ENVIRONMENT = {'LANG': 'C.UTF-8',
                    'PATH': '/usr/local/sbin:/usr/local/bin:/usr/sbin:'
                            '/usr/bin:/sbin:/bin'}


class UnitError(Exception):
    """A verb that systemd would refuse; the message says why."""


def parse_unit(text):
    """{section: {key: [values]}} of a unit file as devstack writes it."""
    sections = {}
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(('#', ';')):
            continue
        if line.startswith('[') and line.endswith(']'):
            current = sections.setdefault(line[1:-1], {})
            continue
        if current is None or '=' not in line:
            raise UnitError(f'not a unit file line: {raw!r}')
        key, value = line.split('=', 1)
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def service_settings(unit):
    """What ``start`` needs of a unit: argv, user, group, env, timeout."""
    service = unit.get('Service', {})
    if 'ExecStart' not in service:
        raise UnitError('the unit has no ExecStart')
    argv = shlex.split(service['ExecStart'][-1])
    if not argv or not os.path.isabs(argv[0]):
        raise UnitError(f'ExecStart is not an absolute command: {argv!r}')
    env = dict(BASE_ENVIRONMENT)
    for line in service.get('Environment', []):
        for assignment in shlex.split(line):
            name, _, value = assignment.partition('=')
            env[name] = value
    timeout = service.get('TimeoutStopSec', [str(DEFAULT_STOP_TIMEOUT)])[-1]
    return {'argv': argv,
            'user': (service.get('User') or ['root'])[-1],
            'group': (service.get('Group') or [None])[-1],
            'env': env,
            'stop_timeout': float(timeout)}


class Manager:
    """Units under ``units_dir``; pids, enablement and logs under ``state``."""

    def __init__(self, units_dir, state):
        self.units_dir = units_dir
        self.state = state
        os.makedirs(state, exist_ok=True)

    def _path(self, unit, suffix):
        return os.path.join(self.state, unit + suffix)

    def log_path(self, unit):
        return self._path(unit, '.log')

    def unit(self, unit):
        """The unit file ``unit``, parsed; UnitError if there is none."""
        path = os.path.join(self.units_dir, unit)
        try:
            with open(path) as f:
                return parse_unit(f.read())
        except FileNotFoundError:
            raise UnitError(f'Unit {unit} not found in {self.units_dir}.')

    def pid(self, unit):
        try:
            with open(self._path(unit, '.pid')) as f:
                pid = int(f.read())
        except (FileNotFoundError, ValueError):
            return None
        return pid if _alive(pid) else None

    # -- the verbs devstack uses ------------------------------------------

    def daemon_reload(self):
        """Units are read when started: nothing to reload."""

    def enable(self, unit):
        self.unit(unit)
        open(self._path(unit, '.enabled'), 'w').close()

    def disable(self, unit):
        try:
            os.remove(self._path(unit, '.enabled'))
        except FileNotFoundError:
            pass

    def is_enabled(self, unit):
        return os.path.exists(self._path(unit, '.enabled'))

    def start(self, unit):
        if self.pid(unit):
            return
        settings = service_settings(self.unit(unit))
        user = pwd.getpwnam(settings['user'])
        gid = (grp.getgrnam(settings['group']).gr_gid if settings['group']
               else user.pw_gid)
        env = dict(settings['env'], HOME=user.pw_dir, USER=user.pw_name,
                   LOGNAME=user.pw_name)
        with open(self.log_path(unit), 'ab') as log:
            process = subprocess.Popen(
                settings['argv'], env=env, cwd='/', stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                user=user.pw_uid, group=gid,
                extra_groups=os.getgrouplist(user.pw_name, user.pw_gid))
        with open(self._path(unit, '.pid'), 'w') as f:
            f.write(str(process.pid))

    def stop(self, unit):
        pid = self.pid(unit)
        if pid is not None:
            timeout = service_settings(self.unit(unit))['stop_timeout']
            _terminate(pid, timeout)
        try:
            os.remove(self._path(unit, '.pid'))
        except FileNotFoundError:
            pass

    def stop_all(self):
        """Every unit still running (a test's cleanup)."""
        for name in sorted(os.listdir(self.state)):
            if name.endswith('.pid'):
                self.stop(name[:-len('.pid')])


def _alive(pid):
    try:
        with open(f'/proc/{pid}/stat') as f:
            state = f.read().rsplit(')', 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != 'Z'


def _terminate(pid, timeout):
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--units', required=True)
    parser.add_argument('--state', required=True)
    parser.add_argument('verb')
    parser.add_argument('unit', nargs='?')
    parser.add_argument('extra', nargs='*')
    args = parser.parse_args(argv)
    manager = Manager(args.units, args.state)
    try:
        if args.verb == 'daemon-reload':
            manager.daemon_reload()
        elif args.verb == 'stop-all':
            manager.stop_all()
        elif args.unit is None:
            raise UnitError(f'{args.verb} needs a unit')
        elif args.verb == 'is-enabled':
            enabled = manager.is_enabled(args.unit)
            print('enabled' if enabled else 'disabled')
            return 0 if enabled else 1
        elif args.verb == 'is-active':
            active = manager.pid(args.unit) is not None
            print('active' if active else 'inactive')
            return 0 if active else 3
        elif args.verb == 'status':
            pid = manager.pid(args.unit)
            print(f'{args.unit}: ' + (f'active (running), main pid {pid}'
                                      if pid else 'inactive (dead)'))
            return 0 if pid else 3
        elif args.verb in ('enable', 'disable', 'start', 'stop'):
            getattr(manager, args.verb)(args.unit)
        elif args.verb == 'restart':
            manager.stop(args.unit)
            manager.start(args.unit)
        else:
            raise UnitError(f'unknown verb {args.verb}')
    except UnitError as exc:
        print(f'unitctl: {exc}', file=sys.stderr)
        return 5
    return 0


if __name__ == '__main__':
    sys.exit(main())
