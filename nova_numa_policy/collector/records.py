"""Pure conversions between what comes off the bus and database rows.

Nothing here touches the database or the bus: payloads in, checked objects
and plain row dicts out, so every rule is unit tested on its own.
"""

from oslo_utils import timeutils

from nova_numa_policy.collector import actions
from nova_numa_policy.objects import report as report_obj
from nova_numa_policy.objects import wire as report_wire

KIND_REPORT = 'report'
KIND_ACTION = 'action'


def naive_utc(moment):
    """SQL columns hold naive UTC times; convert an aware datetime."""
    return timeutils.normalize_time(moment)


def parse_payload(event_type, payload, max_report_bytes, secrets=()):
    """Read one notification into ``(kind, value)``.

    The reports topic carries HostReports and, under
    :data:`~nova_numa_policy.collector.actions.ACTION_EVENT_TYPE`, agent
    actions; every other event type is read as a HostReport, so the
    collector does not depend on the report's event type name.

    :raises MalformedReport: for a payload that must be dropped.
    """
    if event_type == actions.ACTION_EVENT_TYPE:
        return KIND_ACTION, actions.load_action(payload)
    return KIND_REPORT, report_wire.read_payload(payload, max_report_bytes,
                                                 secrets)


def generated_at(kind, value):
    """When the agent made a checked report or action: aware, in UTC."""
    if kind == KIND_ACTION:
        return value['generated_at']
    return value.generated_at


def boot_id(report):
    """The report's agent boot; None from agents before report 1.1."""
    return report.boot_id if report.obj_attr_is_set('boot_id') else None


def is_newer(row, stored):
    """Whether a host ``row`` supersedes the ``stored`` one.

    The order every consumer uses (report.supersedes): by ``seq`` within
    one agent boot, by time across boots. A row equal to the stored one
    is a redelivery, not newer.
    """
    if stored is None:
        return True
    return report_obj.supersedes(
        (row['boot_id'], row['seq'], row['generated_at']),
        (stored.boot_id, stored.seq, stored.generated_at))


def _node_row(node):
    return {'id': node.id, 'cpus': list(node.cpus),
            'memory_total_mb': node.memory_total_mb,
            'memory_free_mb': node.memory_free_mb,
            'cpu_load': node.cpu_load, 'distances': list(node.distances),
            **_floating_row(node), 'memory_tier': _said(node, 'memory_tier'),
            'demotable_mb': _said(node, 'demotable_mb')}


def _said(obj, name):
    """A nullable field of a checked object; None where it was not sent.

    An agent of an older report version does not send the fields a later
    version added: None, which each such field's readers take as "not
    said".
    """
    return getattr(obj, name) if obj.obj_attr_is_set(name) else None


def _floating_row(node):
    """What guests without dedicated CPUs may use, as the agent said it.

    None from agents before report 1.6, which did not say: readers take
    every CPU then (report.floating_capacity).
    """
    if not node.obj_attr_is_set('floating_cpus'):
        return {'floating_cpus': None, 'floating_load': None}
    cpus = node.floating_cpus
    return {'floating_cpus': None if cpus is None else list(cpus),
            'floating_load': node.floating_load}


def _nic_row(nic):
    return {'name': nic.name, 'numa_node': nic.numa_node,
            'speed_mbps': nic.speed_mbps, 'physnet': nic.physnet,
            'bridge': nic.bridge, **_irq_row(nic)}


def _irq_row(nic):
    """The NIC's vectors, where they go and why, as the agent said it.

    Nothing from agents before report 1.7, which did not say.
    """
    said = {name: getattr(nic, name) if nic.obj_attr_is_set(name)
            else default for name, default in
            (('irqs', []), ('irq_cpus', []), ('irq_steering', None))}
    return {'irqs': list(said['irqs']), 'irq_cpus': list(said['irq_cpus']),
            'irq_steering': said['irq_steering']}


def host_row(report, received_at):
    """The ``numa_hosts`` row of a host's latest report."""
    return {
        'host': report.host,
        'hypervisor_hostname': report.hypervisor_hostname,
        'agent_version': report.agent_version,
        'boot_id': boot_id(report),
        'seq': report.seq,
        'generated_at': naive_utc(report.generated_at),
        'received_at': naive_utc(received_at),
        'period': report.period,
        'numa_nodes': [_node_row(node) for node in report.numa_nodes],
        'nics': [_nic_row(nic) for nic in report.nics],
        'enforceable_policies': list(report.enforceable_policies),
        'instance_count': len(report.instances),
        # None before report 1.8, or from a kernel that does not say.
        'memory_demotion': _said(report, 'memory_demotion'),
    }


def history_row(report, received_at):
    """The ``numa_reports`` row: identity plus the full wire primitive."""
    return {
        'host': report.host,
        'seq': report.seq,
        'generated_at': naive_utc(report.generated_at),
        'received_at': naive_utc(received_at),
        'payload': report_wire.dump_report(report),
    }


def instance_rows(report):
    """The ``numa_instances`` rows a report describes, keyed by uuid."""
    generated_at = naive_utc(report.generated_at)
    return {
        instance.uuid: {
            'uuid': instance.uuid,
            'host': report.host,
            'requested_policy': instance.requested_policy,
            'applied_policy': instance.applied_policy,
            'memory_mb_per_node': dict(instance.memory_mb_per_node),
            'vcpu_cpus': list(instance.vcpu_cpus),
            'io_rate': instance.io_rate,
            'io_intensive': instance.io_intensive,
            'access_class': instance.access_class,
            'generated_at': generated_at,
        }
        for instance in report.instances
    }


def action_row(action, received_at):
    """The ``numa_actions`` row of a checked action dict."""
    row = dict(action)
    row['generated_at'] = naive_utc(action['generated_at'])
    row['received_at'] = naive_utc(received_at)
    return row
