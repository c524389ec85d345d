"""Send HostReports and actions without ever holding up enforcement.

The agent hands each report to :meth:`ReportSender.submit` and carries on;
a daemon thread sends the newest one. While the broker is down the newest
report waits (older ones are superseded, they would be stale anyway) and is
sent as soon as the broker answers again.

Each action the agent carries out is handed to
:meth:`ReportSender.submit_action` (the ``numa_policy.action``
notification, nova_numa_policy/objects/action.py). Actions are not
superseded: they wait in order, before the report, up to
:data:`MAX_WAITING_ACTIONS`; beyond that the oldest are dropped, counted
and said.
"""

import collections
import threading

from oslo_log import log as logging
import oslo_messaging

from nova_numa_policy.objects import action as action_wire
from nova_numa_policy.objects import report as report_obj

LOG = logging.getLogger(__name__)
EVENT_TYPE = report_obj.EVENT_TYPE
ACTION_EVENT_TYPE = action_wire.EVENT_TYPE
# Actions kept while the broker is away: a few periods' worth at the
# agent's default budget of 64 actions a period.
MAX_WAITING_ACTIONS = 512


def make_notifier(conf, host):
    transport = oslo_messaging.get_notification_transport(conf)
    # The agent exists to report: without an explicit driver in
    # [oslo_messaging_notifications], use messagingv2 rather than noop.
    driver = None if conf.oslo_messaging_notifications.driver \
        else 'messagingv2'
    return oslo_messaging.Notifier(
        transport, publisher_id=f'numa-policy-agent.{host}', driver=driver,
        topics=[conf.numa_policy_reports.topic], retry=0)


class ReportSender:
    def __init__(self, notifier, retry_interval=5.0):
        self._notifier = notifier
        self._retry_interval = retry_interval
        self._lock = threading.Lock()
        self._pending = None
        # Full, an append drops the oldest waiting action.
        self._actions = collections.deque(maxlen=MAX_WAITING_ACTIONS)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = None
        self.sent = 0
        self.actions_sent = 0
        self.actions_dropped = 0

    def submit_action(self, payload):
        """Queue an action's payload; the oldest waiting goes when full."""
        with self._lock:
            full = len(self._actions) == self._actions.maxlen
            self._actions.append(payload)
            if full:
                self.actions_dropped += 1
                if self.actions_dropped == 1:
                    LOG.warning('Actions are waiting for the broker beyond '
                                '%d: the oldest are dropped (counted in '
                                'actions_dropped)', MAX_WAITING_ACTIONS)
        self._wake.set()

    def submit(self, payload):
        with self._lock:
            self._pending = payload
        self._wake.set()

    def start(self):
        self._thread = threading.Thread(target=self._run,
                                        name='report-sender', daemon=True)
        self._thread.start()

    def stop(self, timeout=5.0):
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout)

    def _take(self):
        with self._lock:
            payload, self._pending = self._pending, None
        return payload

    def _put_back(self, payload):
        with self._lock:
            if self._pending is None:
                self._pending = payload

    def _send_actions(self):
        """Send the waiting actions in order; False if sending failed."""
        while True:
            with self._lock:
                if not self._actions:
                    return True
                payload = self._actions[0]
            try:
                self._notifier.info({}, ACTION_EVENT_TYPE, payload)
            except Exception as exc:
                LOG.warning('Could not send an action, will retry: %s', exc)
                return False
            with self._lock:
                # Still the first unless dropped for room meanwhile.
                if self._actions and self._actions[0] is payload:
                    self._actions.popleft()
            self.actions_sent += 1

    def send_pending(self):
        """Send the waiting actions, then the newest report, if any.

        Returns False if sending failed.
        """
        if not self._send_actions():
            return False
        payload = self._take()
        if payload is None:
            return True
        try:
            self._notifier.info({}, EVENT_TYPE, payload)
        except Exception as exc:
            # Broker down or unreachable: keep the report for later.
            LOG.warning('Could not send the HostReport, will retry: %s', exc)
            self._put_back(payload)
            return False
        self.sent += 1
        return True

    def _run(self):
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            while not self._stop.is_set() and not self.send_pending():
                self._stop.wait(self._retry_interval)
