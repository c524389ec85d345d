"""A ``HostReport`` on the wire: dump, read, and tolerate versions.

The scheduler's report cache and the collector read a payload back with
:func:`check_payload` or :func:`read_payload`: the same size, signature
and value checks (:mod:`.validation`), one exception type.

Rolling upgrades run old and new agents and consumers side by side, so:

* a consumer reads a report of an *older minor* version: fields the agent
  did not know are absent and read as their documented defaults;
* a consumer reads a report of a *newer minor* version: fields it does not
  know are dropped (minor versions only ever add fields);
* an agent can be pinned to an older version for consumers that are not yet
  upgraded (``[numa_policy_reports] report_version``), using
  ``obj_make_compatible``;
* a different *major* version is refused with :class:`MalformedReport`.

Everything that comes off the wire is checked before anyone reads it: a
malformed report raises exactly one exception type,
:class:`~nova_numa_policy.contracts.exception.MalformedReport`.
"""

import copy
import datetime
import functools
import json
import re

from oslo_serialization import jsonutils
from oslo_utils import versionutils

from nova_numa_policy.contracts import exception
from nova_numa_policy.objects import base
from nova_numa_policy.objects import report as schema
from nova_numa_policy.objects import signing
from nova_numa_policy.objects import validation


def dump_report(report, target_version=None):
    """Return the report's wire primitive, optionally at an older version."""
    report.obj_reset_changes(recursive=True)
    return report.obj_to_primitive(target_version=target_version)


def report_to_json(report, target_version=None):
    return jsonutils.dumps(dump_report(report, target_version))


def check_size(primitive, max_bytes):
    """Refuse a wire primitive whose compact JSON exceeds ``max_bytes``.

    Checked before anything else is read, so an oversized report costs
    no checking or object building. The size is that of the primitive as
    JSON, whichever way it reached this process.

    :raises OversizedReport: over the limit.
    """
    try:
        size = len(json.dumps(primitive, separators=(',', ':'),
                              default=str))
    except (RecursionError, ValueError) as exc:
        raise exception.MalformedReport(f'report is not JSON: {exc}')
    if size > max_bytes:
        raise exception.OversizedReport(
            f'report of {size} bytes exceeds the limit of {max_bytes}')


def report_from_json(text, max_bytes):
    """Read a report from JSON text no longer than ``max_bytes``."""
    if len(text) > max_bytes:
        raise exception.OversizedReport(
            f'report of {len(text)} bytes exceeds the limit of {max_bytes}')
    return load_report(_from_json(text))


def _from_json(text):
    try:
        return jsonutils.loads(text)
    except (ValueError, RecursionError) as exc:
        raise exception.MalformedReport(f'report is not JSON: {exc}')


def _prepare(payload, max_bytes, secrets):
    """The primitive of a notification payload, size and origin checked."""
    if isinstance(payload, str):
        if len(payload) > max_bytes:
            raise exception.OversizedReport(
                f'report of {len(payload)} bytes exceeds the limit of '
                f'{max_bytes}')
        payload = _from_json(payload)
    else:
        check_size(payload, max_bytes)
    signing.verify(payload, secrets)
    return payload


# Why a payload was refused: every consumer counts drops under these.
REFUSED_OVERSIZED = 'oversized'
REFUSED_MALFORMED = 'malformed'
REFUSED_FUTURE = 'from the future'
REFUSED_UNSIGNED = 'unsigned'
REFUSED_BAD_SIGNATURE = 'bad signature'
REFUSED_UNEXPECTED = 'unexpected error'
# The most specific first: each is a MalformedReport.
_REFUSALS = ((exception.OversizedReport, REFUSED_OVERSIZED),
             (exception.ReportFromTheFuture, REFUSED_FUTURE),
             (exception.UnsignedReport, REFUSED_UNSIGNED),
             (exception.BadSignature, REFUSED_BAD_SIGNATURE),
             (exception.MalformedReport, REFUSED_MALFORMED))


