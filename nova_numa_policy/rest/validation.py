"""Pure checks of path and query parameters; BadRequest on anything off.

Each listing declares the parameters it takes as ``{name: parser}``; a
parser turns the raw string into its value or raises BadRequest naming the
parameter, what it must be and what was sent.
"""

import functools
import json
import urllib.parse
import uuid

from nova_numa_policy.contracts import exception
from nova_numa_policy.contracts import policy
from nova_numa_policy.objects import report
from nova_numa_policy.objects import validation as report_validation
from nova_numa_policy.rest import errors

# A host is named under the rule its agent's reports are checked against;
# the OpenAPI description publishes the same pattern.
MAX_NAME_LENGTH = report.MAX_NAME_LENGTH
NAME_PATTERN = report_validation.NAME_PATTERN
# Longest raw value echoed back in an error message.
_ECHO = 64


def _echo(value):
    value = value if len(value) <= _ECHO else value[:_ECHO] + '...'
    return repr(value)


def query_pairs(query_string):
    """A query string's (name, value) pairs, in order, repeats kept.

    Only ``&`` separates parameters: ``;`` is an ordinary character of a
    query (RFC 3986) and may be part of a name such as a physnet's.
    WSGI hands the query over as Latin-1 text of the bytes sent; names
    and values must be UTF-8 once percent-decoded.
    """
    try:
        raw = query_string.encode('latin-1')
        return [tuple(_unquote(part) for part in field.partition(b'=')[::2])
                for field in raw.split(b'&') if field]
    except UnicodeError:
        raise errors.BadRequest('the query string is not UTF-8')


def _unquote(raw):
    return urllib.parse.unquote_to_bytes(raw.replace(b'+', b' ')).decode(
        'utf-8')


def name(param, value):
    """A host name: 1 to 255 characters, none of them a control one."""
    if not report_validation.is_name(value):
        raise errors.BadRequest(
            f'{param} must be 1 to {MAX_NAME_LENGTH} characters without '
            f'control characters, got {_echo(value)}')
    return value


def instance_uuid(param, value):
    """A UUID, returned in its canonical lower-case form."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise errors.BadRequest(f'{param} must be a UUID, got {_echo(value)}')


def positive_int(param, value, maximum=2 ** 63 - 1):
    if not report_validation.is_ascii_int(value) or not (
            0 < int(value) <= maximum):
        raise errors.BadRequest(
            f'{param} must be an integer from 1 to {maximum}, got '
            f'{_echo(value)}')
    return int(value)


def query(params, parsers, max_limit, default_limit):
    """Check a request's query parameters against the ones it may have.

    :param params: (name, value) pairs as sent, repeats included.
    :param parsers: {name: parser(param, value)} of the route's filters and
        its marker; ``limit`` is always allowed.
    :returns: {name: parsed value}, with ``limit`` always set.
    """
    allowed = ('limit',) + tuple(parsers)
    seen = {}
    for key, value in params:
        if key not in allowed:
            raise errors.BadRequest(
                f'unknown query parameter {_echo(key)}; this resource takes '
                f'{", ".join(sorted(allowed))}')
        if key in seen:
            raise errors.BadRequest(f'query parameter {key} is repeated')
        seen[key] = value
    result = {'limit': default_limit}
    if 'limit' in seen:
        result['limit'] = positive_int('limit', seen.pop('limit'),
                                       maximum=max_limit)
    for key, value in seen.items():
        result[key] = parsers[key](key, value)
    return result


def no_query(params):
    """A resource that takes no query parameter refuses any."""
    for key, _value in params:
        raise errors.BadRequest(
            f'unknown query parameter {_echo(key)}; this resource takes '
            f'none')


# Largest vCPU count and memory the explain call takes: far above any
# flavor, low enough that the arithmetic stays exact.
MAX_VCPUS = 4096
MAX_MEMORY_MB = 2 ** 31 - 1
MAX_EXTRA_SPECS_LENGTH = 65535


def extra_specs(param, value):
    """A JSON object of strings, as nova stores a flavor's extra specs."""
    if len(value) > MAX_EXTRA_SPECS_LENGTH:
        raise errors.BadRequest(
            f'{param} must be at most {MAX_EXTRA_SPECS_LENGTH} characters')
    try:
        specs = json.loads(value)
    except (ValueError, RecursionError):  # deep nesting: RecursionError
        raise errors.BadRequest(
            f'{param} must be a JSON object, got {_echo(value)}')
    if not isinstance(specs, dict) or not all(
            isinstance(v, str) for v in specs.values()):
        raise errors.BadRequest(
            f'{param} must be a JSON object of strings, got {_echo(value)}')
    return specs


def numa_extra_specs(param, value):
    """Extra specs whose ``hw:numa_*`` values are ones we know.

    A conflict with a topology nova owns is not refused: the scheduler
    rejects such a flavor on every host, and the explanation says why.
    """
    specs = extra_specs(param, value)
    try:
        policy.resolve(specs)
    except exception.InvalidNumaPolicy as exc:
        raise errors.BadRequest(str(exc))
    except exception.NumaPolicyError:
        pass
    return specs


_EXPLAIN = {
    'vcpus': functools.partial(positive_int, maximum=MAX_VCPUS),
    'memory_mb': functools.partial(positive_int, maximum=MAX_MEMORY_MB),
    'extra_specs': numa_extra_specs,
}


def explain_query(params):
    """The explain call's parameters; ``physnet`` alone may repeat.

    :returns: {'vcpus', 'memory_mb', 'extra_specs', 'physnets'}.
    """
    params = list(params)
    physnets = [name('physnet', v) for k, v in params if k == 'physnet']
    others = [(k, v) for k, v in params if k != 'physnet']
    for key, _value in others:
        if key not in _EXPLAIN:
            raise errors.BadRequest(
                f'unknown query parameter {_echo(key)}; this resource takes '
                f'{", ".join(sorted(_EXPLAIN) + ["physnet"])}')
    result = query(others, _EXPLAIN, 1, 1)
    del result['limit']
    missing = [k for k in ('vcpus', 'memory_mb') if k not in result]
    if missing:
        raise errors.BadRequest(
            f'missing query parameter {" and ".join(missing)}')
    result.setdefault('extra_specs', {})
    result['physnets'] = sorted(set(physnets))
    return result
