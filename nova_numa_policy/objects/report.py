"""The agent's versioned ``HostReport`` and its wire format.

An agent builds one report per period and sends its primitive (a JSON-able
dict) as an oslo.messaging notification payload; the scheduler's report cache
and the collector read it back with :func:`load_report`.

Rolling upgrades run old and new agents and consumers side by side, so:

* a consumer reads a report of an *older minor* version: fields the agent
  did not know are absent and read as their documented defaults;
* a consumer reads a report of a *newer minor* version: fields it does not
  know are dropped (minor versions only ever add fields);
* an agent can be pinned to an older version for consumers that are not yet
  upgraded (``[numa_policy_reports] report_version``), using
  ``obj_make_compatible``;
* a different *major* version is refused with :class:`MalformedReport`.

Everything that comes off the wire is checked against the bounds below
before anyone reads it: a malformed report raises exactly one exception
type, :class:`~nova_numa_policy.exception.MalformedReport`.
"""

import copy
import datetime
import functools
import json
import math
import re

from oslo_serialization import jsonutils
from oslo_utils import versionutils
from oslo_versionedobjects import fields

from nova_numa_policy.conf import reports as reports_conf
from nova_numa_policy import exception
from nova_numa_policy.objects import base
from nova_numa_policy.objects import signing
from nova_numa_policy import policy

# The notification event type agents send reports with; other events on
# the same topic (agent actions, for the collector) are not reports.
EVENT_TYPE = 'numa_policy.host.report'

MAX_NODES = 64
MAX_CPUS = 4096
MAX_NICS = 64
MAX_INSTANCES = 1024
MAX_NAME_LENGTH = 255
MAX_DISTANCE = 255
# Bounds of plausible values: far beyond any host, far below what breaks
# a consumer (a 64-bit database column, a float that is not finite).
MAX_NODE_ID = 1023
MAX_CPU_ID = (1 << 16) - 1
MAX_MEMORY_MB = 1 << 32  # 4 PiB on one node
MAX_SPEED_MBPS = 10 ** 7
MAX_SEQ = (1 << 63) - 1
MAX_PERIOD = 86400.0
MAX_IO_RATE = 1e12
# How far in the future a report's time may lie by the receiver's clock
# before it is dropped (configurable: [numa_policy_reports]
# max_clock_skew).
DEFAULT_MAX_CLOCK_SKEW = reports_conf.DEFAULT_MAX_CLOCK_SKEW

# What an instance's applied policy may say besides a concrete policy:
# nothing applied (yet), for instance while the agent has not seen it.
APPLIED_NONE = 'none'
APPLIED_POLICY_VALUES = tuple(
    value for value, spec in policy.POLICIES.items() if not spec.auto
) + (APPLIED_NONE,)
ACCESS_CLASSES = ('low', 'moderate', 'high')
# How an agent's plan for an instance ended (execution.ENDINGS).
ENFORCEMENT_ENDINGS = ('applied', 'rolled back', 'undo pending',
                       'roll back abandoned', 'gone', 'dry run')


@base.NumaPolicyObjectRegistry.register
class NumaNodeReport(base.NumaPolicyObject):
    """One host NUMA node, as measured by the agent."""

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'id': fields.IntegerField(),
        'cpus': fields.ListOfIntegersField(),
        'memory_total_mb': fields.IntegerField(),
        'memory_free_mb': fields.IntegerField(),
        # Busy fraction of the node's CPUs over the last period, 0.0 to 1.0.
        'cpu_load': fields.FloatField(),
        # This node's row of the SLIT distance matrix, in node-list order.
        'distances': fields.ListOfIntegersField(),
    }


@base.NumaPolicyObjectRegistry.register
class NumaNicReport(base.NumaPolicyObject):
    """A network uplink and the NUMA node its PCI device sits on."""

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'name': fields.StringField(),
        'numa_node': fields.IntegerField(nullable=True),
        'speed_mbps': fields.IntegerField(nullable=True),
        'physnet': fields.StringField(nullable=True),
        'bridge': fields.StringField(nullable=True),
    }

    DEFAULTS = {'numa_node': None, 'speed_mbps': None, 'physnet': None,
                'bridge': None}


