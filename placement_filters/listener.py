"""Feeds the report cache from oslo.messaging notifications.

Each scheduler worker process listens with a pool of its own
(``<listener_pool>.<host>.<pid>``): a pool is a queue, and workers sharing
one queue would be competing consumers, each seeing a fraction of the
reports. The rabbit driver re-declares the queue and its binding when it
reconnects, so the cache fills again after a broker restart.

Scheduler workers are forked after nova builds its filters; a listener's
threads do not survive a fork, so a child process starts its own.
"""

import os
import re
import threading

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging

from nova_numa_policy import conf as numa_conf  # noqa: F401  registers opts
from nova_numa_policy.conf import reports as reports_conf
from nova_numa_policy.objects import report as report_mod
from placement_filters import cache as cache_mod

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


class ReportEndpoint:
    """Notification endpoint: every report goes to the cache, none raises."""

    # Agents also send their actions on the reports topic, for the
    # collector; only reports are for the scheduler.
    filter_rule = messaging.NotificationFilter(
        event_type='^%s$' % re.escape(report_mod.EVENT_TYPE))

    def __init__(self, cache):
        self.cache = cache

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        try:
            self.cache.ingest(payload)
        except Exception:  # never let one report stop the listener
            self.cache.dropped['internal error'] += 1
            LOG.exception('Could not ingest a NUMA host report from %s',
                          publisher_id)
        return messaging.NotificationResult.HANDLED


def _executor():
    # Same choice nova makes for its own RPC servers.
    try:
        from nova import utils
    except ImportError:
        return 'threading'
    return 'threading' if utils.concurrency_mode_threading() else 'eventlet'


class ReportListener:
    """A notification listener feeding one cache from one pool."""

    def __init__(self, cache, transport, topic, pool):
        self.cache = cache
        self.pool = pool
        self._listener = messaging.get_notification_listener(
            transport, [messaging.Target(topic=topic)],
            [ReportEndpoint(cache)], executor=_executor(), pool=pool)

    @classmethod
    def from_conf(cls, conf, cache):
        pool = '%s.%s.%d' % (conf.numa_policy_scheduler.listener_pool,
                             conf.host, os.getpid())
        return cls(cache, messaging.get_notification_transport(conf),
                   conf.numa_policy_reports.topic, pool)

    def start(self):
        self._listener.start()
        LOG.info('Listening for NUMA host reports in pool %s', self.pool)

    def stop(self):
        self._listener.stop()
        self._listener.wait()


def make_cache(conf):
    sched = conf.numa_policy_scheduler
    reports = conf.numa_policy_reports
    return cache_mod.ReportCache(
        max_hosts=sched.max_hosts,
        max_report_bytes=reports.max_report_bytes,
        io_rate=sched.io_intensive_rate, ttl=sched.report_ttl,
        secrets=reports_conf.accepted_secrets(reports),
        max_skew=reports.max_clock_skew)


class Runtime:
    """The cache and listener of this process, started once per process."""

    def __init__(self, conf=CONF):
        self.conf = conf
        self._lock = threading.Lock()
        self.pid = None
        self.cache = None
        self.listener = None

    def get_cache(self):
        if self.pid != os.getpid():
            self._start()
        return self.cache

    def _start(self):
        with self._lock:
            if self.pid == os.getpid():
                return
            self.cache = make_cache(self.conf)
            self.listener = None
            self.pid = os.getpid()
            self._listen()

    def _listen(self):
        """Start a listener on this process's cache (lock held)."""
        try:
            self.listener = ReportListener.from_conf(self.conf, self.cache)
        except Exception:
            LOG.exception('Cannot listen for NUMA host reports; every '
                          'host is treated as having no report')
            return
        # In the background: connecting may wait for the broker, and
        # this runs on a scheduling request's path.
        threading.Thread(target=self._run_listener, args=(
            self.listener,), daemon=True).start()

    @staticmethod
    def _run_listener(listener):
        try:
            listener.start()
        except Exception:
            LOG.exception('Cannot listen for NUMA host reports')

    def install(self, cache, listener=None):
        """Use ``cache`` in this process instead of a listener's own."""
        with self._lock:
            self.cache, self.listener = cache, listener
            self.pid = os.getpid()

    def stop(self):
        with self._lock:
            if self.listener is not None and self.pid == os.getpid():
                self.listener.stop()
            self.pid = self.cache = self.listener = None

    def restart(self):
        """Listen anew on the same cache (nova's SIGHUP re-read options).

        Nothing to do in a process that is not listening yet: its first
        request starts the listener with the current options.
        """
        with self._lock:
            if self.listener is None or self.pid != os.getpid():
                return
            self.listener.stop()
            self.listener = None
            self._listen()

    def _after_fork(self):
        # Start the child's own listener at once rather than on its first
        # request, so its cache is warm as soon as possible.
        had_listener = self.listener is not None
        # The parent's lock may have been held by one of its threads.
        self._lock = threading.Lock()
        self.pid = self.cache = self.listener = None
        if had_listener:
            self.get_cache()


RUNTIME = Runtime()
os.register_at_fork(after_in_child=RUNTIME._after_fork)
