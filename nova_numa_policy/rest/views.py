"""Pure conversions of stored rows into API bodies."""

import datetime
import urllib.parse

from nova_numa_policy.conf import scheduler as scheduler_conf
from nova_numa_policy.objects import report as report_obj


def _time(moment):
    """Stored times are naive UTC; the API says so explicitly."""
    return moment.replace(tzinfo=datetime.timezone.utc).isoformat()


def _dated(row, *names):
    """``names`` copied from a row, then when it was made and received."""
    body = {name: row[name] for name in names}
    body['generated_at'] = _time(row['generated_at'])
    body['received_at'] = _time(row['received_at'])
    return body


def policy_applied(requested, applied):
    """Whether the agent made true what the instance asked for.

    None when the instance asked for nothing; ``auto`` is satisfied by any
    concrete policy the agent chose.
    """
    if requested is None:
        return None
    if requested == 'auto':
        return applied != report_obj.APPLIED_NONE
    return requested == applied


def report_age(row, now):
    """Seconds since the host's last report was made, at ``now`` (epoch)."""
    made = row['generated_at'].replace(tzinfo=datetime.timezone.utc)
    return round(now - made.timestamp(), 1)


def host_summary(row, now, ttl):
    """A host's last report in brief, and whether the scheduler heeds it.

    ``report_fresh`` is the scheduler's own test (report_ttl against the
    report's generation time): a host whose report is not fresh is one
    the scheduler treats as having no agent, so an operator's monitoring
    watches this field.
    """
    body = _dated(row, 'host', 'hypervisor_hostname', 'agent_version',
                  'seq', 'period', 'instance_count')
    age = report_age(row, now)
    body.update(node_count=len(row['numa_nodes']),
                enforceable_policies=list(row['enforceable_policies']),
                report_age=age, report_fresh=age <= ttl)
    return body


def _instance_memory_per_node(instances):
    totals = {}
    for instance in instances:
        for node, mb in instance['memory_mb_per_node'].items():
            totals[int(node)] = totals.get(int(node), 0) + mb
    return totals


def _node(node, nics, instance_mb):
    floating_cpus, floating_load = report_obj.floating_capacity(node)
    return {
        'id': node['id'],
        'cpus': node['cpus'],
        'cpu_load': node['cpu_load'],
        # What the scheduler counts for guests without dedicated CPUs.
        'floating_cpus': list(floating_cpus),
        'floating_load': floating_load,
        'memory_total_mb': node['memory_total_mb'],
        'memory_free_mb': node['memory_free_mb'],
        # As the agent said it: null where it does not (rows stored
        # before report 1.8 included), which consumers read as the top
        # tier; the API does not make a 0 of it that the host never said.
        'memory_tier': node.get('memory_tier'),
        # Null where not said (before report 1.9, a lower-tier node, a
        # host whose tiering loop does not act), read as 0.
        'demotable_mb': node.get('demotable_mb'),
        'instance_memory_mb': instance_mb.get(node['id'], 0),
        'distances': node['distances'],
        'nics': [nic['name'] for nic in nics
                 if nic['numa_node'] == node['id']],
    }


def _nic(nic):
    """A NIC as stored, with its vectors said even where it was not.

    Rows stored from reports before 1.7 have no vectors: none known.
    """
    return {'irqs': [], 'irq_cpus': [], 'irq_steering': None, **nic}


def host_detail(row, now, ttl):
    """A host's summary plus its nodes, NICs and instances."""
    body = host_summary(row, now, ttl)
    instance_mb = _instance_memory_per_node(row['instances'])
    body['numa_nodes'] = [_node(node, row['nics'], instance_mb)
                          for node in row['numa_nodes']]
    body['nics'] = [_nic(nic) for nic in row['nics']]
    body['instances'] = [instance(i) for i in row['instances']]
    body['memory_demotion'] = row.get('memory_demotion')
    return body


def instance(row):
    return {
        'uuid': row['uuid'],
        'host': row['host'],
        'requested_policy': row['requested_policy'],
        'applied_policy': row['applied_policy'],
        'policy_applied': policy_applied(row['requested_policy'],
                                         row['applied_policy']),
        'memory_mb_per_node': dict(row['memory_mb_per_node']),
        'vcpu_cpus': list(row['vcpu_cpus']),
        'io_rate': row['io_rate'],
        'io_intensive': row['io_intensive'],
        'access_class': row['access_class'],
        'generated_at': _time(row['generated_at']),
    }


def action(row):
    body = _dated(row, 'id', 'host', 'seq', 'instance_uuid', 'kind',
                  'outcome', 'reason')
    body['details'] = dict(row['details'])
    return body


def report_summary(row):
    return _dated(row, 'seq')


def page(key, items, limit, url, params, marker_of):
    """A listing body with a ``next`` link when the page is full.

    :param url: the request's URL without query string.
    :param params: the request's validated filters, without limit/marker.
    :param marker_of: returns the marker of an item.
    """
    body = {key: items, 'links': []}
    if len(items) == limit:
        query = dict(params, limit=limit, marker=marker_of(items[-1]))
        body['links'].append({
            'rel': 'next',
            'href': f'{url}?{urllib.parse.urlencode(sorted(query.items()))}',
        })
    return body


def _verdict(name, verdict):
    return {'name': name, 'passed': verdict.passed,
            'reason': verdict.reason, 'node': verdict.node,
            'numbers': dict(verdict.numbers)}


def host_explanation(explanation):
    """One host of the explain call: each filter's verdict, each weight."""
    return {
        'host': explanation.host,
        'hypervisor_hostname': explanation.nodename,
        'report_age': explanation.report_age,
        'locality_signal': explanation.locality_signal,
        'measurements': list(explanation.measurements),
        'passed': explanation.passed,
        'filters': [_verdict(name, verdict)
                    for name, verdict in explanation.verdicts.items()],
        'weights': dict(explanation.weights),
    }


def explanation(flavor, physnets, settings, explanations):
    """The explain call's body: the question, the settings, every host."""
    return {
        'request': {'vcpus': flavor.vcpus, 'memory_mb': flavor.memory_mb,
                    'extra_specs': dict(flavor.extra_specs),
                    'physnets': list(physnets)},
        'settings': {'report_ttl': settings.ttl,
                     'no_report_mode': scheduler_conf.STRICT
                     if settings.strict else scheduler_conf.PERMISSIVE,
                     'node_load_threshold': settings.threshold,
                     'weigh_plain_flavors': settings.weigh_plain_flavors,
                     'expected_vcpu_load': settings.vcpu_load,
                     'filter_plain_flavors': settings.filter_plain_flavors},
        'hosts': [host_explanation(e) for e in explanations],
    }
