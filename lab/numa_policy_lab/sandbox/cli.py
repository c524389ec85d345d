"""``numa-policy-lab sandbox [--smoke] [--json] [--keep-running]``.

nova must choose its concurrency mode (native threads) before anything
imports oslo.messaging, and the ``numa-policy-lab`` command imports it for
its other subcommands. So ``numa-policy-lab sandbox`` replaces its process
(``exec``: same pid, no child) with ``python -m numa_policy_lab.sandbox``,
which decides first; importing this module stays cheap.
"""

import json
import logging
import os
import signal
import sys
import threading
import time

DEFAULT_URL_ENV = 'NUMA_POLICY_SANDBOX_TRANSPORT_URL'
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130


DESCRIPTION = ('nova in process (API, conductor, scheduler with the NUMA '
               'plugins, fake libvirt computes) with real placement, one '
               'agent per compute on the simulated backend, the collector '
               'and the REST API on SQLite; boots a mix of servers and '
               'summarises what happened.')


def register(subparsers):
    sandbox = subparsers.add_parser(
        'sandbox', help='the whole system on one machine',
        description=DESCRIPTION)
    add_arguments(sandbox)
    sandbox.set_defaults(func=exec_sandbox)


def add_arguments(sandbox):
    sandbox.add_argument('--smoke', action='store_true',
                         help='few servers and periods (CI)')
    sandbox.add_argument('--json', action='store_true',
                         help='print the summary as JSON on stdout')
    sandbox.add_argument('--keep-running', action='store_true',
                         help='leave the API up after the summary, until '
                              'Ctrl-C')
    sandbox.add_argument('--transport-url', default=os.environ.get(
        DEFAULT_URL_ENV, 'rabbit://guest:guest@127.0.0.1:5672/'),
        help='RabbitMQ for the reports (default: %(default)s)')
    sandbox.add_argument('--api-port', type=int, default=0,
                         help='port of the REST API on 127.0.0.1 '
                              '(default: a free one)')
    sandbox.add_argument('--seed', type=int, default=0)


def to_argv(args):
    """The sandbox's options of ``args`` as command line arguments."""
    argv = [flag for flag, on in (('--smoke', args.smoke),
                                  ('--json', args.json),
                                  ('--keep-running', args.keep_running))
            if on]
    return argv + ['--transport-url', args.transport_url,
                   '--api-port', str(args.api_port),
                   '--seed', str(args.seed)]


def exec_sandbox(args, out):
    out.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, '-m',
                              'numa_policy_lab.sandbox',
                              *to_argv(args)])


class _Interrupted(BaseException):
    """SIGINT or SIGTERM.

    A BaseException, so that no ``except Exception`` on the way swallows
    it.
    """


# Signals received and not yet acted on. The handler raises in whatever
# code the main thread runs, and library code that catches BaseException
# may swallow that; the pending signal is raised again at the next step.
_PENDING = []


def _interrupt(signum, _frame):
    # Once: a second Ctrl-C must not cut the cleanup short.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _PENDING.append(signal.Signals(signum).name)
    raise _Interrupted(_PENDING[0])


def _raise_pending():
    if _PENDING:
        raise _Interrupted(_PENDING[0])


_START = time.monotonic()


def _progress(line):
    # Progress goes to stderr so that --json leaves stdout to the JSON.
    sys.stderr.write(f'sandbox [{time.monotonic() - _START:5.1f}s] '
                     f'{line}\n')
    sys.stderr.flush()


def _progress_between_steps(line):
    _progress(line)
    _raise_pending()


def _first_error(exc):
    """The error to show: fixtures wrap setUp failures in a list."""
    from testtools import MultipleExceptions
    while isinstance(exc, MultipleExceptions):
        exc = exc.args[0][1]
    return exc


def run(args, out):
    """Start, script, summarise, clean up; the exit status."""
    from numa_policy_lab.sandbox import messaging
    from numa_policy_lab.sandbox import plan as plan_mod
    from numa_policy_lab.sandbox import run
    from numa_policy_lab.sandbox import summary as summary_mod

    # Services log warnings and errors on stderr; stdout carries only the
    # summary (some libraries log INFO to stdout when left alone).
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        force=True)
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    sandbox = run.Sandbox(plan_mod.build(args.smoke), args.transport_url,
                          _progress_between_steps, api_port=args.api_port,
                          seed=args.seed)
    started = False
    try:
        sandbox.setUp()
        started = True
        result = run.Script(sandbox).run()
        _raise_pending()
        if args.json:
            out.write(json.dumps(result, indent=2, sort_keys=True) + '\n')
        else:
            out.write(summary_mod.format_text(result))
        out.flush()
        if args.keep_running:
            _progress(f'the API stays up at {sandbox.api.url} (try: curl '
                      f'-H "X-Roles: admin" {sandbox.api.url}/v1/instances)'
                      f'; Ctrl-C to stop')
            threading.Event().wait()
        return 0 if result['ok'] else EXIT_FAILED
    except _Interrupted as exc:
        _PENDING.clear()
        _progress(f'{exc}: stopping everything')
        return 0 if args.keep_running and started else EXIT_INTERRUPTED
    except Exception as exc:
        exc = _first_error(exc)
        if not isinstance(exc, (messaging.SandboxError,
                                run.InjectedFailure)):
            logging.getLogger(__name__).error('sandbox failed',
                                              exc_info=exc)
        _progress(f'error: {exc}')
        return EXIT_FAILED
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        # Acted on, or too late to act on: cleaning up is what is left.
        _PENDING.clear()
        if started:
            # nova's thread pools narrate their shutdown at INFO.
            logging.getLogger('nova').setLevel(logging.WARNING)
            _progress('cleaning up')
            sandbox.cleanUp()
        _progress('stopped; nothing left running')
