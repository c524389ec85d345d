"""The agent's and the collector's processes, run by oslo.service.

Each service is an oslo.service ``ServiceBase`` that oslo.service
launches and whose signals it handles, on its threading backend and in
one process (``no_fork``):

* the threading backend, because both services run native threads that
  eventlet's hub would hold up (libvirt's event loop, a C call that
  blocks; oslo.messaging's threading executor);
* one process, because oslo.service's other mode makes the process a
  deployment starts a supervisor (cotyledon's) of a child that does the
  work: a SIGHUP would restart the child, a new agent boot with a new
  ``boot_id`` in its reports, and the supervisor's exit codes would be
  what a service manager sees.

What the signals do, then:

* SIGTERM: oslo.service calls the service's ``stop``, which ends it in
  order (each service's ``stop`` says what that is), and exits 0; a stop
  longer than ``[DEFAULT] graceful_shutdown_timeout`` (60 s unless set)
  exits 1 there and then.
* SIGINT: the same as SIGTERM. oslo.service itself ends the process at
  once with 1 on SIGINT; a Ctrl-C in a terminal should leave a host as a
  service manager's stop does.
* SIGHUP: a restart in place, which is what it is for nova's services
  under oslo.service (their supervisor starts a new child): oslo.service's
  one-process mode reloads nothing and raises out of the main thread's
  wait; :func:`run` stops the service in order and executes the same
  command again in the same process, which reads its configuration anew
  (the agent: a new boot, so a new ``boot_id`` in its reports).

oslo.service offers its backends through one choice per process, made
by the first import that asks for one: oslo.messaging's import asks, and
takes the default (eventlet's, loaded but not patched in). A process
that loads nova too (nova's test suites, the sandbox) must keep nova's
choice. So the launcher takes the threading backend's own launcher by
its module (``oslo_service.backend._threading.service``, the class
oslo.service hands out as ``ProcessLauncher`` when that backend is
chosen) and chooses nothing for the process.
"""

import os
import signal
import sys
import warnings

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


# The threading backend's futurist imports eventlet, where it is
# installed (beside nova it is), only to tell green threads apart, and
# eventlet warns on import that it is deprecated: a warning about a
# library these services do not use.
warnings.filterwarnings('ignore', message='\nEventlet is deprecated',
                        module='futurist')
from oslo_service.backend._threading import service as threading  # noqa


def _interrupt_as_terminate(signum, frame):
    os.kill(os.getpid(), signal.SIGTERM)


def this_command_again():
    """The command line this process was started with, to execute anew."""
    return [sys.executable, *sys.orig_argv[1:]]


def run(conf, service, restart=os.execv):
    """Run ``service`` in this process until it ends or a signal ends it.

    Returns 0 when the service ended by itself; SIGTERM and SIGINT end
    the process from oslo.service's handler, SIGHUP by ``restart``.
    """
    launcher = threading.ProcessLauncher(conf, no_fork=True)
    signal.signal(signal.SIGINT, _interrupt_as_terminate)
    try:
        launcher.launch_service(service)
    except SystemExit as exc:
        # oslo.service's SignalExit, raised by its SIGHUP handler.
        if getattr(exc, 'signo', None) != signal.SIGHUP:
            raise
        LOG.info('SIGHUP: stopping, then starting again in this process '
                 'to read the configuration anew')
        service.stop()
        command = this_command_again()
        restart(command[0], command)
    return 0
