"""The agent loop: observe, decide and act, report, in small steps.

Each step returns whether a resync (another pass soon) is needed; broad
exceptions are caught only in :meth:`Agent.daemon_loop`. The loop sleeps on
an Event, so SIGTERM and libvirt lifecycle events end the wait at once.
"""

import datetime
import threading
import time
import uuid as uuid_mod

from oslo_log import log as logging

from nova_numa_policy.contracts import errors
from nova_numa_policy.decisions import execution
from nova_numa_policy.decisions import reporting
from nova_numa_policy.objects import action as action_wire
from nova_numa_policy.objects import signing
from nova_numa_policy.objects import wire as report_wire

from agent.service import rebalance

LOG = logging.getLogger(__name__)
# After a failed pass, try again sooner than a full period.
RESYNC_DELAY = 1.0


class Agent:
    def __init__(self, host_backend, host, period, sender=None,
                 dry_run=False, max_actions=64, report_version=None,
                 traits=None, clock=time.monotonic, runner=None,
                 secret=None, wall_clock=None, hand_over=None):
        """An agent on ``host_backend``.

        ``hand_over``: called with each period's report, for what the
        driver extension reads of it (:mod:`agent.service.handoff`).

        ``runner``: what decides each period (see
        :func:`agent.service.rebalance.build_runner`), with its own budget
        and dry run; without one the agent enforces the guests' policies and
        runs no loop, ``dry_run`` and ``max_actions`` setting its dry run and
        budget.
        """
        self.backend = host_backend
        self.runner = runner or rebalance.policy_runner(
            host_backend, period, dry_run=dry_run, max_actions=max_actions)
        # (strategy, action) pairs carried out in the last period.
        self.last_actions = []
        self.host = host
        self.period = period
        self.sender = sender
        self.report_version = report_version
        self._hand_over = hand_over
        self.traits = traits
        self._clock = clock
        # When an action was carried out, as the collector stores it.
        self._wall_clock = wall_clock or (
            lambda: datetime.datetime.now(datetime.timezone.utc))
        # Actions told to the collector by this process, numbered.
        self.actions_told = 0
        self._stop = threading.Event()
        self._wake = threading.Event()
        # Reports of this process: seq counts within this boot.
        self.boot_id = str(uuid_mod.uuid4())
        self.seq = 0
        # Signs reports when set ([numa_policy_reports] secret).
        self._secret = secret
        # Undo steps a lost connection interrupted.
        self.pending_undo = execution.PendingUndo()
        # How each guest's plan of the last period ended, by uuid.
        self.endings = {}
        self.last_report = None
        self._last_summary = None
        self._last_sent_at = None

    # -- signals from other threads ------------------------------------

    def on_domain_event(self, instance_uuid, what):
        LOG.debug('Domain %s %s: starting a period now', instance_uuid, what)
        self._wake.set()

    def stop(self, *_args):
        self._stop.set()
        self._wake.set()

    def close(self):
        """After the last period: the backend's watchers stop (DAMON's)."""
        close = getattr(self.backend, 'close', None)
        if close is not None:
            close()

    # -- steps -----------------------------------------------------------

    def observe(self):
        return self.backend.observe()

    @property
    def dry_run(self):
        return self.runner.dry_run

    @property
    def last_loop_actions(self):
        """The loops' part of :attr:`last_actions`."""
        return [(name, action) for name, action in self.last_actions
                if name in self.runner.loops]

    def act(self, snapshot):
        """Decide on ``snapshot`` and carry out what the runner admits.

        Guests whose earlier plan is still being undone wait. Returns
        (resync needed, number of changes applied).
        """
        decisions = self.runner.admitted(snapshot,
                                         waiting=self.pending_undo.uuids())
        resync, applied = self.carry_out(snapshot, decisions)
        self.arrivals_handled()
        return resync or bool(self.runner.plans_deferred), applied

    def arrivals_handled(self):
        """Say what became of each live-migrated guest's arrival; keep it.

        Moved or not, its arrival is not decided again; a dry run keeps
        nothing, and a guest that went meanwhile has nothing to keep.
        """
        for uuid, arrived in sorted(self.runner.arrivals.items()):
            ending = self.endings.get(uuid)
            LOG.info('%sInstance %s arrived by live migration on the home '
                     'its source chose: %s%s',
                     '[dry-run] ' if self.dry_run else '', uuid,
                     arrived.reason, f' ({ending})' if ending else '')
            if self.dry_run or ending == execution.GONE:
                continue
            try:
                self.backend.arrival_handled(uuid)
            except errors.DomainGone:
                continue

    def carry_out(self, snapshot, decisions):
        """Carry out (strategy, action) ``decisions`` taken on ``snapshot``.

        Remembers how each guest's plan ended and what undo is left.
        Returns (resync needed, number of changes applied).
        """
        outcome = execution.carry_out(self.backend, snapshot, decisions,
                                      self.runner.dry_run)
        self.last_actions = outcome.actions
        for uuid, ending in outcome.endings.items():
            self._ended(uuid, ending, outcome.pending.get(uuid, ()))
        self.tell(outcome.notices)
        return outcome.resync, outcome.applied

    def tell(self, notices):
        """Hand each carried-out action to the sender, for the collector.

        ``notices``: :attr:`nova_numa_policy.decisions.execution.Outcome.
        notices`. Never blocks: the sender queues them.
        """
        if self.sender is None:
            return
        for action, outcome, error in notices:
            self.actions_told += 1
            self.sender.submit_action(action_wire.notification(
                self.host, self.actions_told, self._wall_clock(), action,
                outcome, error))

    def _ended(self, uuid, ending, pending=()):
        self.endings[uuid] = ending
        self.pending_undo.keep(uuid, pending)

    def finish_pending(self, snapshot):
        """Carry out undo steps left by a lost connection.

        Returns True when something was carried out (the snapshot is then
        out of date).
        """
        if not len(self.pending_undo):
            return False
        present = {i.uuid for i in snapshot.instances}
        endings = self.pending_undo.finish(self.backend, present)
        self.endings.update(endings)
        return any(e != execution.GONE for e in endings.values())

    def build_report(self, snapshot):
        self.seq += 1
        return reporting.build_report(
            snapshot, self.host, self.backend.hostname(), self.seq,
            self.period, self.backend.capabilities(),
            active_loops=rebalance.active_loops(self.runner),
            auto_choices=self.runner.auto_choices(),
            boot_id=self.boot_id, endings=self.endings,
            locality_signal=self.backend.locality_signal(),
            measurements=self.backend.measurements(),
            judges=rebalance.report_judges(self.runner))

    def report(self, report):
        """Hand the report to the sender when it is due; never blocks."""
        self.last_report = report
        if self._hand_over is not None:
            self._hand_over(report)
        summary = reporting.summary(report)
        now = self._clock()
        due = (self._last_sent_at is None
               or now - self._last_sent_at >= self.period * 0.9
               or reporting.significant_change(self._last_summary, summary))
        self._last_summary = summary
        if due and self.sender is not None:
            payload = report_wire.dump_report(
                report, target_version=self.report_version)
            if self._secret:
                payload = signing.sign(payload, self._secret)
            self.sender.submit(payload)
            self._last_sent_at = now

    def sync_traits(self):
        """Put this host's traits in placement; never asks for a resync.

        A failed sync (placement down, provider not registered yet) is
        retried at the next period, not a second later.
        """
        if self.traits is not None:
            self.traits.sync(self.backend.hostname(),
                             self.backend.capabilities())
        return False

    def run_once(self):
        """One period; return True when another pass is needed soon."""
        self.endings = {}
        snapshot = self.observe()
        if self.finish_pending(snapshot):
            snapshot = self.observe()
        resync, applied = self.act(snapshot)
        if applied:
            # The report says what is in force now.
            snapshot = self.observe()
        self.report(self.build_report(snapshot))
        return self.sync_traits() or resync

    # -- loop ------------------------------------------------------------

    def _next_wait(self, resync):
        if resync:
            return RESYNC_DELAY
        return self.period

    def daemon_loop(self, once=False):
        while not self._stop.is_set():
            start = self._clock()
            try:
                resync = self.run_once()
            except errors.ConnectionLost as exc:
                LOG.warning('No libvirt connection: %s', exc)
                resync = True
            except Exception:
                LOG.exception('Agent period failed; retrying')
                resync = True
            if once:
                return self.last_report
            wait = self._next_wait(resync) - (self._clock() - start)
            self._wake.wait(max(0.0, wait))
            self._wake.clear()
        return self.last_report
