"""Decide a period on one snapshot: strategies, hands-off, guard, budgets.

The runner is pure: it never acts. Each period it lets every strategy
decide on the same snapshot (the guest's requested policy first,
:mod:`~nova_numa_policy.loops.enforce`, then the rebalancing loops),
drops actions on hands-off guests, on guests still waiting for an undo,
and actions without a reason, refuses what the do-no-harm guard
(``guard.py``) refuses, and trims what exceeds the period's budget
(actions, pages per second, vCPU moves). What it admits is carried out by
the one executor, :func:`nova_numa_policy.decisions.execution.carry_out`, by
the agent and the simulators alike.

A strategy with ``atomic_plans`` (the policy's enforcement) has its
actions for one guest admitted all together or not at all, by the guard
and by the budget; once it acts on a guest, the loops leave that guest
alone until the next period, so they decide on what the policy put in
force rather than against it.
"""

import dataclasses
import functools

from oslo_log import log as logging
from stevedore import extension

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import scope
from nova_numa_policy.loops import base
from nova_numa_policy.loops import enforce
from nova_numa_policy.loops import guard as harm_guard
from nova_numa_policy.loops import nodeids

LOG = logging.getLogger(__name__)
LOOPS_NAMESPACE = 'nova_numa_policy.loops'


@dataclasses.dataclass(frozen=True)
class Budget:
    # Pages moved per second over all guests (30000 pages/s = 117 MB/s).
    pages_per_second: int = 30000
    # vCPU re-pins per period over all guests.
    vcpu_moves_per_period: int = 16
    period_s: float = 5.0
    # Actions of every strategy together per period; a policy plan that
    # does not fit waits whole for the next period.
    actions_per_period: int = 64


def registry():
    """{name: strategy class} of the loops, from their entry points.

    Loops are found as watcher finds its strategies: each is an entry
    point of the ``nova_numa_policy.loops`` namespace (setup.cfg), loaded
    by stevedore. The order loops run in is ``enabled_loops``', not this
    one. The entry points are read once per process: reading them scans
    every installed distribution, and what is installed does not change
    while it runs.
    """
    return dict(_entry_points())


def _refuse_broken_loop(manager, entry_point, exc):
    # stevedore's default is to log and go on without the plugin; a loop
    # an operator enabled that does not load must stop the agent instead.
    raise exc


@functools.lru_cache(maxsize=None)
def _entry_points():
    loops = extension.ExtensionManager(
        LOOPS_NAMESPACE, invoke_on_load=False,
        on_load_failure_callback=_refuse_broken_loop)
    return tuple((loop.name, loop.plugin) for loop in loops)


def judges(configs=None):
    """(strategy class, Config) of every installed loop, for the report.

    ``configs``: {loop name: Config} of the loops set up (the runner's);
    any other loop judges with its defaults. Sorted by name, so the report
    takes the same fields in the same order on every host.
    """
    configs = configs or {}
    return tuple((cls, configs.get(name) or cls.Config())
                 for name, cls in sorted(registry().items()))


def strategies(names):
    """The policy's enforcement, then the loops ``names`` in order."""
    known = registry()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f'unknown loops {unknown}; known: {sorted(known)}')
    return [enforce.PolicyEnforcement()] + [known[n]() for n in names]


class _Allowance:
    def __init__(self, budget):
        self.actions = budget.actions_per_period
        self.pages = int(budget.pages_per_second * budget.period_s)
        self.vcpus = budget.vcpu_moves_per_period

    def admit(self, action):
        """A loop's action trimmed to what is left, or None when nothing is."""
        if self.actions <= 0:
            return None
        if isinstance(action, backend.MovePages):
            pages = min(action.pages, self.pages)
            if pages <= 0:
                return None
            self.pages -= pages
            action = dataclasses.replace(action, pages=pages)
        elif isinstance(action, backend.PinVcpu):
            if self.vcpus <= 0:
                return None
            self.vcpus -= 1
        self.actions -= 1
        return action

    def admit_plan(self, actions):
        """Whether a whole atomic plan fits; it is charged if it does.

        A policy's plan counts against the action budget only: the page
        and vCPU allowances bound what the loops move by choice.
        """
        if len(actions) > self.actions:
            return False
        self.actions -= len(actions)
        return True


def _runs(decisions, atomic):
    """Split (strategy, action) pairs into units the budget admits.

    Consecutive actions of one atomic strategy on one guest are one unit;
    every other action is a unit of its own. Order is kept.
    """
    units = []
    for name, action in decisions:
        last = units[-1] if units else None
        if (name in atomic and last and last[0] == name
                and last[1][0].instance_uuid == action.instance_uuid):
            last[1].append(action)
        else:
            units.append((name, [action]))
    return units