@base.NumaPolicyObjectRegistry.register
class NumaInstanceReport(base.NumaPolicyObject):
    """One instance on the host: what it asked for and what it got."""

    # Version 1.0: initial version
    # Version 1.1: enforcement
    VERSION = '1.1'

    fields = {
        'uuid': fields.UUIDField(),
        'requested_policy': fields.StringField(nullable=True),
        'applied_policy': fields.StringField(),
        # Resident memory per host node; keys are node ids as strings.
        'memory_mb_per_node': fields.DictOfIntegersField(),
        # The host CPU each vCPU last ran on, in vCPU order; -1 if unknown.
        'vcpu_cpus': fields.ListOfIntegersField(),
        # Network requests (or packets) per second over the last period.
        'io_rate': fields.FloatField(),
        'io_intensive': fields.BooleanField(),
        # Seed 000 Table 1 access-imbalance class, when it was measured.
        'access_class': fields.StringField(nullable=True),
        # How the agent's last plan for the instance ended (one of
        # ENFORCEMENT_ENDINGS), None while it had none to carry out.
        'enforcement': fields.StringField(nullable=True),
    }

    DEFAULTS = {'requested_policy': None, 'applied_policy': APPLIED_NONE,
                'memory_mb_per_node': {}, 'vcpu_cpus': [], 'io_rate': 0.0,
                'io_intensive': False, 'access_class': None,
                'enforcement': None}

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('enforcement', None)


@base.NumaPolicyObjectRegistry.register
class NumaHostReport(base.NumaPolicyObject):
    """Everything one agent says about its compute node in one period."""

    # Version 1.0: initial version
    # Version 1.1: boot_id; NumaInstanceReport 1.1
    VERSION = '1.1'

    fields = {
        'host': fields.StringField(),
        'hypervisor_hostname': fields.StringField(),
        'agent_version': fields.StringField(),
        # Increases with every report of one agent process (one boot);
        # with boot_id it orders reports and makes redelivery idempotent.
        'seq': fields.IntegerField(),
        # Made afresh by each agent process: reports of one boot are
        # ordered by seq, whatever the clocks say (see supersedes()).
        'boot_id': fields.UUIDField(nullable=True),
        'generated_at': fields.DateTimeField(),
        'period': fields.FloatField(),
        'numa_nodes': fields.ListOfObjectsField('NumaNodeReport'),
        'nics': fields.ListOfObjectsField('NumaNicReport'),
        'instances': fields.ListOfObjectsField('NumaInstanceReport'),
        # hw:numa_policy values this host's agent can make true.
        'enforceable_policies': fields.ListOfStringsField(),
    }

    # The version of each child class that a given report version carries.
    obj_relationships = {
        'numa_nodes': [('1.0', '1.0')],
        'nics': [('1.0', '1.0')],
        'instances': [('1.0', '1.0'), ('1.1', '1.1')],
    }

    DEFAULTS = {'nics': [], 'instances': [], 'enforceable_policies': [],
                'boot_id': None}

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('boot_id', None)

    CHILDREN = {'numa_nodes': NumaNodeReport, 'nics': NumaNicReport,
                'instances': NumaInstanceReport}

    def node_ids(self):
        return [node.id for node in self.numa_nodes]

    def is_fresh(self, now, ttl):
        """Whether the report is younger than ``ttl`` seconds at ``now``."""
        age = (now - self.generated_at).total_seconds()
        return age <= ttl


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


def check_payload(payload, max_bytes, secrets=()):
    """A payload off the bus, checked, as plain data (load_report_data).

    Every consumer reads a payload through this or :func:`read_payload`:
    the same size, signature and value checks, one exception type.

    :raises MalformedReport: (or a subclass) for anything not to trust.
    """
    return load_report_data(_prepare(payload, max_bytes, secrets))


def read_payload(payload, max_bytes, secrets=()):
    """:func:`check_payload`, as a report object (load_report)."""
    return load_report(_prepare(payload, max_bytes, secrets))


