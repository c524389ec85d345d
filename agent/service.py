"""The agent loop: observe, decide, act, rebalance, report, small steps.

Each step returns whether a resync (another pass soon) is needed; broad
exceptions are caught only in :meth:`Agent.daemon_loop`. The loop sleeps on
an Event, so SIGTERM and libvirt lifecycle events end the wait at once.
"""

import logging
import threading
import time
import uuid as uuid_mod

from nova_numa_policy import backend as backend_mod
from nova_numa_policy import enforcement
from nova_numa_policy.objects import report as report_obj
from nova_numa_policy.objects import signing
from nova_numa_policy import reporting

from agent import enforcer
from agent import errors
from agent import rebalance

LOG = logging.getLogger(__name__)
# After a failed pass, try again sooner than a full period.
RESYNC_DELAY = 1.0


class Agent:
    def __init__(self, host_backend, host, period, sender=None,
                 dry_run=False, max_actions=64, report_version=None,
                 traits=None, clock=time.monotonic, loops=None,
                 secret=None):
        """An agent on ``host_backend``.

        ``loops``: a loops Runner on ``host_backend`` (see
        :func:`agent.rebalance.build_runner`), or None to run none.
        """
        self.backend = host_backend
        self.loops = loops
        # (loop, action) pairs the loops carried out in the last period.
        self.last_loop_actions = []
        self.host = host
        self.period = period
        self.sender = sender
        self.dry_run = dry_run
        self.max_actions = max_actions
        self.report_version = report_version
        self.traits = traits
        self._clock = clock
        self._stop = threading.Event()
        self._wake = threading.Event()
        # Reports of this process: seq counts within this boot.
        self.boot_id = str(uuid_mod.uuid4())
        self.seq = 0
        # Signs reports when set ([numa_policy_reports] secret).
        self._secret = secret
        # Undo steps a lost connection interrupted (agent.enforcer).
        self.pending_undo = enforcer.PendingUndo()
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

    # -- steps -----------------------------------------------------------

    def observe(self):
        return self.backend.observe()

    def decide(self, snapshot):
        """Per instance, the Enforcement the policy calls for now."""
        can_set = (backend_mod.CAP_LIVE_NODESET
                   in self.backend.capabilities())
        plans = []
        for instance in snapshot.instances:
            if instance.uuid in self.pending_undo:
                # Half way through an earlier plan: finish undoing first.
                continue
            plan = enforcement.enforce(instance, snapshot.topology,
                                       snapshot.usage, can_set)
            if plan.blocked:
                LOG.debug('Instance %s: %s not enforced now: %s',
                          instance.uuid, instance.requested_policy,
                          plan.blocked)
            if plan.actions:
                plans.append((instance, plan))
        return plans

    def act(self, snapshot, plans):
        """Apply plans within the period's budget.

        Returns (resync needed, number of changes applied).
        """
        budget = self.max_actions
        resync = False
        applied = 0
        for instance, plan in plans:
            if len(plan.actions) > budget:
                LOG.info('Action budget spent; %s waits for the next period',
                         instance.uuid)
                return True, applied
            outcome = enforcer.apply_plan(self.backend, instance,
                                          snapshot.topology, plan.actions,
                                          self.dry_run)
            budget -= len(plan.actions)
            applied += outcome.applied
            resync = resync or outcome.resync
            self._ended(instance.uuid, outcome.ending, outcome.pending)
        return resync, applied

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
        return any(e != enforcer.GONE for e in endings.values())

    def rebalance(self, snapshot):
        """Run the rebalancing loops on ``snapshot``.

        Returns (resync needed, number of changes applied).
        """
        outcome = rebalance.run(self.loops, self.backend, snapshot)
        self.last_loop_actions = outcome.actions
        for uuid, ending in outcome.endings.items():
            self._ended(uuid, ending, outcome.pending.get(uuid, ()))
        return outcome.resync, outcome.applied

    def build_report(self, snapshot):
        self.seq += 1
        return reporting.build_report(
            snapshot, self.host, self.backend.hostname(), self.seq,
            self.period, self.backend.capabilities(),
            active_loops=rebalance.active_loops(self.loops),
            auto_choices=(self.loops.auto_choices() if self.loops
                          else None),
            boot_id=self.boot_id, endings=self.endings)

    def report(self, report):
        """Hand the report to the sender when it is due; never blocks."""
        self.last_report = report
        summary = reporting.summary(report)
        now = self._clock()
        due = (self._last_sent_at is None
               or now - self._last_sent_at >= self.period * 0.9
               or reporting.significant_change(self._last_summary, summary))
        self._last_summary = summary
        if due and self.sender is not None:
            payload = report_obj.dump_report(
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
        resync, applied = self.act(snapshot, self.decide(snapshot))
        if applied:
            # The loops and the report work from what is in force now.
            snapshot = self.observe()
        moved_resync, moved = self.rebalance(snapshot)
        if moved:
            snapshot = self.observe()
        self.report(self.build_report(snapshot))
        return self.sync_traits() or resync or moved_resync

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
