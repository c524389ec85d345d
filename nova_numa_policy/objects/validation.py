"""The checks every value of a report passes before anyone reads it.

Types are derived from each class's fields; values are held to the
schema's bounds (:mod:`.report`). The rules for a name and for an integer
written as text are shared with the REST API's parameter checks
(``nova_numa_policy/rest/validation.py``), so a host the API is asked
about is named under the same rule its agent's reports were.

Every failure raises
:class:`~nova_numa_policy.contracts.exception.MalformedReport` (or
:class:`~nova_numa_policy.contracts.exception.OversizedReport`).
"""

import datetime
import functools
import math
import re
import sys

from oslo_versionedobjects import fields

from nova_numa_policy.contracts import exception
from nova_numa_policy.contracts import policy
from nova_numa_policy.objects import report as schema

# -- rules shared with the REST API's parameter checks -----------------

# Names (hosts, NICs, physnets, agent versions) are any text without
# control characters (C0, DEL, C1): what a log line and a URL can carry.
# The OpenAPI description publishes the same pattern (for JSON Schema,
# whose ``$`` is the end of the text).
NAME_PATTERN = '^[^\u0000-\u001f\u007f-\u009f]+$'
_NAME = re.compile(NAME_PATTERN)


# A lone surrogate (U+D800 to U+DFFF) is no character: JSON's "\ud800"
# escape reads as one, but it has no UTF-8 form, so a database, a log
# file or the REST API's answer could not hold it.
_SURROGATE = re.compile('[\ud800-\udfff]')


def is_text(value):
    """Whether ``value`` is a string that UTF-8 can carry (no surrogate)."""
    # isascii() first: nearly every value is ASCII, and it costs least.
    return isinstance(value, str) and (
        value.isascii() or _SURROGATE.search(value) is None)


def is_name(value):
    """1 to MAX_NAME_LENGTH characters, none of them a control one."""
    # fullmatch, not match: Python's ``$`` also matches before a final
    # newline, which made "host\n" a second host beside "host".
    return (is_text(value)
            and 0 < len(value) <= schema.MAX_NAME_LENGTH
            and _NAME.fullmatch(value) is not None)


def is_ascii_int(text):
    """Whether ``text`` is a non-negative integer in ASCII digits.

    int() also reads other scripts' digits, and str.isdigit() admits
    characters int() refuses: both together, in ASCII only. Nor does
    int() read more digits than sys.get_int_max_str_digits() (ValueError).
    """
    longest = sys.get_int_max_str_digits()
    return (text.isascii() and text.isdigit()
            and (not longest or len(text) <= longest))


# A node id written as text, as JSON object keys must be: the one way
# str(int) writes it. "00", "+0" or "0 " would otherwise be a second
# name for node 0, and a key of thousands of digits more than int() reads.
_NODE_KEY = re.compile(r'0|[1-9][0-9]{0,%d}' % (
    len(str(schema.MAX_NODE_ID)) - 1), re.ASCII)


def is_node_key(text):
    """Whether ``text`` is a node id in canonical decimal ("0", "1", ...)."""
    return isinstance(text, str) and _NODE_KEY.fullmatch(text) is not None


# -- type checks, derived from each class's ovo fields -----------------

def is_int(value):
    # bool is an int subclass; a JSON true is not a count.
    return isinstance(value, int) and not isinstance(value, bool)


# The largest integer a float field can hold: beyond it float() raises
# OverflowError, where the bounds of a field would refuse it.
_LARGEST_FLOAT = int(sys.float_info.max)


def is_number(value):
    """A finite int or float, one a float field can hold.

    Finite: infinity and NaN pass or fail comparisons in ways no bound
    written as a comparison catches, and are no JSON. An integer is
    compared rather than given to math.isfinite(), which converts it to
    a float first and overflows on one of 400 digits.
    """
    if isinstance(value, bool):
        # bool is an int subclass; a JSON true is not a number.
        return False
    if isinstance(value, int):
        return -_LARGEST_FLOAT <= value <= _LARGEST_FLOAT
    return isinstance(value, float) and math.isfinite(value)


