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

import datetime

from oslo_serialization import jsonutils
from oslo_utils import uuidutils
from oslo_utils import versionutils
from oslo_versionedobjects import exception as ovo_exc
from oslo_versionedobjects import fields

from nova_numa_policy import exception
from nova_numa_policy.objects import base
from nova_numa_policy import policy

MAX_NODES = 64
MAX_CPUS = 4096
MAX_NICS = 64
MAX_INSTANCES = 1024
MAX_NAME_LENGTH = 255
MAX_DISTANCE = 255

# What an instance's applied policy may say besides a concrete policy:
# nothing applied (yet), for instance while the agent has not seen it.
APPLIED_NONE = 'none'
APPLIED_POLICY_VALUES = tuple(
    value for value, spec in policy.POLICIES.items() if not spec.auto
) + (APPLIED_NONE,)
ACCESS_CLASSES = ('low', 'moderate', 'high')


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
    VERSION = '1.0'

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
    }

    DEFAULTS = {'requested_policy': None, 'applied_policy': APPLIED_NONE,
                'memory_mb_per_node': {}, 'vcpu_cpus': [], 'io_rate': 0.0,
                'io_intensive': False, 'access_class': None}


@base.NumaPolicyObjectRegistry.register
class NumaHostReport(base.NumaPolicyObject):
    """Everything one agent says about its compute node in one period."""

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'host': fields.StringField(),
        'hypervisor_hostname': fields.StringField(),
        'agent_version': fields.StringField(),
        # Increases with every report of one agent process; with
        # generated_at it orders reports and makes redelivery idempotent.
        'seq': fields.IntegerField(),
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
        'instances': [('1.0', '1.0')],
    }

    DEFAULTS = {'nics': [], 'instances': [], 'enforceable_policies': []}

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


def report_from_json(text, max_bytes):
    """Read a report from JSON text no longer than ``max_bytes``."""
    if len(text) > max_bytes:
        raise exception.MalformedReport(
            f'report of {len(text)} bytes exceeds the limit of {max_bytes}')
    try:
        primitive = jsonutils.loads(text)
    except ValueError as exc:
        raise exception.MalformedReport(f'report is not JSON: {exc}')
    return load_report(primitive)


def load_report(primitive, cls=NumaHostReport):
    """Turn a wire primitive into a checked report object.

    :raises MalformedReport: for anything a consumer must not trust.
    """
    version, data = _tolerate_version(primitive, cls)
    try:
        # Hydrate with ``cls`` itself rather than the registry's newest
        # class of that name: a consumer reads as the version it knows.
        report = cls._obj_from_primitive(
            None, version, _repack(cls, version, data))
    except (ValueError, TypeError, KeyError, AttributeError,
            ovo_exc.VersionedObjectsException) as exc:
        raise exception.MalformedReport(
            f'{cls.obj_name()} could not be read: {exc}')
    _fill_defaults(report, cls)
    check_report(report)
    return report


def _primitive_parts(primitive, cls):
    if not isinstance(primitive, dict):
        raise exception.MalformedReport(
            f'{cls.obj_name()} must be an object, got '
            f'{type(primitive).__name__}')
    prefix = cls.OBJ_SERIAL_NAMESPACE
    try:
        name = primitive[f'{prefix}.name']
        namespace = primitive[f'{prefix}.namespace']
        version = primitive[f'{prefix}.version']
        data = primitive[f'{prefix}.data']
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


def _tolerate_version(primitive, cls):
    """Return (version, data) to read, minus fields of a newer minor."""
    version, data = _primitive_parts(primitive, cls)
    try:
        theirs = versionutils.convert_version_to_tuple(version)
    except (ValueError, AttributeError):
        raise exception.MalformedReport(
            f'{cls.obj_name()} has an unreadable version {version!r}')
    ours = versionutils.convert_version_to_tuple(cls.VERSION)
    if theirs[0] != ours[0]:
        raise exception.MalformedReport(
            f'{cls.obj_name()} major version {version} is not supported '
            f'(this consumer reads {ours[0]}.x)')
    newer = theirs > ours
    unknown = set(data) - set(cls.fields)
    if unknown and not newer:
        raise exception.MalformedReport(
            f'{cls.obj_name()} {version} has unknown fields '
            f'{sorted(unknown)}')
    cleaned = {k: v for k, v in data.items() if k in cls.fields}
    for field_name, child_cls in getattr(cls, 'CHILDREN', {}).items():
        if field_name in cleaned:
            children = cleaned[field_name]
            if not isinstance(children, list):
                raise exception.MalformedReport(
                    f'{cls.obj_name()}.{field_name} must be a list')
            cleaned[field_name] = [
                _repack(child_cls, *_tolerate_version(child, child_cls))
                for child in children]
    # Read as our own version once the unknown fields are gone.
    return (cls.VERSION if newer else version), cleaned


