"""The report listener lives and dies with the scheduler service.

nova offers a scheduler plugin no hook of its own for the service's
stop or its SIGHUP. The scheduler manager has both, so they are wrapped
once per process, the first time a plugin reads the report cache (nova
builds its filters inside the scheduler service):

* ``set_shutdown_in_progress``, which every ``Service.stop`` calls
  first and in its own thread, stops the listener, so no oslo.messaging
  poller outlives the service. Not ``graceful_shutdown``: the service
  runs that in a thread of its own and waits for it only up to
  ``manager_shutdown_timeout`` (0 in nova's test fixtures), so a stop
  there could still run after the service's stop had returned;
* ``reset`` (SIGHUP) listens anew, with the options re-read, on the
  same cache: the hosts' last reports stay known meanwhile.
"""

import functools

from oslo_log import log as logging

from placement_filters import listener

LOG = logging.getLogger(__name__)


def _before(method, action):
    @functools.wraps(method)
    def wrapped(*args, **kwargs):
        try:
            action()
        except Exception:  # never let ours stop nova's own shutdown
            LOG.exception('NUMA report listener: %s failed',
                          action.__name__)
        return method(*args, **kwargs)
    wrapped.numa_policy_wrapped = True
    return wrapped


def install(manager_class=None):
    """Tie the listener to ``manager_class`` (nova's SchedulerManager).

    Idempotent: a method already wrapped is left as it is. nova builds
    its filters and weighers in one thread, so no lock is needed.
    """
    if manager_class is None:
        from nova.scheduler import manager
        manager_class = manager.SchedulerManager
    for name, action in (('set_shutdown_in_progress', listener.RUNTIME.stop),
                         ('reset', listener.RUNTIME.restart)):
        method = getattr(manager_class, name)
        if not getattr(method, 'numa_policy_wrapped', False):
            setattr(manager_class, name, _before(method, action))