def load_report(primitive, cls=NumaHostReport):
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
    are lists of dicts, ``generated_at`` an aware datetime; fields an older
    agent did not send hold their defaults.

    :raises MalformedReport: for anything a consumer must not trust.
    """
    _, data = _read_checked(primitive, NumaHostReport)
    plain = dict(data)
    plain['generated_at'] = _parse_time(data['generated_at'])
    for name in NumaHostReport.CHILDREN:
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
    _check_host(data)
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
    for name, check in _checkers(cls):
        if name in data:
            cleaned[name] = check(data[name], name)
        elif name in cls.DEFAULTS:
            cleaned[name] = copy.copy(cls.DEFAULTS[name])
        else:
            raise exception.MalformedReport(
                f'{cls.obj_name()} lacks required field {name}')
    for name, child_cls in cls.CHILDREN.items():
        limit = _COUNT_LIMITS.get(name)
        if limit is not None and len(cleaned[name]) > limit:
            raise exception.OversizedReport(
                f'a report has at most {limit} {name}, got '
                f'{len(cleaned[name])}')
        cleaned[name] = [_tolerate_version(child, child_cls)
                         for child in cleaned[name]]
    # Read as our own version once the unknown fields are gone.
    return (cls.VERSION if newer else version), cleaned


def _repack_tree(cls, version, data):
    """The primitive of checked data whose children are (version, data)."""
    data = dict(data)
    for name, child_cls in cls.CHILDREN.items():
        data[name] = [_repack_tree(child_cls, *child)
                      for child in data[name]]
    return {NAME_KEY: cls.obj_name(),
            NAMESPACE_KEY: cls.OBJ_PROJECT_NAMESPACE,
            VERSION_KEY: version,
            DATA_KEY: data}


# -- type checks, derived from each class's ovo fields -----------------

def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    # Finite: infinity and NaN pass or fail comparisons in ways no bound
    # written as a comparison catches.
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _typed(test, what):
    def check(value, name):
        _require(test(value), '%s must be %s, got %.40r', name, what, value)
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
             and all(isinstance(k, str) and _is_int(v)
                     for k, v in value.items()),
             '%s must map names to integers', name)
    return value


def _timestamp(value, name):
    _require(isinstance(value, str), '%s must be an ISO 8601 string', name)
    _parse_time(value)
    return value


# Agents send canonical UUIDs; a regex is far cheaper than parsing.
_UUID = re.compile(
    r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}',
    re.IGNORECASE)


def _is_uuid(value):
    return isinstance(value, str) and _UUID.fullmatch(value) is not None


def _parse_time(value):
    """An aware datetime in UTC from ISO 8601 text with a time zone.

    The offset must be whole minutes (what SQL and oslo.utils handle) and
    the moment representable in UTC.
    """
    try:
        parsed = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise exception.MalformedReport(f'unreadable time {value!r:.40}')
    _require(parsed.tzinfo is not None, 'times must carry a time zone')
    offset = parsed.utcoffset()
    _require(offset.seconds % 60 == 0 and offset.microseconds == 0,
             'time zone offsets are whole minutes, got %s', offset)
    try:
        return parsed.astimezone(datetime.timezone.utc)
    except OverflowError:
        raise exception.MalformedReport(f'time out of range {value!r:.40}')


def _objects(value, name):
    _require(isinstance(value, list), f'{name} must be a list')
    return value


_CHECKS_BY_FIELD = {
    fields.IntegerField: _typed(_is_int, 'an integer'),
    fields.FloatField: _typed(_is_number, 'a finite number'),
    fields.StringField: _typed(lambda v: isinstance(v, str), 'a string'),
    fields.UUIDField: _typed(_is_uuid, 'a canonical UUID'),
    fields.BooleanField: _typed(lambda v: isinstance(v, bool), 'a boolean'),
    fields.DateTimeField: _timestamp,
    fields.ListOfIntegersField: _list_of(_is_int, 'integers'),
    fields.ListOfStringsField: _list_of(
        lambda v: isinstance(v, str), 'strings'),
    fields.DictOfIntegersField: _dict_of_ints,
    fields.ListOfObjectsField: _objects,
}


def _nullable(check):
    def nullable_check(value, name):
        return None if value is None else check(value, name)
    return nullable_check


@functools.cache
def _checkers(cls):
    checkers = []
    for name, field in cls.fields.items():
        check = _CHECKS_BY_FIELD[type(field)]
        checkers.append((name, _nullable(check) if field.nullable
                         else check))
    return tuple(checkers)


# -- value checks on typed data ----------------------------------------

_COUNT_LIMITS = {'numa_nodes': MAX_NODES, 'nics': MAX_NICS,
                 'instances': MAX_INSTANCES}


def _require(condition, message, *args):
    # The message is formatted only on failure: this runs for every field
    # of thousands of reports a second.
    if not condition:
        raise exception.MalformedReport(message % args if args else message)


def _check_name(value, what):
    _require(value is None or 0 < len(value) <= MAX_NAME_LENGTH,
             '%s must be 1 to %d characters', what, MAX_NAME_LENGTH)


def _check_host(data):
    _check_name(data['host'], 'host')
    _check_name(data['hypervisor_hostname'], 'hypervisor_hostname')
    _check_name(data['agent_version'], 'agent_version')
    _require(0 <= data['seq'] <= MAX_SEQ, 'seq must be 0 to %d', MAX_SEQ)
    _require(0 < data['period'] <= MAX_PERIOD,
             'period must be more than 0 and at most %s s', MAX_PERIOD)
    nodes = [node for _, node in data['numa_nodes']]
    _require(nodes, 'a report has at least one NUMA node')
    node_ids = {node['id'] for node in nodes}
    _require(len(node_ids) == len(nodes), 'NUMA node ids repeat')
    cpu_count = sum(len(node['cpus']) for node in nodes)
    if cpu_count > MAX_CPUS:
        raise exception.OversizedReport(
            f'a report has at most {MAX_CPUS} CPUs, got {cpu_count}')
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
                 or 0 <= nic['speed_mbps'] <= MAX_SPEED_MBPS,
                 'NIC %s: speed must be 0 to %d Mb/s', nic['name'],
                 MAX_SPEED_MBPS)
    uuids = set()
    for _, instance in data['instances']:
        _check_instance(instance, node_ids, host_cpus)
        uuids.add(instance['uuid'].lower())
    _require(len(uuids) == len(data['instances']),
             'an instance appears twice')
    unknown = set(data['enforceable_policies']).difference(
        policy.POLICIES)
    _require(not unknown, 'unknown enforceable policies %s', sorted(unknown))


def _check_node(node, node_count):
    node_id = node['id']
    _require(0 <= node_id <= MAX_NODE_ID, 'NUMA node ids are 0 to %d',
             MAX_NODE_ID)
    _require(0 <= node['memory_total_mb'] <= MAX_MEMORY_MB,
             'node %s: memory must be 0 to %d MB', node_id, MAX_MEMORY_MB)
    _require(0 <= node['memory_free_mb'] <= node['memory_total_mb'],
             'node %s: free memory must be between 0 and the total',
             node_id)
    cpus = node['cpus']
    _require(all(0 <= cpu <= MAX_CPU_ID for cpu in cpus),
             'node %s: CPU ids are 0 to %d', node_id, MAX_CPU_ID)
    _require(len(set(cpus)) == len(cpus), 'node %s: a CPU id repeats',
             node_id)
    _require(0.0 <= node['cpu_load'] <= 1.0,
             'node %s: cpu_load must be between 0.0 and 1.0', node_id)
    distances = node['distances']
    _require(len(distances) == node_count,
             'node %s: the distance row must have one entry per node (%s)',
             node_id, node_count)
    _require(all(0 < d <= MAX_DISTANCE for d in distances),
             'node %s: distances must be 1 to %s', node_id, MAX_DISTANCE)


def _check_instance(instance, known_nodes, host_cpus):
    uuid = instance['uuid']
    requested = instance['requested_policy']
    _require(requested is None or requested in policy.POLICIES,
             'instance %s: unknown requested policy %.40r', uuid, requested)
    applied = instance['applied_policy']
    _require(applied in APPLIED_POLICY_VALUES,
             'instance %s: unknown applied policy %.40r', uuid, applied)
    access = instance['access_class']
    _require(access is None or access in ACCESS_CLASSES,
             'instance %s: unknown access class %.40r', uuid, access)
    _require(0 <= instance['io_rate'] <= MAX_IO_RATE,
             'instance %s: io_rate must be 0 to %s', uuid, MAX_IO_RATE)
    ending = instance['enforcement']
    _require(ending is None or ending in ENFORCEMENT_ENDINGS,
             'instance %s: unknown enforcement ending %.40r', uuid, ending)
    for key, mb in instance['memory_mb_per_node'].items():
        # ASCII digits: int() also reads other scripts' digits, and
        # str.isdigit() admits characters int() refuses.
        _require(key.isascii() and key.isdigit() and int(key) in known_nodes,
                 'instance %s: memory on unknown node %.40r', uuid, key)
        _require(0 <= mb <= MAX_MEMORY_MB,
                 'instance %s: memory must be 0 to %d MB', uuid,
                 MAX_MEMORY_MB)
    vcpu_cpus = instance['vcpu_cpus']
    _require(len(vcpu_cpus) <= MAX_CPUS, 'instance %s: too many vCPUs',
             uuid)
    _require(all(cpu == -1 or cpu in host_cpus for cpu in vcpu_cpus),
             'instance %s: a vCPU runs on a CPU the host lacks', uuid)


def check_time(generated_at, now, max_skew=DEFAULT_MAX_CLOCK_SKEW):
    """Refuse a report dated more than ``max_skew`` s after ``now``.

    Both aware datetimes. Such a report would stay the newest of its host
    until the clocks caught up with it, hiding every genuine one.

    :raises ReportFromTheFuture:
    """
    ahead = (generated_at - now).total_seconds()
    if ahead > max_skew:
        raise exception.ReportFromTheFuture(
            f'report dated {ahead:.0f} s ahead of this clock (at most '
            f'{max_skew:.0f} s allowed: [numa_policy_reports] '
            f'max_clock_skew)')


def supersedes(new, old):
    """Whether report ``new`` replaces ``old`` as a host's latest: pure.

    Each is a (boot_id, seq, generated_at) triple. Within one agent boot
    the sequence decides, whatever the clocks did meanwhile. Across boots
    (or from agents that send no boot id) the later time decides, then
    the sequence; a report from the future never gets that far
    (check_time).
    """
    new_boot, new_seq, new_time = new
    old_boot, old_seq, old_time = old
    if new_boot is not None and new_boot == old_boot:
        return new_seq > old_seq
    return (new_time, new_seq) > (old_time, old_seq)


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)