def _repack(cls, version, data):
    prefix = cls.OBJ_SERIAL_NAMESPACE
    return {f'{prefix}.name': cls.obj_name(),
            f'{prefix}.namespace': cls.OBJ_PROJECT_NAMESPACE,
            f'{prefix}.version': version,
            f'{prefix}.data': data}


def _fill_defaults(obj, cls):
    for name, default in getattr(cls, 'DEFAULTS', {}).items():
        if not obj.obj_attr_is_set(name):
            setattr(obj, name, default)
    for name, child_cls in getattr(cls, 'CHILDREN', {}).items():
        if obj.obj_attr_is_set(name):
            for child in getattr(obj, name):
                _fill_defaults(child, child_cls)
    obj.obj_reset_changes()


def _require(condition, message):
    if not condition:
        raise exception.MalformedReport(message)


def _check_name(value, what):
    _require(value is None or 0 < len(value) <= MAX_NAME_LENGTH,
             f'{what} must be 1 to {MAX_NAME_LENGTH} characters')


def _check_all_set(obj):
    missing = [name for name in obj.fields if not obj.obj_attr_is_set(name)]
    _require(not missing,
             f'{obj.obj_name()} lacks required fields {sorted(missing)}')


def check_report(report):
    """Check a report's sizes and values; raise MalformedReport if off."""
    _check_all_set(report)
    for name in NumaHostReport.CHILDREN:
        for child in getattr(report, name):
            _check_all_set(child)
    _check_name(report.host, 'host')
    _check_name(report.hypervisor_hostname, 'hypervisor_hostname')
    _require(report.seq >= 0, 'seq must not be negative')
    _require(report.period > 0, 'period must be positive')
    _require(report.generated_at.tzinfo is not None,
             'generated_at must carry a time zone')
    nodes = report.numa_nodes
    _require(0 < len(nodes) <= MAX_NODES,
             f'a report has 1 to {MAX_NODES} NUMA nodes, got {len(nodes)}')
    _require(len(report.nics) <= MAX_NICS,
             f'a report has at most {MAX_NICS} NICs')
    _require(len(report.instances) <= MAX_INSTANCES,
             f'a report has at most {MAX_INSTANCES} instances')
    node_ids = [node.id for node in nodes]
    _require(len(set(node_ids)) == len(node_ids), 'NUMA node ids repeat')
    _require(sum(len(node.cpus) for node in nodes) <= MAX_CPUS,
             f'a report has at most {MAX_CPUS} CPUs')
    for node in nodes:
        _check_node(node, len(nodes))
    known = set(node_ids)
    for nic in report.nics:
        _check_name(nic.name, 'NIC name')
        _require(nic.numa_node is None or nic.numa_node in known,
                 f'NIC {nic.name} is on unknown node {nic.numa_node}')
    for instance in report.instances:
        _check_instance(instance, known)
    unknown = set(report.enforceable_policies) - set(policy.POLICY_VALUES)
    _require(not unknown, f'unknown enforceable policies {sorted(unknown)}')


def _check_node(node, node_count):
    _require(node.id >= 0, 'NUMA node ids are not negative')
    _require(0 <= node.memory_free_mb <= node.memory_total_mb,
             f'node {node.id}: free memory must be between 0 and the total')
    _require(0.0 <= node.cpu_load <= 1.0,
             f'node {node.id}: cpu_load must be between 0.0 and 1.0')
    _require(len(node.distances) == node_count,
             f'node {node.id}: the distance row must have one entry per '
             f'node ({node_count})')
    _require(all(0 < d <= MAX_DISTANCE for d in node.distances),
             f'node {node.id}: distances must be 1 to {MAX_DISTANCE}')


def _check_instance(instance, known_nodes):
    # UUIDField only warns about a malformed value; consumers key on it.
    _require(uuidutils.is_uuid_like(instance.uuid),
             f'instance uuid {instance.uuid!r} is not a UUID')
    _require(instance.requested_policy is None
             or instance.requested_policy in policy.POLICY_VALUES,
             f'instance {instance.uuid}: unknown requested policy '
             f'{instance.requested_policy!r}')
    _require(instance.applied_policy in APPLIED_POLICY_VALUES,
             f'instance {instance.uuid}: unknown applied policy '
             f'{instance.applied_policy!r}')
    _require(instance.access_class is None
             or instance.access_class in ACCESS_CLASSES,
             f'instance {instance.uuid}: unknown access class '
             f'{instance.access_class!r}')
    _require(instance.io_rate >= 0, f'instance {instance.uuid}: negative '
             f'io_rate')
    for key, mb in instance.memory_mb_per_node.items():
        _require(key.isdigit() and int(key) in known_nodes and mb >= 0,
                 f'instance {instance.uuid}: memory on unknown node {key!r}')


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)
