"""Carry out decisions on a host: each guest's plan all of it, or none.

The one act path of the project: the agent on its real backend, the host
simulator and the cluster simulation all hand the runner's admitted
decisions (:meth:`nova_numa_policy.loops.runner.Runner.admitted`) to
:func:`carry_out`, which groups them into one plan per guest and applies
each with :func:`apply_plan`.

Actions of one guest are applied in order. When one fails, for whatever
reason, those already applied are undone in reverse order (with
:func:`enforcement.undo`, and page moves by moving as many pages back),
so a guest is never left half pinned. Host actions
(:class:`~nova_numa_policy.contracts.backend.HostAction`, a NIC's
interrupt vectors) are plans of their own, one per subject
(``nic:eth0``), with no guest: a failed steer writes back the affinity
each earlier steer of the plan replaced. What cannot be undone now because
the host's manager (libvirtd) is away is handed back as *pending*: the
agent carries it out at the start of a later period (:class:`PendingUndo`).
Every action and every undo is logged with its reason.

How a plan ended, in the words the agent reports (:data:`ENDINGS`):

* ``applied``: every step is in force;
* ``rolled back``: a step failed and every earlier one was undone;
* ``undo pending``: a step failed and part of the undo waits for libvirtd;
* ``roll back abandoned``: that undo kept failing and was given up;
* ``gone``: the guest went away (deleted, migrated, shut off);
* ``dry run``: nothing was changed.
"""

import dataclasses

from oslo_log import log as logging

from nova_numa_policy.contracts import backend
from nova_numa_policy.decisions import enforcement
from nova_numa_policy.objects import action as action_wire

from nova_numa_policy.contracts import errors

LOG = logging.getLogger(__name__)

APPLIED = 'applied'
ROLLED_BACK = 'rolled back'
UNDO_PENDING = 'undo pending'
GONE = 'gone'
ABANDONED = 'roll back abandoned'
DRY_RUN = 'dry run'
ENDINGS = (APPLIED, ROLLED_BACK, UNDO_PENDING, ABANDONED, GONE, DRY_RUN)

# A pending undo is tried this many periods, then given up (and logged):
# a step that keeps failing with libvirtd up would fail forever.
PENDING_ATTEMPTS = 5


@dataclasses.dataclass
class PlanOutcome:
    """How one guest's plan went."""

    applied: int = 0
    failed: str | None = None
    resync: bool = False
    ending: str = APPLIED
    # Undo actions not carried out yet, in the order to carry them out.
    pending: tuple = ()
    # The index of the action that failed, if one did.
    failed_at: int | None = None


def _log(action, dry_run):
    LOG.info('%s%s on %s: %s', '[dry-run] ' if dry_run else '',
             type(action).__name__, action.instance_uuid, action.reason)


def reverse_action(action, instance, topology):
    """The action that restores what ``action`` changed, or None.

    ``instance`` is None for a host action, which carries what it
    replaced itself.
    """
    if isinstance(action, backend.MovePages):
        return dataclasses.replace(
            action, source_node=action.target_node,
            target_node=action.source_node,
            reason=f'roll back: {action.reason}')
    if isinstance(action, backend.SteerIrq):
        return dataclasses.replace(
            action, cpus=action.previous, previous=action.cpus,
            reason=f'roll back: {action.reason}')
    if instance is None:
        return None
    return enforcement.undo(action, instance, topology)


def may_have_applied(action, exc):
    """Whether ``action`` may be in force although applying it raised.

    A refusal by the host (NotEnforceable) changed nothing. A lost
    connection or an unexpected error may have struck after libvirt made
    the change: undoing a setting that was not made is harmless, as the
    undo restores the value from before the plan. Pages are different:
    moving them back would move pages the failed call never moved, so a
    page move counts as not applied.
    """
    if isinstance(action, backend.MovePages):
        return False
    return not isinstance(exc, errors.NotEnforceable)


