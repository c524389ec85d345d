"""Carry out one guest's enforcement: all of it, or none of it.

Actions of one guest are applied in order; when one fails, those already
applied are undone in reverse order (with :func:`enforcement.undo`, and
page moves by moving as many pages back), so a guest is never left half
pinned. Every action and every undo is logged with its reason.
"""

import dataclasses
import logging

from nova_numa_policy import backend
from nova_numa_policy import enforcement

from agent import errors

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class Outcome:
    applied: int = 0
    failed: str | None = None
    resync: bool = False


def _log(action, dry_run):
    LOG.info('%s%s on %s: %s', '[dry-run] ' if dry_run else '',
             type(action).__name__, action.instance_uuid, action.reason)


def reverse_action(action, instance, topology):
    """The action that restores what ``action`` changed, or None."""
    if isinstance(action, backend.MovePages):
        return dataclasses.replace(
            action, source_node=action.target_node,
            target_node=action.source_node,
            reason=f'roll back: {action.reason}')
    return enforcement.undo(action, instance, topology)


def _undo(host, instance, topology, done):
    for action in reversed(done):
        undo_action = reverse_action(action, instance, topology)
        if undo_action is None:
            LOG.warning('No roll back for %s on %s', type(action).__name__,
                        instance.uuid)
            continue
        try:
            host.apply(undo_action)
            _log(undo_action, False)
        except errors.AgentError as exc:
            LOG.warning('Could not roll back %s on %s: %s',
                        type(action).__name__, instance.uuid, exc)


def apply_plan(host, instance, topology, actions, dry_run=False):
    """Apply ``actions`` for ``instance`` on ``host``; return an Outcome."""
    if dry_run:
        for action in actions:
            _log(action, True)
        return Outcome()
    done = []
    for action in actions:
        try:
            host.apply(action)
        except errors.DomainGone:
            # Deleted or migrated away meanwhile: nothing left to undo on.
            LOG.info('Instance %s went away during enforcement',
                     instance.uuid)
            return Outcome(applied=len(done), failed='gone')
        except errors.ConnectionLost as exc:
            LOG.warning('Enforcement on %s interrupted: %s', instance.uuid,
                        exc)
            return Outcome(applied=len(done), failed=str(exc), resync=True)
        except errors.NotEnforceable as exc:
            LOG.warning('%s on %s failed (%s); rolling back %d change(s)',
                        type(action).__name__, instance.uuid, exc, len(done))
            _undo(host, instance, topology, done)
            return Outcome(failed=str(exc))
        _log(action, False)
        done.append(action)
    return Outcome(applied=len(done))
