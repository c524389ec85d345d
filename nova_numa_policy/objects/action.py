"""The ``numa_policy.action`` notification: one action an agent carried out.

Built here, by the agent for each action it carries out (or would, in a
dry run); read and checked by the collector, whose module documents the
payload (:mod:`nova_numa_policy.collector.actions`). Pure: values in, a
JSON-ready dict out.
"""

import dataclasses
import re

from nova_numa_policy.contracts import backend

EVENT_TYPE = 'numa_policy.action'
VERSION = '1.0'
APPLIED = 'applied'
FAILED = 'failed'
DRY_RUN = 'dry_run'
OUTCOMES = (APPLIED, FAILED, DRY_RUN)
MAX_REASON_LENGTH = 1024
_WORD_START = re.compile(r'(?<!^)(?=[A-Z])')


def kind_of(action):
    """The ``kind`` of a backend action: its class's name in snake case.

    ``PinVcpu`` is ``pin_vcpu``, ``SteerIrq`` ``steer_irq``.
    """
    return _WORD_START.sub('_', type(action).__name__).lower()


def details_of(action):
    """An action's arguments as the flat ``details`` object."""
    details = {}
    for field in dataclasses.fields(action):
        if field.name in ('instance_uuid', 'reason'):
            continue
        value = getattr(action, field.name)
        details[field.name] = (sorted(int(v) for v in value)
                               if isinstance(value, frozenset) else value)
    return details


def notification(host, seq, generated_at, action, outcome, error=None):
    """The payload of ``action``, carried out by ``host``'s agent.

    ``seq`` counts the agent's actions; ``generated_at`` is an aware
    datetime; ``outcome`` one of :data:`OUTCOMES`; ``error`` why a failed
    action failed. A host action (a NIC's) names no instance: its
    subject is in its details.
    """
    reason = action.reason if error is None else (
        f'{action.reason} (failed: {error})')
    return {
        'version': VERSION, 'host': host, 'seq': seq,
        'generated_at': generated_at.isoformat(),
        'instance_uuid': (None if isinstance(action, backend.HostAction)
                          else action.instance_uuid),
        'kind': kind_of(action),
        'outcome': outcome,
        'reason': reason[:MAX_REASON_LENGTH],
        'details': details_of(action),
    }