def shown(value, limit=40):
    """A sender's value for a message: its repr, cut short; never raises."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        # No repr: an int of more digits than Python writes (4300), or
        # nesting deeper than the stack.
        return f'<{type(value).__name__}>'
    return text[:limit]


def _typed(test, what):
    def check(value, name):
        if not test(value):
            raise exception.MalformedReport(
                f'{name} must be {what}, got {shown(value)}')
        return value
    return check


def _list_of(test, what):
    def check(value, name):
        _require(isinstance(value, list) and all(map(test, value)),
                 '%s must be a list of %s', name, what)
        return value
    return check


def _dict_of_ints(value, name):
    _require(isinstance(value, dict)
             and all(is_text(k) and is_int(v)
                     for k, v in value.items()),
             '%s must map names to integers', name)
    return value


def _timestamp(value, name):
    # Read here, once, by the one parser: every consumer then holds the
    # same datetime (wire.load_report_data, wire.load_report).
    _require(isinstance(value, str), '%s must be an ISO 8601 string', name)
    return parse_time(value)


# Agents send canonical UUIDs; a regex is far cheaper than parsing.
_UUID = re.compile(
    r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}',
    re.IGNORECASE)


def _is_uuid(value):
    return isinstance(value, str) and _UUID.fullmatch(value) is not None


# The one form a time takes on the wire, RFC 3339's: what the agents
# (through oslo.versionedobjects) write. Its shape is checked here and
# datetime.fromisoformat() reads it: that reader alone grows more lenient
# with each Python release (week dates, basic format, "+01" offsets, any
# fraction length), and a scheduler and a collector on different Pythons
# must keep the same reports. At most six fraction digits, what a
# datetime keeps: a longer fraction would be cut, and two texts would
# name one time. Offsets run from -23:59 to +23:59.
_TIME = re.compile(
    r'[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}'
    r'(?:\.[0-9]{1,6})?'
    r'(?P<zone>Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?', re.ASCII)
# The earliest time a report or action may carry. No agent's clock is
# earlier; and oslo.versionedobjects writes years before 1000 in fewer
# than four digits, which the collector's stored copy would not read back
# as, nor SQL date columns hold.
EARLIEST_TIME = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def parse_time(value, zone_required=True):
    """An aware datetime in UTC from RFC 3339 text: the one time parser.

    Every time off the wire is read here, for every consumer: reports'
    ``generated_at`` (the scheduler's cache and the collector alike) and
    actions'. ``YYYY-MM-DDTHH:MM:SS``, an optional fraction of at most six
    digits, then ``Z`` or a ``+HH:MM``/``-HH:MM`` offset; without one the
    text is refused, or read as UTC when ``zone_required`` is False. The
    moment must lie from :data:`EARLIEST_TIME` to the end of year 9999
    in UTC.

    :raises MalformedReport: for any other text or value.
    """
    match = _TIME.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise exception.MalformedReport(
            f'unreadable time {shown(value)} (RFC 3339 is '
            f'YYYY-MM-DDTHH:MM:SS[.ffffff]Z or +HH:MM)')
    _require(match['zone'] is not None or not zone_required,
             'times must carry a time zone')
    try:
        moment = datetime.datetime.fromisoformat(value)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=datetime.timezone.utc)
        moment = moment.astimezone(datetime.timezone.utc)
    except (ValueError, OverflowError):
        # Day 31 of a 30-day month, second 60, or a moment beyond year
        # 9999 once in UTC.
        raise exception.MalformedReport(
            f'time out of range {shown(value)}')
    _require(moment >= EARLIEST_TIME, 'times are from %s on, got %s',
             EARLIEST_TIME.isoformat(), shown(value))
    return moment


def _objects(value, name):
    _require(isinstance(value, list), f'{name} must be a list')
    return value


_CHECKS_BY_FIELD = {
    fields.IntegerField: _typed(is_int, 'an integer'),
    fields.FloatField: _typed(is_number, 'a finite number'),
    fields.StringField: _typed(is_text, 'a string without surrogates'),
    fields.UUIDField: _typed(_is_uuid, 'a canonical UUID'),
    fields.BooleanField: _typed(lambda v: isinstance(v, bool), 'a boolean'),
    fields.DateTimeField: _timestamp,
    fields.ListOfIntegersField: _list_of(is_int, 'integers'),
    fields.ListOfStringsField: _list_of(is_text,
                                        'strings without surrogates'),
    fields.DictOfIntegersField: _dict_of_ints,
    fields.ListOfObjectsField: _objects,
}


def _nullable(check):
    def nullable_check(value, name):
        return None if value is None else check(value, name)
    return nullable_check


@functools.cache
def checkers(cls):
    checkers = []
    for name, field in cls.fields.items():
        check = _CHECKS_BY_FIELD[type(field)]
        checkers.append((name, _nullable(check) if field.nullable
                         else check))
    return tuple(checkers)


# -- value checks on typed data ----------------------------------------

COUNT_LIMITS = {'numa_nodes': schema.MAX_NODES, 'nics': schema.MAX_NICS,
                'instances': schema.MAX_INSTANCES}


def _require(condition, message, *args):
    # The message is formatted only on failure: this runs for every field
    # of thousands of reports a second.
    if not condition:
        raise exception.MalformedReport(message % args if args else message)


def _check_name(value, what):
    _require(value is None or is_name(value),
             '%s must be 1 to %d characters without control characters',
             what, schema.MAX_NAME_LENGTH)


def check_host(data):
    _check_name(data['host'], 'host')
    _check_name(data['hypervisor_hostname'], 'hypervisor_hostname')
    _check_name(data['agent_version'], 'agent_version')
    _require(0 <= data['seq'] <= schema.MAX_SEQ, 'seq must be 0 to %d',
             schema.MAX_SEQ)
    _require(0 < data['period'] <= schema.MAX_PERIOD,
             'period must be more than 0 and at most %s s', schema.MAX_PERIOD)
    nodes = [node for _, node in data['numa_nodes']]
    _require(nodes, 'a report has at least one NUMA node')
    node_ids = {node['id'] for node in nodes}
    _require(len(node_ids) == len(nodes), 'NUMA node ids repeat')
    cpu_count = sum(len(node['cpus']) for node in nodes)
    if cpu_count > schema.MAX_CPUS:
        raise exception.OversizedReport(
            f'a report has at most {schema.MAX_CPUS} CPUs, got {cpu_count}')
    for node in nodes:
        _check_node(node, len(nodes))
    host_cpus = set().union(*(node['cpus'] for node in nodes))
    _require(len(host_cpus) == cpu_count,
             'a CPU id appears twice among the nodes')
    for _, nic in data['nics']:
        _check_name(nic['name'], 'NIC name')
        _check_name(nic['physnet'], 'physnet')
        _check_name(nic['bridge'], 'bridge')
        _require(nic['numa_node'] is None or nic['numa_node'] in node_ids,
                 'NIC %s is on unknown node %s', nic['name'],
                 nic['numa_node'])
        _require(nic['speed_mbps'] is None
                 or 0 <= nic['speed_mbps'] <= schema.MAX_SPEED_MBPS,
                 'NIC %s: speed must be 0 to %d Mb/s', nic['name'],
                 schema.MAX_SPEED_MBPS)
        _check_nic_irqs(nic, host_cpus)
    uuids = set()
    for _, instance in data['instances']:
        _check_instance(instance, node_ids, host_cpus)
        uuids.add(instance['uuid'].lower())
    _require(len(uuids) == len(data['instances']),
             'an instance appears twice')
    unknown = set(data['enforceable_policies']).difference(
        policy.POLICIES)
    _require(not unknown, 'unknown enforceable policies %s', sorted(unknown))
    signal = data.get('locality_signal')
    _require(signal is None or signal in schema.LOCALITY_SIGNALS,
             'unknown locality signal %.40r', signal)
    unknown = set(data.get('measurements', ())).difference(
        schema.MEASUREMENTS)
    _require(not unknown, 'unknown measurements %.80r', sorted(unknown))


def _check_nic_irqs(nic, host_cpus):
    """A NIC's vectors, the CPUs they go to and the verdict on them.

    Absent from a sender before NIC report 1.1: nothing said. Vectors
    are distinct numbers; their CPUs are the host's, each once; the
    verdict is one line of bounded length.
    """
    name = nic['name']
    irqs = nic.get('irqs') or []
    _require(len(irqs) <= schema.MAX_NIC_IRQS,
             'NIC %s: at most %d interrupt vectors', name,
             schema.MAX_NIC_IRQS)
    _require(all(0 <= irq <= schema.MAX_IRQ for irq in irqs),
             'NIC %s: interrupt vectors are 0 to %d', name, schema.MAX_IRQ)
    _require(len(set(irqs)) == len(irqs),
             'NIC %s: an interrupt vector repeats', name)
    cpus = nic.get('irq_cpus') or []
    _require(len(set(cpus)) == len(cpus) and set(cpus) <= host_cpus,
             "NIC %s: irq_cpus must be the host's CPUs, each once", name)
    verdict = nic.get('irq_steering')
    _require(verdict is None or (
        0 < len(verdict) <= schema.MAX_VERDICT_LENGTH
        and verdict.isprintable()),
        'NIC %s: irq_steering must be 1 to %d printable characters', name,
        schema.MAX_VERDICT_LENGTH)


def _check_node(node, node_count):
    node_id = node['id']
    _require(0 <= node_id <= schema.MAX_NODE_ID, 'NUMA node ids are 0 to %d',
             schema.MAX_NODE_ID)
    _require(0 <= node['memory_total_mb'] <= schema.MAX_MEMORY_MB,
             'node %s: memory must be 0 to %d MB', node_id,
             schema.MAX_MEMORY_MB)
    _require(0 <= node['memory_free_mb'] <= node['memory_total_mb'],
             'node %s: free memory must be between 0 and the total',
             node_id)
    cpus = node['cpus']
    _require(all(0 <= cpu <= schema.MAX_CPU_ID for cpu in cpus),
             'node %s: CPU ids are 0 to %d', node_id, schema.MAX_CPU_ID)
    cpu_set = set(cpus)
    _require(len(cpu_set) == len(cpus), 'node %s: a CPU id repeats',
             node_id)
    _require(0.0 <= node['cpu_load'] <= 1.0,
             'node %s: cpu_load must be between 0.0 and 1.0', node_id)
    _check_floating(node_id, cpu_set, node.get('floating_cpus'),
                    node.get('floating_load'))
    # Absent from a sender before node report 1.2: not said.
    tier = node.get('memory_tier')
    _require(tier is None or 0 <= tier <= schema.MAX_MEMORY_TIER,
             'node %s: memory_tier must be 0 to %d', node_id,
             schema.MAX_MEMORY_TIER)
    # Absent from a sender before node report 1.3: not said. Never more
    # than the node has in use.
    demotable = node.get('demotable_mb')
    _require(demotable is None or 0 <= demotable <= (
        node['memory_total_mb'] - node['memory_free_mb']),
        'node %s: demotable_mb must be between 0 and the memory in use',
        node_id)
    distances = node['distances']
    _require(len(distances) == node_count,
             'node %s: the distance row must have one entry per node (%s)',
             node_id, node_count)
    _require(all(0 < d <= schema.MAX_DISTANCE for d in distances),
             'node %s: distances must be 1 to %s', node_id,
             schema.MAX_DISTANCE)


def _check_floating(node_id, cpu_set, floating, load):
    """The CPUs of a node guests without dedicated CPUs may use, and load.

    Both absent (a sender before node report 1.1: all CPUs are), or some
    of the node's own CPUs, each once, with a load exactly when there is
    at least one: a load of no CPU, or CPUs without one, would leave a
    consumer to guess.
    """
    if floating is None:
        _require(load is None,
                 'node %s: floating_load without floating_cpus', node_id)
        return
    floating_set = set(floating)
    _require(len(floating_set) == len(floating),
             'node %s: a floating CPU id repeats', node_id)
    _require(floating_set <= cpu_set,
             "node %s: floating_cpus must be among the node's cpus", node_id)
    _require((load is None) == (not floating),
             'node %s: floating_load must be given exactly when '
             'floating_cpus names a CPU', node_id)
    _require(load is None or 0.0 <= load <= 1.0,
             'node %s: floating_load must be between 0.0 and 1.0', node_id)


def _check_instance(instance, known_nodes, host_cpus):
    uuid = instance['uuid']
    requested = instance['requested_policy']
    _require(requested is None or requested in policy.POLICIES,
             'instance %s: unknown requested policy %.40r', uuid, requested)
    applied = instance['applied_policy']
    _require(applied in schema.APPLIED_POLICY_VALUES,
             'instance %s: unknown applied policy %.40r', uuid, applied)
    access = instance['access_class']
    _require(access is None or access in schema.ACCESS_CLASSES,
             'instance %s: unknown access class %.40r', uuid, access)
    _require(0 <= instance['io_rate'] <= schema.MAX_IO_RATE,
             'instance %s: io_rate must be 0 to %s', uuid, schema.MAX_IO_RATE)
    wait = instance.get('cpu_wait')
    _require(wait is None or 0.0 <= wait <= 1.0,
             'instance %s: cpu_wait must be between 0.0 and 1.0', uuid)
    ending = instance['enforcement']
    _require(ending is None or ending in schema.ENFORCEMENT_ENDINGS,
             'instance %s: unknown enforcement ending %.40r', uuid, ending)
    for key, mb in instance['memory_mb_per_node'].items():
        _require(is_node_key(key) and int(key) in known_nodes,
                 'instance %s: memory on unknown node %.40r', uuid, key)
        _require(0 <= mb <= schema.MAX_MEMORY_MB,
                 'instance %s: memory must be 0 to %d MB', uuid,
                 schema.MAX_MEMORY_MB)
    vcpu_cpus = instance['vcpu_cpus']
    _require(len(vcpu_cpus) <= schema.MAX_CPUS, 'instance %s: too many vCPUs',
             uuid)
    _require(all(cpu == -1 or cpu in host_cpus for cpu in vcpu_cpus),
             'instance %s: a vCPU runs on a CPU the host lacks', uuid)


def check_time(generated_at, now, max_skew=schema.DEFAULT_MAX_CLOCK_SKEW,
               what='report'):
    """Refuse a report (or action) dated more than ``max_skew`` s ahead.

    Both aware datetimes. Such a report would stay the newest of its host
    until the clocks caught up with it, hiding every genuine one.

    :raises ReportFromTheFuture:
    """
    ahead = (generated_at - now).total_seconds()
    if ahead > max_skew:
        raise exception.ReportFromTheFuture(
            f'{what} dated {ahead:.0f} s ahead of this clock (at most '
            f'{max_skew:.0f} s allowed: [numa_policy_reports] '
            f'max_clock_skew)')
