"""The ``numa_policy.action`` notification payload: one agent action.

Agents send one notification per action they carry out (or would carry
out, in dry-run mode) on the reports topic, event type
:data:`ACTION_EVENT_TYPE`. The payload is a flat JSON object, version 1.0::

    {
      "version": "1.0",
      "host": "compute-1",              # nova's host name of the agent
      "seq": 42,                        # per agent process, increasing
      "generated_at": "2025-01-31T12:00:00.123456+00:00",
      "instance_uuid": "…" | null,      # null for host-wide actions
      "kind": "move_pages",             # see KNOWN_KINDS
      "outcome": "applied",             # see OUTCOMES
      "reason": "node 0 memory controller at 92 %, node 1 at 31 %",
      "details": {"source_node": 0, "target_node": 1, "pages": 512}
    }

``host``, ``seq`` and ``generated_at`` identify an action: a redelivered
one is stored once. ``details`` holds the action's arguments as a flat
object of numbers, booleans, short strings and lists of integers.

Compatibility follows the HostReport rules: a newer minor version may add
keys, which are ignored; a different major version is refused. New kinds
may appear without a version change, so any well-formed kind is stored.
"""

import re
import uuid

from oslo_utils import timeutils

from nova_numa_policy import exception
from nova_numa_policy.objects import report
from nova_numa_policy.objects import validation as report_validation

ACTION_EVENT_TYPE = 'numa_policy.action'
VERSION = '1.0'

KNOWN_KINDS = ('pin_vcpu', 'pin_emulator', 'set_nodeset', 'move_pages',
               'apply_policy')
OUTCOMES = ('applied', 'failed', 'dry_run')
MAX_NAME_LENGTH = report.MAX_NAME_LENGTH
MAX_REASON_LENGTH = 1024
MAX_DETAILS = 32
MAX_DETAIL_LIST = 4096
_KIND = re.compile(r'^[a-z][a-z0-9_]{0,63}$')
_DETAIL_KEY = re.compile(r'^[a-z][a-z0-9_]{0,63}$')
REQUIRED = ('version', 'host', 'seq', 'generated_at', 'kind', 'outcome')


class MalformedAction(exception.MalformedReport):
    """An action payload could not be read; dropped and counted."""


def _require(condition, message):
    if not condition:
        raise MalformedAction(message)


def _check_version(version):
    _require(isinstance(version, str) and re.match(r'^\d+\.\d+$', version),
             f'action version must read MAJOR.MINOR, got {version!r}')
    major = version.split('.')[0]
    _require(major == VERSION.split('.')[0],
             f'action major version {version} is not supported (this '
             f'collector reads {VERSION.split(".")[0]}.x)')


def _check_detail(key, value):
    _require(isinstance(key, str) and _DETAIL_KEY.match(key),
             f'action detail key {key!r} must be a lower-case identifier')
    if isinstance(value, (bool, int, float)):
        return
    if isinstance(value, str):
        _require(len(value) <= MAX_NAME_LENGTH,
                 f'action detail {key} is longer than {MAX_NAME_LENGTH}')
        return
    _require(isinstance(value, list) and len(value) <= MAX_DETAIL_LIST
             and all(report_validation.is_int(item) for item in value),
             f'action detail {key} must be a number, boolean, string or a '
             f'list of at most {MAX_DETAIL_LIST} integers')


def _parse_time(value):
    # A time without a zone is read as UTC, as oslo.utils does.
    _require(isinstance(value, str) and len(value) <= 64,
             'action generated_at must be an ISO 8601 string')
    try:
        return timeutils.parse_isotime(value)
    except ValueError as exc:
        raise MalformedAction(f'action generated_at is not ISO 8601: {exc}')


def _check_uuid(value):
    if value is None:
        return None
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise MalformedAction(f'action instance_uuid {value!r} is not a '
                              f'UUID')


def load_action(payload):
    """Check an action payload and return it as a plain dict.

    The dict has the keys of the documented schema, ``generated_at`` as an
    aware datetime and ``instance_uuid`` normalised.

    :raises MalformedAction: for anything the collector must not store.
    """
    _require(isinstance(payload, dict),
             f'an action must be an object, got {type(payload).__name__}')
    missing = [key for key in REQUIRED if key not in payload]
    _require(not missing, f'action lacks required keys {missing}')
    _check_version(payload['version'])
    host = payload['host']
    # Named under the rule the host's reports are.
    _require(report_validation.is_name(host),
             f'action host must be 1 to {MAX_NAME_LENGTH} characters '
             f'without control characters')
    _require(report_validation.is_int(payload['seq']) and payload['seq'] >= 0,
             'action seq must be a non-negative integer')
    kind = payload['kind']
    _require(isinstance(kind, str) and _KIND.match(kind),
             f'action kind {kind!r} must be a lower-case identifier')
    _require(payload['outcome'] in OUTCOMES,
             f'action outcome must be one of {", ".join(OUTCOMES)}')
    reason = payload.get('reason') or ''
    _require(isinstance(reason, str) and len(reason) <= MAX_REASON_LENGTH,
             f'action reason must be a string of at most '
             f'{MAX_REASON_LENGTH} characters')
    details = payload.get('details') or {}
    _require(isinstance(details, dict) and len(details) <= MAX_DETAILS,
             f'action details must be an object of at most {MAX_DETAILS} '
             f'keys')
    for key, value in details.items():
        _check_detail(key, value)
    return {
        'host': host,
        'seq': payload['seq'],
        'generated_at': _parse_time(payload['generated_at']),
        'instance_uuid': _check_uuid(payload.get('instance_uuid')),
        'kind': kind,
        'outcome': payload['outcome'],
        'reason': reason,
        'details': dict(details),
    }
