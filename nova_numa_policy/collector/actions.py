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

An action is held to the bounds a report is: its host named under the
same rule, ``seq`` from 0 to 2**63 - 1, ``generated_at`` read by the
reports' own time parser (RFC 3339, from 1970 on; a time without a zone
is read as UTC) and, by the collector, no more than ``max_clock_skew``
ahead; numbers finite, integers within 64 bits (what a JSON column
stores exactly).

Compatibility follows the HostReport rules: a newer minor version may add
keys, which are ignored; a different major version is refused. New kinds
may appear without a version change, so any well-formed kind is stored.
"""

import re
import uuid

from nova_numa_policy.contracts import exception
from nova_numa_policy.objects import action as action_wire
from nova_numa_policy.objects import report
from nova_numa_policy.objects import validation as report_validation

ACTION_EVENT_TYPE = action_wire.EVENT_TYPE
VERSION = action_wire.VERSION

# What today's agents send (nova_numa_policy.objects.action.kind_of of
# each backend action).
KNOWN_KINDS = ('pin_vcpu', 'pin_emulator', 'set_nodeset', 'move_pages',
               'pin_io_threads', 'steer_irq')
OUTCOMES = action_wire.OUTCOMES
MAX_NAME_LENGTH = report.MAX_NAME_LENGTH
MAX_REASON_LENGTH = action_wire.MAX_REASON_LENGTH
MAX_DETAILS = 32
MAX_DETAIL_LIST = 4096
# Matched whole (fullmatch): a ``$`` would let a final newline through.
_IDENTIFIER = re.compile(r'[a-z][a-z0-9_]{0,63}', re.ASCII)
_VERSION = re.compile(r'[0-9]{1,4}\.[0-9]{1,4}', re.ASCII)
MAX_SEQ = report.MAX_SEQ
# Integers a detail may hold: signed 64 bits, what a JSON column (and
# most JSON readers) hold exactly.
MIN_DETAIL_INT = -(1 << 63)
MAX_DETAIL_INT = (1 << 63) - 1
REQUIRED = ('version', 'host', 'seq', 'generated_at', 'kind', 'outcome')


class MalformedAction(exception.MalformedReport):
    """An action payload could not be read; dropped and counted."""


def _require(condition, message):
    if not condition:
        raise MalformedAction(message)


def _is_identifier(value):
    return isinstance(value, str) and _IDENTIFIER.fullmatch(value) is not None


def _check_version(version):
    _require(isinstance(version, str) and _VERSION.fullmatch(version),
             f'action version must read MAJOR.MINOR, got '
             f'{report_validation.shown(version)}')
    major = version.split('.')[0]
    _require(major == VERSION.split('.')[0],
             f'action major version {version} is not supported (this '
             f'collector reads {VERSION.split(".")[0]}.x)')


def _is_detail_int(value):
    return (report_validation.is_int(value)
            and MIN_DETAIL_INT <= value <= MAX_DETAIL_INT)


def _is_detail_number(value):
    # NaN and infinity are no JSON: stored, they would make the row's
    # details unreadable to every JSON reader of the API.
    if isinstance(value, int) and not isinstance(value, bool):
        return _is_detail_int(value)
    return isinstance(value, float) and report_validation.is_number(value)


def _check_detail(key, value):
    _require(_is_identifier(key),
             f'action detail key {report_validation.shown(key)} must be a '
             f'lower-case identifier')
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        _require(_is_detail_number(value),
                 f'action detail {key} must be a finite number, integers '
                 f'within 64 bits')
        return
    if isinstance(value, str):
        _require(report_validation.is_text(value)
                 and len(value) <= MAX_NAME_LENGTH,
                 f'action detail {key} must be text of at most '
                 f'{MAX_NAME_LENGTH} characters without surrogates')
        return
    _require(isinstance(value, list) and len(value) <= MAX_DETAIL_LIST
             and all(_is_detail_int(item) for item in value),
             f'action detail {key} must be a number, boolean, string or a '
             f'list of at most {MAX_DETAIL_LIST} integers within 64 bits')


def _parse_time(value):
    # The reports' parser; a time without a zone is read as UTC, as
    # oslo.utils read it before, for agents that send one.
    try:
        return report_validation.parse_time(value, zone_required=False)
    except exception.MalformedReport as exc:
        raise MalformedAction(f'action generated_at must be an ISO 8601 '
                              f'(RFC 3339) time: {exc}')


def _check_uuid(value):
    if value is None:
        return None
    try:
        # Text only: str() of what a sender nests deep enough, or of an
        # int of thousands of digits, raises where it should refuse.
        return str(uuid.UUID(value if isinstance(value, str) else ''))
    except ValueError:
        raise MalformedAction(f'action instance_uuid '
                              f'{report_validation.shown(value)} is not a '
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
    seq = payload['seq']
    _require(report_validation.is_int(seq) and 0 <= seq <= MAX_SEQ,
             f'action seq must be an integer from 0 to {MAX_SEQ}')
    kind = payload['kind']
    _require(_is_identifier(kind),
             f'action kind {report_validation.shown(kind)} must be a '
             f'lower-case identifier')
    _require(payload['outcome'] in OUTCOMES,
             f'action outcome must be one of {", ".join(OUTCOMES)}')
    reason = payload.get('reason') or ''
    _require(report_validation.is_text(reason)
             and len(reason) <= MAX_REASON_LENGTH,
             f'action reason must be text without surrogates of at most '
             f'{MAX_REASON_LENGTH} characters')
    details = payload.get('details') or {}
    _require(isinstance(details, dict) and len(details) <= MAX_DETAILS,
             f'action details must be an object of at most {MAX_DETAILS} '
             f'keys')
    for key, value in details.items():
        _check_detail(key, value)
    return {
        'host': host,
        'seq': seq,
        'generated_at': _parse_time(payload['generated_at']),
        'instance_uuid': _check_uuid(payload.get('instance_uuid')),
        'kind': kind,
        'outcome': payload['outcome'],
        'reason': reason,
        'details': dict(details),
    }