def undo_steps(instance, topology, done):
    """The actions that restore ``instance`` after ``done``: pure.

    ``instance`` is None for a plan of host actions.
    """
    steps = []
    for action in reversed(done):
        undo_action = reverse_action(action, instance, topology)
        if undo_action is None:
            LOG.warning('No roll back for %s on %s', type(action).__name__,
                        action.instance_uuid)
            continue
        steps.append(undo_action)
    return steps


def carry_out_undo(host, uuid, steps):
    """Apply undo ``steps`` in order; return (ending, steps left).

    Stops at a lost connection and hands back what is left; a guest gone
    has nothing left to restore; a step the host refuses is logged and
    skipped, as retrying it would fail the same way.
    """
    for index, step in enumerate(steps):
        try:
            host.apply(step)
        except errors.DomainGone:
            LOG.info('Instance %s went away during its roll back', uuid)
            return GONE, ()
        except errors.ConnectionLost as exc:
            left = tuple(steps[index:])
            LOG.warning('Roll back on %s interrupted (%s); %d step(s) left '
                        'for the next period', uuid, exc, len(left))
            return UNDO_PENDING, left
        except Exception as exc:  # noqa: B902 - any failure is logged
            LOG.warning('Could not roll back %s on %s: %s',
                        type(step).__name__, uuid, exc)
            continue
        _log(step, False)
    return ROLLED_BACK, ()


def apply_plan(host, instance, topology, actions, dry_run=False):
    """Apply ``actions`` for ``instance`` on ``host``; a PlanOutcome.

    ``instance`` is None for a plan of host actions on one subject.
    """
    if dry_run:
        for action in actions:
            _log(action, True)
        return PlanOutcome(ending=DRY_RUN)
    done = []
    for action in actions:
        try:
            host.apply(action)
        except errors.DomainGone:
            # Deleted or migrated away meanwhile: nothing left to undo on.
            LOG.info('Instance %s went away during enforcement',
                     action.instance_uuid)
            return PlanOutcome(applied=len(done), failed=GONE, ending=GONE)
        except Exception as exc:  # noqa: B902 - every failure rolls back
            return dataclasses.replace(
                _roll_back(host, instance, topology, done, action, exc),
                failed_at=len(done))
        _log(action, False)
        done.append(action)
    return PlanOutcome(applied=len(done))


def _roll_back(host, instance, topology, done, action, exc):
    if not isinstance(exc, errors.HostError):
        # Not one of the host's answers the backend translates: a bug
        # or an unforeseen error. Logged whole, then treated as a failure.
        LOG.exception('Unexpected error applying %s on %s',
                      type(action).__name__, action.instance_uuid)
    if may_have_applied(action, exc):
        done = done + [action]
    LOG.warning('%s on %s failed (%s); rolling back %d change(s)',
                type(action).__name__, action.instance_uuid, exc, len(done))
    ending, left = carry_out_undo(
        host, action.instance_uuid, undo_steps(instance, topology, done))
    lost = isinstance(exc, errors.ConnectionLost)
    return PlanOutcome(failed=str(exc) or type(exc).__name__,
                       resync=lost or bool(left), ending=ending,
                       pending=left)


class PendingUndo:
    """Undo steps a lost connection interrupted, per guest, to finish.

    The agent finishes them before deciding anything new for that guest:
    until they are carried out, the guest may be half way through a plan.
    """

    def __init__(self, attempts=PENDING_ATTEMPTS):
        self._attempts = attempts
        self._steps = {}

    def __contains__(self, uuid):
        return uuid in self._steps

    def __len__(self):
        return len(self._steps)

    def uuids(self):
        """The guests with undo steps still to carry out."""
        return frozenset(self._steps)

    def keep(self, uuid, steps):
        """Keep ``steps`` for ``uuid``, before any kept earlier.

        Undo runs newest change first: steps of a later plan come before
        those still pending from an earlier one.
        """
        if steps:
            earlier = self._steps.get(uuid, ((), 0))[0]
            self._steps[uuid] = (tuple(steps) + earlier, self._attempts)

    def finish(self, host, present):
        """Carry out what is pending for guests in ``present``.

        Returns {uuid: ending} for every guest it dealt with. A host
        subject (a NIC) is always present: a NIC gone makes its steps
        fail, which is logged.
        """
        endings = {}
        for uuid, (steps, attempts) in list(self._steps.items()):
            del self._steps[uuid]
            if uuid not in present and not _host_subject(steps):
                endings[uuid] = GONE
                continue
            ending, left = carry_out_undo(host, uuid, steps)
            endings[uuid] = ending
            if left and attempts > 1:
                self._steps[uuid] = (left, attempts - 1)
            elif left:
                endings[uuid] = ABANDONED
                LOG.error('Gave up rolling back %s after %d periods: %d '
                          'step(s) were not carried out', uuid,
                          self._attempts, len(left))
        return endings


