"""The request server inside a lab host: runs what the tests ask for.

Started by ``guest.sh`` with the project's own virtualenv (this
machine's root file system is the guest's), it serves requests written
by :class:`tests.labhost.machine.LabHost` into the shared directory:

* ``sh``: a shell command, as root or another user;
* ``call``: ``module:function`` with JSON arguments, in a child forked
  from this process, which has already imported the heavy modules the
  host named (under emulation one Python start with libvirt and oslo
  costs over ten seconds; a fork costs milliseconds).

Requests run concurrently; each result is written with its exit status,
output and, for calls, the function's JSON value or the traceback. The
share has no inotify (9p), so the directory is polled.
"""

import importlib
import json
import os
import pwd
import signal
import subprocess
import sys
import time
import traceback

POLL_INTERVAL = 0.02
# Idle, the server polls ever more slowly, down to this. Under emulation
# each listing of the share costs the lab host's CPUs: an idle lab host
# polling at 50 Hz kept half a core of this machine busy, beside the lab
# host a test was using.
IDLE_POLL_INTERVAL = 0.3
IDLE_BACKOFF = 1.5
# Output kept per stream; a test that needs more reads a file instead.
MAX_OUTPUT = 4 * 1024 * 1024


def write_json(path, value):
    """Write ``value`` so the reader never sees half of it."""
    tmp = f'{path}.tmp'
    with open(tmp, 'w') as f:
        json.dump(value, f)
    os.rename(tmp, path)


def _read_text(path):
    try:
        with open(path, 'rb') as f:
            return f.read(MAX_OUTPUT).decode(errors='replace')
    except FileNotFoundError:
        return ''


def _user_ids(user):
    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid, os.getgrouplist(user, entry.pw_gid)


def become(user):
    """Drop to ``user`` with its groups, as a login would."""
    uid, gid, groups = _user_ids(user)
    os.setgroups(groups)
    os.setgid(gid)
    os.setuid(uid)
    os.environ['HOME'] = '/tmp'
    os.environ['USER'] = os.environ['LOGNAME'] = user


class Running:
    """One request under way: a process and where its output goes."""

    def __init__(self, request, workdir):
        self.request = request
        self.id = request['id']
        self.out = os.path.join(workdir, f'{self.id}.out')
        self.err = os.path.join(workdir, f'{self.id}.err')
        self.value_path = os.path.join(workdir, f'{self.id}.value')
        self.deadline = time.monotonic() + request.get('timeout', 60)
        self.timed_out = False
        self.pid = None
        self.popen = None

    def start(self):
        if self.request['kind'] == 'sh':
            self._start_shell()
        else:
            self._start_call()

    def _start_shell(self):
        user = self.request.get('user')
        env = dict(os.environ, **self.request.get('env', {}))
        with open(self.out, 'wb') as out, open(self.err, 'wb') as err:
            self.popen = subprocess.Popen(
                ['/bin/sh', '-c', self.request['cmd']],
                stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                start_new_session=True,
                preexec_fn=(lambda: become(user)) if user else None)
        self.pid = self.popen.pid

    def _start_call(self):
        pid = os.fork()
        if pid:
            self.pid = pid
            return
        code = 1
        try:
            os.setsid()
            for fd, path in ((1, self.out), (2, self.err)):
                target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(target, fd)
            sys.stdout = os.fdopen(1, 'w', buffering=1)
            sys.stderr = os.fdopen(2, 'w', buffering=1)
            # Opened before dropping to another user; read by the server
            # once this child has exited.
            value_file = open(self.value_path, 'w')
            os.environ.update(self.request.get('env', {}))
            if self.request.get('user'):
                become(self.request['user'])
            module_name, _, name = self.request['target'].partition(':')
            function = getattr(importlib.import_module(module_name), name)
            value = function(*self.request.get('args', ()),
                             **self.request.get('kwargs', {}))
            json.dump({'value': value}, value_file)
            value_file.close()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    def poll(self):
        """The exit status once finished, else None; enforces the timeout."""
        if self.popen is not None:
            status = self.popen.poll()
        else:
            done, raw = os.waitpid(self.pid, os.WNOHANG)
            status = os.waitstatus_to_exitcode(raw) if done else None
        if status is None and time.monotonic() > self.deadline:
            self.timed_out = True
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return status

    def result(self, status):
        result = {'id': self.id, 'rc': status, 'timed_out': self.timed_out,
                  'stdout': _read_text(self.out),
                  'stderr': _read_text(self.err)}
        if self.request['kind'] == 'call':
            try:
                with open(self.value_path) as f:
                    result.update(json.load(f))
            except (FileNotFoundError, ValueError):
                result['error'] = result['stderr'] or 'no value returned'
        for path in (self.out, self.err, self.value_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        return result


def next_poll_interval(interval, active):
    """How long to sleep before the next round of polling.

    ``active``: the round started a request or finished one, so a test
    is talking to the lab host and its next request is likely soon.
    """
    if active:
        return POLL_INTERVAL
    return min(IDLE_POLL_INTERVAL, interval * IDLE_BACKOFF)


def preload(names):
    """Import each ``module``; call each ``module:function`` too.

    What the server holds when it forks, every call's child has already:
    imported modules, and what a called function caches.
    """
    for name in names:
        module, _, function = name.partition(':')
        loaded = importlib.import_module(module)
        if function:
            getattr(loaded, function)()


def read_request(path):
    """(request, error) of a request file; the error a line, or None.

    A request names its result by its ``id``, the file's own name where
    it gives none; one that is not a JSON object is answered with an
    error under that name: a bad request never ends the server.
    """
    stem = os.path.splitext(os.path.basename(path))[0]
    try:
        with open(path) as f:
            request = json.load(f)
    except ValueError as exc:
        return {'id': stem}, f'request {stem}: not JSON: {exc}'
    if not isinstance(request, dict):
        return {'id': stem}, f'request {stem}: not a JSON object'
    request.setdefault('id', stem)
    if request.get('kind') not in ('sh', 'call'):
        return request, (f'request {request["id"]}: unknown kind '
                         f'{request.get("kind")!r}')
    return request, None


def answer_error(results, request_id, error, stderr):
    """The result of a request that never ran."""
    write_json(os.path.join(results, f'{request_id}.json'),
               {'id': request_id, 'rc': None, 'timed_out': False,
                'stdout': '', 'stderr': stderr, 'error': error})


def serve(share):
    requests = os.path.join(share, 'requests')
    results = os.path.join(share, 'results')
    workdir = '/tmp/lab-requests'
    os.makedirs(workdir, exist_ok=True)
    with open(os.path.join(share, 'preload.json')) as f:
        preload(json.load(f))
    write_json(os.path.join(share, 'ready'), {'pid': os.getpid()})
    running = {}
    interval = POLL_INTERVAL
    while True:
        active = False
        for name in sorted(os.listdir(requests)):
            if not name.endswith('.json'):
                continue
            path = os.path.join(requests, name)
            request, error = read_request(path)
            os.unlink(path)
            active = True
            if error:
                answer_error(results, request['id'], error, error)
                continue
            job = Running(request, workdir)
            try:
                job.start()
            except Exception:
                answer_error(results, job.id, 'could not start',
                             traceback.format_exc())
                continue
            running[job.id] = job
        for job_id, job in list(running.items()):
            status = job.poll()
            if status is not None:
                write_json(os.path.join(results, f'{job_id}.json'),
                           job.result(status))
                del running[job_id]
                active = True
        interval = next_poll_interval(interval, active)
        time.sleep(interval)


if __name__ == '__main__':
    serve(sys.argv[1])