def refusal_reason(exc):
    """The counter a payload refused with ``exc`` is counted under."""
    for kind, reason in _REFUSALS:
        if isinstance(exc, kind):
            return reason
    return REFUSED_UNEXPECTED


# Seconds between two log lines about refusals of one reason.
REFUSAL_LOG_INTERVAL = 60.0


class RefusalLogLimit:
    """Whether to log a refusal: once per reason and interval at most.

    A broken or hostile publisher can send thousands of bad payloads a
    second; every one is counted, but a line each would flood the log
    (and the disk under it). Not locked: a race costs one extra line.
    """

    def __init__(self, interval=REFUSAL_LOG_INTERVAL):
        self.interval = interval
        self._last_logged = {}

    def due(self, reason, now):
        """True, and ``now`` remembered, if ``reason`` may be logged."""
        last = self._last_logged.get(reason)
        if last is not None and now - last < self.interval:
            return False
        self._last_logged[reason] = now
        return True


def check_payload(payload, max_bytes, secrets=()):
    """A payload off the bus, checked, as plain data (load_report_data).

    Every consumer reads a payload through this or :func:`read_payload`:
    the same size, signature and value checks, one time parser
    (validation.parse_time), one exception type; so both keep exactly
    the same reports, with equal values.

    :raises MalformedReport: (or a subclass) for anything not to trust.
    """
    return load_report_data(_prepare(payload, max_bytes, secrets))


def read_payload(payload, max_bytes, secrets=()):
    """:func:`check_payload`, as a report object (load_report)."""
    return load_report(_prepare(payload, max_bytes, secrets))


def load_report(primitive, cls=schema.NumaHostReport):
    """Turn a wire primitive into a checked report object.

    :raises MalformedReport: for anything a consumer must not trust.
    """
    version, data = _read_checked(primitive, cls)
    # Hydrate with ``cls`` itself rather than the registry's newest class
    # of that name: a consumer reads as the version it knows.
    report = cls._obj_from_primitive(None, version,
                                     _repack_tree(cls, version, data))
    report.obj_reset_changes(recursive=True)
    return report


def load_report_data(primitive):
    """Check a wire primitive and return its data as plain dicts.

    The same checks as :func:`load_report`, without building objects: the
    scheduler's report cache reads thousands of reports a second. Children
    are lists of dicts, ``generated_at`` an aware datetime in UTC (as the
    checks read it); fields an older agent did not send hold their
    defaults.

    :raises MalformedReport: for anything a consumer must not trust.
    """
    _, data = _read_checked(primitive, schema.NumaHostReport)
    plain = dict(data)
    for name in schema.NumaHostReport.CHILDREN:
        plain[name] = [child for _, child in data[name]]
    return plain


def check_report(report):
    """Check a report built in this process, as a consumer would."""
    _read_checked(dump_report(report), type(report))


# Every object of ours serialises under the same namespace.
_PREFIX = base.NumaPolicyObject.OBJ_SERIAL_NAMESPACE
NAME_KEY = f'{_PREFIX}.name'
NAMESPACE_KEY = f'{_PREFIX}.namespace'
VERSION_KEY = f'{_PREFIX}.version'
DATA_KEY = f'{_PREFIX}.data'


def _read_checked(primitive, cls):
    """Return (version, data) of a primitive that passed every check."""
    version, data = _tolerate_version(primitive, cls)
    validation.check_host(data)
    return version, data


def _primitive_parts(primitive, cls):
    if not isinstance(primitive, dict):
        raise exception.MalformedReport(
            f'{cls.obj_name()} must be an object, got '
            f'{type(primitive).__name__}')
    try:
        name = primitive[NAME_KEY]
        namespace = primitive[NAMESPACE_KEY]
        version = primitive[VERSION_KEY]
        data = primitive[DATA_KEY]
    except KeyError as exc:
        raise exception.MalformedReport(
            f'{cls.obj_name()} lacks its {exc.args[0]} key')
    if (name != cls.obj_name()
            or namespace != cls.OBJ_PROJECT_NAMESPACE
            or not isinstance(data, dict)):
        raise exception.MalformedReport(
            f'expected a {cls.OBJ_PROJECT_NAMESPACE} {cls.obj_name()}, got '
            f'{namespace!r} {name!r}')
    return version, data


