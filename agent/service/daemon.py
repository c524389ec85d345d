"""The agent as an oslo.service service: its periods in a thread of its own.

oslo.service (:mod:`nova_numa_policy.launcher`) starts it, waits on it
in the main thread and, on SIGTERM or SIGINT, calls :meth:`AgentService.stop`
from its handler. The periods run in a thread so that the main thread
is free for that: it only waits.
"""

import threading

from oslo_log import log as logging
from oslo_service.backend import base as service_base

LOG = logging.getLogger(__name__)


class AgentService(service_base.ServiceBase):
    """Wait for libvirt, build the agent, run its periods until stopped.

    ``build(stopped)``: the agent once libvirt answers, or None if
    ``stopped`` was set while waiting for it. ``starting(agent)``: logs
    the start line. ``sender``: the report sender, started; ``lock``:
    the host lock held, or None (a dry run).
    """

    def __init__(self, build, starting, sender, lock):
        self._build = build
        self._starting = starting
        self._sender = sender
        self._lock = lock
        self._stopped = threading.Event()
        self._agent = None
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self._run,
                                        name='numa-policy-agent')
        self._thread.start()

    def _run(self):
        agent = self._build(self._stopped)
        if agent is None:
            return
        self._agent = agent
        # A stop that came while the agent was built finds no agent to
        # stop; it set the event, read here after the agent is known.
        if self._stopped.is_set():
            agent.stop()
        self._starting(agent)
        try:
            agent.daemon_loop()
        finally:
            agent.close()

    def stop(self):
        """End in order, once, from oslo.service's handler or after SIGHUP.

        The period's plan finished or rolled back (the loop ends between
        steps), the pending reports handed over, the host lock released.
        """
        self._stopped.set()
        if self._agent is not None:
            self._agent.stop()
        if self._thread is not None:
            self._thread.join()
        self._sender.stop()
        LOG.info('numa-policy-agent stopped')
        if self._lock is not None:
            self._lock.close()

    def wait(self):
        if self._thread is not None:
            self._thread.join()

    def reset(self):
        """Nothing to reset: one process, never restarted in place."""
