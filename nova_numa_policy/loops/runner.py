"""Run strategies against a backend: budgets, hands-off, dry-run, logs.

Each period the runner observes once, lets every strategy decide on the
same snapshot, drops actions on hands-off guests and actions without a
reason, refuses what the do-no-harm guard (``guard.py``) refuses, trims
what exceeds the period's budgets (pages per second, vCPU moves), logs
every action with its reason, and applies them unless it is a dry run.
"""

import dataclasses
import logging

from nova_numa_policy import backend
from nova_numa_policy.loops import base
from nova_numa_policy.loops import guard as harm_guard

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Budget:
    # Pages moved per second over all guests (30000 pages/s = 117 MB/s).
    pages_per_second: int = 30000
    # vCPU re-pins per period over all guests.
    vcpu_moves_per_period: int = 16
    period_s: float = 5.0


def registry():
    # Imported here so that a strategy module never imports the runner.
    from nova_numa_policy.loops import auto
    from nova_numa_policy.loops import brm
    from nova_numa_policy.loops import carrefour
    from nova_numa_policy.loops import vnuioa
    return {cls.name: cls for cls in (carrefour.Carrefour, brm.Brm,
                                      vnuioa.Vnuioa, auto.Auto)}


def strategies(names):
    known = registry()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f'unknown loops {unknown}; known: {sorted(known)}')
    return [known[n]() for n in names]


class _Allowance:
    def __init__(self, budget):
        self.pages = int(budget.pages_per_second * budget.period_s)
        self.vcpus = budget.vcpu_moves_per_period

    def admit(self, action):
        """The action trimmed to what is left, or None when nothing is."""
        if isinstance(action, backend.MovePages):
            pages = min(action.pages, self.pages)
            if pages <= 0:
                return None
            self.pages -= pages
            return dataclasses.replace(action, pages=pages)
        if isinstance(action, backend.PinVcpu):
            if self.vcpus <= 0:
                return None
            self.vcpus -= 1
        return action


class Runner:
    def __init__(self, backend_, strategies_, configs=None, budget=None,
                 dry_run=False, seed=0, guard=None):
        self.backend = backend_
        self.dry_run = dry_run
        self.budget = budget or Budget()
        self.guard = guard or harm_guard.Config(
            period_s=self.budget.period_s)
        self.guard_state = harm_guard.initial_state()
        self.actions_refused = 0
        configs = configs or {}
        caps = backend_.capabilities()
        self.strategies = []
        self.skipped = []
        for s in strategies_:
            missing = s.required_capabilities - caps
            if missing:
                LOG.warning('loop %s not started: backend %s lacks %s',
                            s.name, backend_.name, sorted(missing))
                self.skipped.append(s.name)
                continue
            self.strategies.append(s)
        self.configs = {s.name: configs.get(s.name) or s.Config()
                        for s in self.strategies}
        self.states = {s.name: s.initial_state(seed)
                       for s in self.strategies}
        # Each guest's vCPU time when last seen: a drop is a reboot.
        self.cputime = {}
        self.actions_applied = 0
        self.actions_dropped = 0

    def decide(self, snapshot):
        hands_off = {i.uuid for i in snapshot.instances
                     if i.hands_off_reason}
        by_uuid = {i.uuid: i for i in snapshot.instances}
        self.guard_state = harm_guard.observe(snapshot, self.guard_state,
                                              self.guard)
        rebooted, self.cputime = base.restarts(snapshot, self.cputime)
        if rebooted:
            self.states = {s.name: s.forget(self.states[s.name], rebooted)
                           for s in self.strategies}
        view = harm_guard.View(snapshot, self.guard)
        actions = []
        arrivals = {}
        # A loop's actions for one guest are one plan (pin the vCPUs, then
        # move the memory after them); once the guard refuses a step the
        # rest of the plan waits too, or memory would follow vCPUs that
        # did not move.
        halted = set()
        for s in self.strategies:
            proposed, self.states[s.name] = s.decide(
                snapshot, self.states[s.name], self.configs[s.name])
            for action in proposed:
                if action.instance_uuid in hands_off or not action.reason:
                    self.actions_dropped += 1
                    continue
                plan = (s.name, action.instance_uuid)
                why = harm_guard.refusal(snapshot, self.guard_state,
                                         self.guard, action, arrivals, view)
                if not why and plan in halted:
                    why = 'guard: an earlier step of this plan was refused'
                if why:
                    halted.add(plan)
                    self.actions_refused += 1
                    LOG.debug('%s: refused %s: %s', s.name, action, why)
                    continue
                self.guard_state = harm_guard.disturb(
                    snapshot, self.guard_state, self.guard, action, view)
                inst = by_uuid.get(action.instance_uuid)
                if inst and isinstance(action, (backend.PinVcpu,
                                                backend.MovePages)):
                    for node in harm_guard.destinations(
                            snapshot.topology, inst, action):
                        arrivals.setdefault(node, action.instance_uuid)
                actions.append((s.name, action))
        return actions

    def admitted(self, snapshot):
        """Decisions on ``snapshot`` trimmed to the period's budgets.

        Returns (loop, action) pairs; what does not fit is counted.
        """
        allowance = _Allowance(self.budget)
        admitted = []
        for name, action in self.decide(snapshot):
            trimmed = allowance.admit(action)
            if trimmed is None:
                self.actions_dropped += 1
                LOG.debug('%s: over budget, dropped %s', name, action)
                continue
            admitted.append((name, trimmed))
        return admitted

    def run_once(self):
        """One period; return the (loop, action) pairs admitted."""
        admitted = self.admitted(self.backend.observe())
        for name, action in admitted:
            LOG.info('%s%s: %s on %s: %s', '[dry-run] ' if self.dry_run
                     else '', name, type(action).__name__,
                     action.instance_uuid, action.reason)
            if not self.dry_run:
                self.backend.apply(action)
                self.actions_applied += 1
        return admitted

    def auto_choices(self):
        state = self.states.get('auto') or {}
        return {uuid: rec.value
                for uuid, rec in state.get('choice', {}).items()}