def _leaves_allowed(action, allowed):
    """Whether a pin would let a guest run outside its allowed CPUs.

    A host action (an interrupt steered) moves no guest's thread: nova's
    bound on a guest's CPUs says nothing of it.
    """
    if isinstance(action, backend.HostAction):
        return False
    cpus = getattr(action, 'cpus', None)
    return cpus is not None and scope.leaves_allowed(
        cpus, allowed.get(action.instance_uuid, ()))


class Runner:
    def __init__(self, backend_, strategies_, configs=None, budget=None,
                 dry_run=False, seed=0, guard=None):
        """Strategies for a host whose backend is ``backend_``.

        Only the backend's name and capabilities are read: a strategy
        whose required capabilities are missing is left out and logged.
        """
        self.dry_run = dry_run
        self.budget = budget or Budget()
        self.guard = guard or harm_guard.Config(
            period_s=self.budget.period_s)
        self.guard_state = harm_guard.initial_state()
        self.actions_refused = 0
        self.actions_dropped = 0
        # Policy plans the last period's budget left for the next one.
        self.plans_deferred = 0
        configs = dict(configs or {})
        caps = backend_.capabilities()
        configs.setdefault(enforce.PolicyEnforcement.name, enforce.Config(
            live_nodeset=backend.CAP_LIVE_NODESET in caps,
            page_migration=backend.CAP_PAGE_MIGRATION in caps))
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
        self.configs = {s.name: s.for_capabilities(
            configs.get(s.name) or s.Config(), caps)
            for s in self.strategies}
        self.states = {s.name: s.initial_state(seed)
                       for s in self.strategies}
        self._atomic = {s.name for s in self.strategies if s.atomic_plans}
        # Each guest's vCPU time when last seen: a drop is a reboot.
        self.cputime = {}
        # {uuid: Arrival} of the guests whose arrival by live migration
        # the last period decided (decisions/arrival.py), with the
        # actions admitted (none when it stays) and why.
        self.arrivals = {}

    @property
    def loops(self):
        """The rebalancing loops started, in their order (not the policy)."""
        return tuple(s.name for s in self.strategies if not s.atomic_plans)

    def decide(self, snapshot, waiting=frozenset()):
        """Every strategy's actions on ``snapshot`` the guard lets through.

        ``waiting``: guests to leave alone this period (an undo of an
        earlier plan is not finished). Returns (strategy, action) pairs.
        The strategies and the guard see nodes numbered by position
        (:mod:`.nodeids`); the actions returned name node ids.
        """
        snapshot, ids = nodeids.dense(snapshot)
        skip = {i.uuid for i in snapshot.instances
                if i.hands_off_reason} | set(waiting)
        self.guard_state = harm_guard.observe(snapshot, self.guard_state,
                                              self.guard)
        rebooted, self.cputime = base.restarts(snapshot, self.cputime)
        if rebooted:
            self.states = {s.name: s.forget(self.states[s.name], rebooted)
                           for s in self.strategies}
        check = _Check(self, snapshot)
        allowed = {i.uuid: i.allowed_cpus for i in snapshot.instances}
        for s in self.strategies:
            proposed, self.states[s.name] = s.decide(
                snapshot, self.states[s.name], self.configs[s.name])
            kept = []
            for action in proposed:
                if (action.instance_uuid in skip or not action.reason
                        or action.instance_uuid in check.claimed):
                    self.actions_dropped += 1
                    continue
                if _leaves_allowed(action, allowed):
                    # Last line of do-no-harm: a strategy proposed CPUs
                    # nova does not allow this guest. Never written.
                    self.actions_refused += 1
                    LOG.warning('%s: refused %s: outside the CPUs nova '
                                'allows the guest (%s)', s.name, action,
                                sorted(allowed[action.instance_uuid]))
                    continue
                kept.append(action)
            if s.atomic_plans:
                check.plans(s.name, kept)
            else:
                check.actions(s.name, kept)
        self.guard_state = check.guard_state
        self.arrivals = self._arrivals(check, skip)
        if ids is None:
            return check.admitted
        return [(name, nodeids.to_ids(action, ids))
                for name, action in check.admitted]

    def _arrivals(self, check, skip):
        """The arrivals decided this period, as the guard left them.

        A guest waiting for an undo is decided again next period.
        """
        decided = self.states.get(enforce.PolicyEnforcement.name, {}).get(
            'arrivals', {})
        result = {}
        for uuid, arrived in decided.items():
            if uuid in skip:
                continue
            if arrived.actions and uuid not in check.claimed:
                arrived = _stays(arrived, check.refusals.get(
                    uuid, 'not admitted'))
            result[uuid] = arrived
        return result

    def admitted(self, snapshot, waiting=frozenset()):
        """Decisions on ``snapshot`` trimmed to the period's budget.

        Returns (strategy, action) pairs; what does not fit is counted.
        """
        allowance = _Allowance(self.budget)
        admitted = []
        self.plans_deferred = 0
        for name, actions in _runs(self.decide(snapshot, waiting),
                                   self._atomic):
            if name in self._atomic:
                if allowance.admit_plan(actions):
                    admitted.extend((name, a) for a in actions)
                    continue
                uuid = actions[0].instance_uuid
                if (name == enforce.PolicyEnforcement.name
                        and uuid in self.arrivals):
                    # Re-homed on arrival once, or not at all: it stays.
                    self.arrivals[uuid] = _stays(
                        self.arrivals[uuid], "the period's action budget "
                                             'is spent')
                    continue
                self.plans_deferred += 1
                LOG.info('Action budget spent; %s waits for the next '
                         'period', uuid)
                continue
            trimmed = allowance.admit(actions[0])
            if trimmed is None:
                self.actions_dropped += 1
                LOG.debug('%s: over budget, dropped %s', name, actions[0])
                continue
            admitted.append((name, trimmed))
        return admitted

    def auto_choices(self):
        state = self.states.get('auto') or {}
        return {uuid: rec.value
                for uuid, rec in state.get('choice', {}).items()}