@functools.lru_cache(maxsize=64)
def _parse_version(version):
    # Every report carries a version per object; a fleet has few distinct
    # ones, so each is parsed once.
    return versionutils.convert_version_to_tuple(version)


# "major.minor" in ASCII digits: int() would read other scripts' digits
# that oslo.versionedobjects' own parser then refuses.
_VERSION = re.compile(r'[0-9]{1,4}\.[0-9]{1,4}', re.ASCII)


def _version_tuple(version, cls):
    try:
        if not _VERSION.fullmatch(version):
            raise ValueError(version)
        return _parse_version(version)
    except (ValueError, AttributeError, TypeError):
        raise exception.MalformedReport(
            f'{cls.obj_name()} has an unreadable version {version!r:.40}')


def _tolerate_version(primitive, cls):
    """Return (version, data) to read: typed, defaulted, newer fields gone.

    Children come back as (version, data) pairs of their own class, the
    same shape: :func:`_repack_tree` turns the whole into a primitive
    again, and readers of plain data take each pair's data.
    """
    version, data = _primitive_parts(primitive, cls)
    theirs = _version_tuple(version, cls)
    ours = _version_tuple(cls.VERSION, cls)
    if theirs[0] != ours[0]:
        raise exception.MalformedReport(
            f'{cls.obj_name()} major version {version} is not supported '
            f'(this consumer reads {ours[0]}.x)')
    newer = theirs > ours
    if not newer and not data.keys() <= cls.fields.keys():
        raise exception.MalformedReport(
            f'{cls.obj_name()} {version} has unknown fields '
            f'{sorted(set(data) - set(cls.fields))}')
    cleaned = {}
    for name, check in validation.checkers(cls):
        if name in data:
            cleaned[name] = check(data[name], name)
        elif name in cls.DEFAULTS:
            cleaned[name] = copy.copy(cls.DEFAULTS[name])
        else:
            raise exception.MalformedReport(
                f'{cls.obj_name()} lacks required field {name}')
    for name, child_cls in cls.CHILDREN.items():
        limit = validation.COUNT_LIMITS.get(name)
        if limit is not None and len(cleaned[name]) > limit:
            raise exception.OversizedReport(
                f'a report has at most {limit} {name}, got '
                f'{len(cleaned[name])}')
        cleaned[name] = [_tolerate_version(child, child_cls)
                         for child in cleaned[name]]
    # Read as our own version once the unknown fields are gone.
    return (cls.VERSION if newer else version), cleaned


def _time_text(moment):
    """Text oslo.versionedobjects reads back as exactly ``moment``.

    It reads a time field only from text. The checks already read the
    wire's text (validation.parse_time), so it gets that datetime in UTC,
    microseconds included, never the wire's own text, which its parser
    would read otherwise than ours. UTC as "Z", its own way of writing
    it: a report read back then dumps as it was sent.
    """
    return moment.strftime('%Y-%m-%dT%H:%M:%S.%fZ')


def _repack_tree(cls, version, data):
    """The primitive of checked data whose children are (version, data)."""
    data = {name: _time_text(value)
            if isinstance(value, datetime.datetime) else value
            for name, value in data.items()}
    for name, child_cls in cls.CHILDREN.items():
        data[name] = [_repack_tree(child_cls, *child)
                      for child in data[name]]
    return {NAME_KEY: cls.obj_name(),
            NAMESPACE_KEY: cls.OBJ_PROJECT_NAMESPACE,
            VERSION_KEY: version,
            DATA_KEY: data}
