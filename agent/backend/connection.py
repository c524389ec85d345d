"""One libvirt connection that survives libvirtd restarts, and its events.

Libvirt's default event loop runs in a daemon thread; lifecycle callbacks
only note which domain changed and wake the agent loop, which does the work
in its own thread. The connection is opened lazily and reopened after it is
lost, with a doubling backoff so a dead libvirtd costs one attempt per wait.
"""

import threading
import time

import libvirt
from oslo_log import log as logging
import tenacity

from nova_numa_policy.contracts import errors

LOG = logging.getLogger(__name__)

# Events after which a guest may be new to this agent or its XML new to
# libvirt: its policy must be (re)checked at once, not at the next period.
WAKE_EVENTS = {
    libvirt.VIR_DOMAIN_EVENT_STARTED: 'started',
    libvirt.VIR_DOMAIN_EVENT_RESUMED: 'resumed',
    libvirt.VIR_DOMAIN_EVENT_DEFINED: 'defined',
}
# Errors that mean the connection, not the call, failed.
CONNECTION_ERRORS = (libvirt.VIR_ERR_NO_CONNECT,
                     libvirt.VIR_ERR_INVALID_CONN,
                     libvirt.VIR_ERR_RPC)
_event_loop_lock = threading.Lock()
_event_loop_started = False


def reconnect_backoff(maximum):
    """The wait after each failed attempt: 1 s, then doubling, capped."""
    return tenacity.wait_exponential(multiplier=1, min=1, max=maximum)


def is_connection_error(exc):
    return (exc.get_error_code() in CONNECTION_ERRORS
            or exc.get_error_domain() == libvirt.VIR_FROM_RPC)


def _run_event_loop():
    while True:
        libvirt.virEventRunDefaultImpl()


def quiet_libvirt_errors():
    """Stop libvirt printing every error on stderr itself.

    Each error reaches the agent as an exception, which it logs or turns
    into one line for the operator; libvirt's own copy would be a second.
    """
    libvirt.registerErrorHandler(lambda _ctx, _error: None, None)


def start_event_loop():
    """Register and run libvirt's default event loop, once per process."""
    global _event_loop_started
    with _event_loop_lock:
        if _event_loop_started:
            return
        libvirt.virEventRegisterDefaultImpl()
        threading.Thread(target=_run_event_loop, name='libvirt-events',
                         daemon=True).start()
        _event_loop_started = True


class Connection:
    """Lazily opened, self-healing libvirt connection."""

    def __init__(self, uri, on_domain_event=None, max_delay=60.0,
                 clock=time.monotonic, opener=libvirt.open):
        self.uri = uri
        self._on_domain_event = on_domain_event
        self._backoff = reconnect_backoff(max_delay)
        self._clock = clock
        self._opener = opener
        self._conn = None
        # The failed attempts of the current outage, as tenacity counts
        # them; None while connected. get() never blocks: the agent loop
        # carries on without libvirt, so the wait is a time to try again
        # at rather than a sleep.
        self._outage = None
        self._retry_at = 0.0
        self._callback_ids = []
        # Bumped on every (re)connection so cached host facts are refreshed.
        self.generation = 0

    def get(self):
        """The open connection; raise ConnectionLost while there is none."""
        if self._conn is not None and self._alive():
            return self._conn
        self._drop()
        now = self._clock()
        if now < self._retry_at:
            raise errors.ConnectionLost(
                f'libvirt {self.uri}: next attempt in '
                f'{self._retry_at - now:.1f}s',
                retry_in=self._retry_at - now)
        try:
            conn = self._opener(self.uri)
        except libvirt.libvirtError as exc:
            delay = self._failed_attempt()
            self._retry_at = now + delay
            raise errors.ConnectionLost(
                f'cannot connect to libvirt {self.uri}: {exc}; retrying in '
                f'{delay:.0f}s', reason=str(exc), retry_in=delay)
        self._conn = conn
        self._outage = None
        self.generation += 1
        self._register(conn)
        LOG.info('Connected to libvirt %s', self.uri)
        return conn

    def _failed_attempt(self):
        """Count a failed attempt; the seconds to wait before the next."""
        if self._outage is None:
            self._outage = tenacity.RetryCallState(None, None, (), {})
        else:
            self._outage.prepare_for_next_attempt()
        return self._backoff(self._outage)

    @property
    def retry_in(self):
        return max(0.0, self._retry_at - self._clock())

    def lost(self, exc):
        """Note that a call failed because the connection did."""
        LOG.warning('Lost libvirt connection %s: %s', self.uri, exc)
        self._drop()

    def _alive(self):
        try:
            return self._conn.isAlive() == 1
        except libvirt.libvirtError:
            return False

    def _register(self, conn):
        if self._on_domain_event is None or not _event_loop_started:
            return
        try:
            self._callback_ids = [
                conn.domainEventRegisterAny(
                    None, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE,
                    self._lifecycle, None),
                conn.domainEventRegisterAny(
                    None, libvirt.VIR_DOMAIN_EVENT_ID_REBOOT,
                    self._reboot, None),
            ]
        except libvirt.libvirtError as exc:
            # Without events the period alone drives the agent.
            LOG.warning('libvirt %s offers no domain events: %s', self.uri,
                        exc)

    def _lifecycle(self, conn, dom, event, detail, opaque):
        if event in WAKE_EVENTS:
            self._on_domain_event(dom.UUIDString(), WAKE_EVENTS[event])

    def _reboot(self, conn, dom, opaque):
        self._on_domain_event(dom.UUIDString(), 'rebooted')

    def _drop(self):
        conn, self._conn = self._conn, None
        if conn is None:
            return
        for callback_id in self._callback_ids:
            try:
                conn.domainEventDeregisterAny(callback_id)
            except libvirt.libvirtError:
                pass
        self._callback_ids = []
        try:
            conn.close()
        except libvirt.libvirtError:
            pass

    def close(self):
        self._drop()