class _Check:
    """One period's guard checks: what passed, what it set in motion."""

    def __init__(self, runner, snapshot):
        self.runner = runner
        self.snapshot = snapshot
        self.view = harm_guard.View(snapshot, runner.guard)
        self.guard_state = runner.guard_state
        # Node -> the guest whose load was first let onto it this period.
        self.arrivals = {}
        self.admitted = []
        # Guests a policy plan acts on: the loops wait a period for them.
        self.claimed = set()
        # Why the guard refused a guest's policy plan, by uuid.
        self.refusals = {}

    def _pass(self, state, arrivals, action):
        """(why refused, None, None) or (None, new state, new arrivals)."""
        runner = self.runner
        why = harm_guard.refusal(self.snapshot, state, runner.guard, action,
                                 arrivals, self.view)
        if why:
            return why, None, None
        state = harm_guard.disturb(self.snapshot, state, runner.guard,
                                   action, self.view)
        inst = self.view.by_uuid.get(action.instance_uuid)
        if inst and isinstance(action, (backend.PinVcpu, backend.MovePages)):
            arrivals = dict(arrivals)
            for node in harm_guard.destinations(self.snapshot.topology,
                                                inst, action):
                arrivals.setdefault(node, action.instance_uuid)
        return None, state, arrivals

    def _refused(self, name, action, why, count=1):
        self.runner.actions_refused += count
        LOG.debug('%s: refused %s: %s', name, action, why)

    def actions(self, name, actions):
        """A loop's actions, each on its own.

        A loop's actions for one guest are one plan (pin the vCPUs, then
        move the memory after them); once the guard refuses a step the
        rest of the plan waits too, or memory would follow vCPUs that did
        not move.
        """
        halted = set()
        for action in actions:
            why = ('guard: an earlier step of this plan was refused'
                   if action.instance_uuid in halted else None)
            if not why:
                why, state, arrivals = self._pass(
                    self.guard_state, self.arrivals, action)
            if why:
                halted.add(action.instance_uuid)
                self._refused(name, action, why)
                continue
            self.guard_state, self.arrivals = state, arrivals
            self.admitted.append((name, action))

    def plans(self, name, actions):
        """An atomic strategy's actions: each guest's all or none."""
        for uuid, steps in _by_guest(actions):
            state, arrivals = self.guard_state, self.arrivals
            for action in steps:
                why, state, arrivals = self._pass(state, arrivals, action)
                if why:
                    self._refused(name, action, why, count=len(steps))
                    self.refusals[uuid] = why
                    break
            else:
                self.guard_state, self.arrivals = state, arrivals
                self.admitted.extend((name, a) for a in steps)
                self.claimed.add(uuid)


def _stays(arrived, why):
    """``arrived`` (an Arrival) not carried out, saying why."""
    return dataclasses.replace(
        arrived, actions=(),
        reason=f'stays: {why} (it would move: {arrived.reason})')


def _by_guest(actions):
    """[(uuid, [actions])] in the order guests first appear."""
    grouped = {}
    for action in actions:
        grouped.setdefault(action.instance_uuid, []).append(action)
    return list(grouped.items())