def _host_subject(steps):
    return any(isinstance(step, backend.HostAction) for step in steps)


@dataclasses.dataclass
class Outcome:
    """What one period's decisions did on the host."""

    # (strategy name, action) pairs carried out (or, in a dry run, logged).
    actions: list = dataclasses.field(default_factory=list)
    applied: int = 0
    # Another pass is needed soon (a lost connection, an undo left over).
    resync: bool = False
    # How each guest's plan ended (ENDINGS), and the undo steps a lost
    # connection left, by instance uuid (or host subject, ``nic:eth0``).
    endings: dict = dataclasses.field(default_factory=dict)
    pending: dict = dataclasses.field(default_factory=dict)
    # What the agent tells the collector, one per action decided:
    # (action with its reason tagged by its strategy, outcome word of
    # nova_numa_policy.objects.action, the error of a failed one or
    # None). A failed plan's steps before the failure were rolled back:
    # its one failed action says so.
    notices: list = dataclasses.field(default_factory=list)


def plans(snapshot, decisions):
    """Group (strategy, action) pairs into plans, order kept.

    ``[(instance, steps)]``: one plan per guest, and one per host subject
    (``nic:eth0``) with instance None. A guest's action for a guest the
    snapshot does not hold is dropped: it has gone.
    """
    by_uuid = {i.uuid: i for i in snapshot.instances}
    grouped = {}
    for name, action in decisions:
        subject = action.instance_uuid
        instance = by_uuid.get(subject)
        if instance is None and not isinstance(action, backend.HostAction):
            continue
        grouped.setdefault(subject, (instance, []))[1].append(
            (name, action))
    return list(grouped.values())


def tagged(name, action):
    """``action`` with its reason saying which strategy decided it."""
    if action.reason.startswith(name):
        return action
    return dataclasses.replace(action, reason=f'{name}: {action.reason}')


def carry_out(host, snapshot, decisions, dry_run=False):
    """Apply admitted ``decisions`` on ``host``, one plan per guest."""
    outcome = Outcome()
    for instance, steps in plans(snapshot, decisions):
        subject = steps[0][1].instance_uuid
        actions = [tagged(name, action) for name, action in steps]
        result = apply_plan(host, instance, snapshot.topology, actions,
                            dry_run)
        outcome.resync = outcome.resync or result.resync
        outcome.applied += result.applied
        outcome.endings[subject] = result.ending
        if result.pending:
            outcome.pending[subject] = result.pending
        if dry_run or (result.failed is None
                       and result.applied == len(actions)):
            outcome.actions.extend(steps)
        outcome.notices.extend(_notices(actions, result, dry_run))
    return outcome


def _notices(actions, result, dry_run):
    """The :attr:`Outcome.notices` of one plan: pure.

    Every step of a dry run or of a plan applied whole; of a failed plan,
    the step that failed (a guest that went away meanwhile says nothing).
    """
    if dry_run:
        return [(a, action_wire.DRY_RUN, None) for a in actions]
    if result.failed is None:
        return [(a, action_wire.APPLIED, None) for a in actions]
    if result.failed_at is None:
        return []
    return [(actions[result.failed_at], action_wire.FAILED, result.failed)]


def period(runner, host, waiting=frozenset()):
    """Observe ``host``, let ``runner`` decide, carry it out: an Outcome."""
    snapshot = host.observe()
    return carry_out(host, snapshot, runner.admitted(snapshot, waiting),
                     runner.dry_run)
