"""The OpenAPI 3.0 description of ``/v1``, served at /v1/openapi.json.

``doc/source/openapi.json`` is a copy rendered with the default options; a
unit test fails when the two differ, and the fuzz test drives the API from
this very document, so it cannot drift from the code.
"""

import functools

from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import tiers
from nova_numa_policy.rest import validation

DEFAULT_MAX_LIMIT = 1000
_NAME = {'type': 'string', 'minLength': 1,
         'maxLength': validation.MAX_NAME_LENGTH,
         'pattern': validation.NAME_PATTERN}
_UUID = {'type': 'string', 'format': 'uuid'}
_TIME = {'type': 'string', 'format': 'date-time'}
_NULLABLE_STRING = {'type': 'string', 'nullable': True}
_INTS = {'type': 'array', 'items': {'type': 'integer'}}


def _ref(name):
    return {'$ref': f'#/components/schemas/{name}'}


def _object(properties, additional=False):
    return {'type': 'object', 'required': sorted(properties),
            'properties': properties, 'additionalProperties': additional}


def _listing(key, item):
    return _object({key: {'type': 'array', 'items': _ref(item)},
                    'links': {'type': 'array', 'items': _ref('Link')}})


SCHEMAS = {
    'Error': _object({'error': _object({
        'code': {'type': 'integer'}, 'title': {'type': 'string'},
        'message': {'type': 'string'}})}),
    'Link': _object({'rel': {'type': 'string'},
                     'href': {'type': 'string'}}),
    'HostSummary': _object({
        'host': _NAME, 'hypervisor_hostname': {'type': 'string'},
        'agent_version': {'type': 'string'},
        'seq': {'type': 'integer', 'minimum': 0},
        'generated_at': _TIME, 'received_at': _TIME,
        'period': {'type': 'number'},
        'node_count': {'type': 'integer', 'minimum': 1},
        'instance_count': {'type': 'integer', 'minimum': 0},
        'enforceable_policies': {'type': 'array',
                                 'items': {'type': 'string'}},
        'report_age': {
            'type': 'number',
            'description': 'Seconds since the last report was generated, '
            'by this API\'s clock.'},
        'report_fresh': {
            'type': 'boolean',
            'description': 'Whether report_age is within '
            '[numa_policy_scheduler] report_ttl: false means the '
            'scheduler treats the host as having no agent '
            '(no_report_mode decides what policy flavors get there).'}},
        # HostDetail extends it through allOf.
        additional=True),
    'NumaNode': _object({
        'id': {'type': 'integer', 'minimum': 0}, 'cpus': _INTS,
        'cpu_load': {'type': 'number', 'minimum': 0, 'maximum': 1},
        'floating_cpus': dict(
            _INTS, description="The node's CPUs guests without dedicated "
            "CPUs may use, as nova's CPU options on the host give them: "
            "the capacity the scheduler counts. Every CPU of the node "
            "when its agent does not say (before report 1.6); empty when "
            "all are dedicated to pinned guests."),
        'floating_load': {
            'type': 'number', 'minimum': 0, 'maximum': 1, 'nullable': True,
            'description': 'Busy fraction of floating_cpus, the load the '
            'scheduler judges; cpu_load when the agent does not say, null '
            'when floating_cpus is empty.'},
        'memory_total_mb': {'type': 'integer'},
        'memory_free_mb': {'type': 'integer'},
        'memory_tier': {
            'type': 'integer', 'minimum': 0, 'nullable': True,
            'description': "The rank of the kernel's memory tier that "
            "holds the node's memory among the host's tiers: 0 the "
            'fastest, 1 the next. Null when its agent does not say '
            '(before report 1.8, a kernel without memory tiers, a node '
            'in no tier), which means the top tier.'},
        'demotable_mb': {
            'type': 'integer', 'minimum': 0, 'nullable': True,
            'description': "Of the node's memory in use, the MB its "
            "agent's tiering loop would move to a lower tier if the node "
            "ran short: tiered guests' pages above their top-tier share "
            'not written over the last period. The scheduler counts it '
            'as top-tier room, as far as the lower tier has room for it. '
            'Null when the agent does not say (before report 1.9, a '
            'lower-tier node, a host whose tiering loop does not act), '
            'which means 0.'},
        'instance_memory_mb': {'type': 'integer',
                               'description': 'Resident memory of the '
                               "host's instances on this node."},
        'distances': _INTS,
        'nics': {'type': 'array', 'items': {'type': 'string'},
                 'description': 'Names of the NICs attached to this node.'}}),
    'Nic': _object({
        'name': {'type': 'string'},
        'numa_node': {'type': 'integer', 'nullable': True},
        'speed_mbps': {'type': 'integer', 'nullable': True},
        'physnet': _NULLABLE_STRING, 'bridge': _NULLABLE_STRING,
        'irqs': dict(_INTS, description="The NIC's interrupt vectors; "
                     'empty when its agent does not say (before report '
                     '1.7) or its host cannot steer them.'),
        'irq_cpus': dict(_INTS, description='The host CPUs those vectors '
                         'are delivered to now.'),
        'irq_steering': dict(
            _NULLABLE_STRING, description='Why the vectors are there, in '
            "the iopath loop's words; null while that loop does not "
            'act on the host.')}),
    'Instance': _object({
        'uuid': _UUID, 'host': _NAME,
        'requested_policy': _NULLABLE_STRING,
        'applied_policy': {'type': 'string'},
        'policy_applied': {
            'type': 'boolean', 'nullable': True,
            'description': 'Whether the applied policy is the requested '
            'one (any for auto); null when none was requested.'},
        'memory_mb_per_node': {
            'type': 'object', 'additionalProperties': {'type': 'integer'},
            'description': 'Resident memory in MiB by host node id.'},
        'vcpu_cpus': _INTS, 'io_rate': {'type': 'number'},
        'io_intensive': {'type': 'boolean'},
        'access_class': _NULLABLE_STRING, 'generated_at': _TIME}),
    'Action': _object({
        'id': {'type': 'integer'}, 'host': _NAME,
        'seq': {'type': 'integer'}, 'generated_at': _TIME,
        'received_at': _TIME,
        'instance_uuid': dict(_UUID, nullable=True),
        'kind': {'type': 'string'},
        'outcome': {'type': 'string',
                    'enum': ['applied', 'failed', 'dry_run']},
        'reason': {'type': 'string'},
        'details': {'type': 'object'}}),
    'ReportSummary': _object({'seq': {'type': 'integer'},
                              'generated_at': _TIME, 'received_at': _TIME}),
}
_NUMBER_OR_NULL = {'type': 'number', 'nullable': True}
SCHEMAS['FilterVerdict'] = _object({
    'name': {'type': 'string'}, 'passed': {'type': 'boolean'},
    'reason': {'type': 'string'},
    'node': {'type': 'integer', 'nullable': True,
             'description': 'The host node the verdict is about, if any.'},
    'numbers': {'type': 'object',
                'description': 'The figures the verdict was drawn from.'}})
SCHEMAS['HostExplanation'] = _object({
    'host': _NAME, 'hypervisor_hostname': {'type': 'string'},
    'report_age': dict(_NUMBER_OR_NULL, description='Seconds since the '
                       'latest report was generated.'),
    'locality_signal': {'type': 'string', 'nullable': True,
                        'description': 'The memory-locality signal the '
                        'host measures (access-counters, hinting-faults, '
                        'memory-bandwidth, hardware-samples); '
                        'null when none. Carrefour and auto need one.'},
    'measurements': {'type': 'array', 'items': {'type': 'string'},
                     'description': 'Everything the host measures of its '
                     'guests: its locality signal, cpu-wait (run-queue '
                     'delay), interface-traffic; empty without a report.'},
    'passed': {'type': 'boolean',
               'description': 'Whether the host passes every filter.'},
    'filters': {'type': 'array', 'items': _ref('FilterVerdict')},
    'weights': {'type': 'object', 'additionalProperties': _NUMBER_OR_NULL,
                'description': 'Raw weight by weigher, before nova '
                'normalises it; null when the weigher does not weigh this '
                'request.'}})
SCHEMAS['Explanation'] = _object({
    'request': _object({
        'vcpus': {'type': 'integer'}, 'memory_mb': {'type': 'integer'},
        'extra_specs': {'type': 'object',
                        'additionalProperties': {'type': 'string'}},
        'physnets': {'type': 'array', 'items': {'type': 'string'}}}),
    'settings': _object({
        'report_ttl': {'type': 'number'},
        'no_report_mode': {'type': 'string',
                           'enum': ['strict', 'permissive']},
        'node_load_threshold': {'type': 'number'},
        'weigh_plain_flavors': {'type': 'boolean'},
        'expected_vcpu_load': {'type': 'number'},
        'filter_plain_flavors': {'type': 'boolean'}}),
    'hosts': {'type': 'array', 'items': _ref('HostExplanation')}})
SCHEMAS['HostDetail'] = {'allOf': [_ref('HostSummary'), {
    'type': 'object',
    'required': ['numa_nodes', 'nics', 'instances', 'memory_demotion'],
    'properties': {
        'numa_nodes': {'type': 'array', 'items': _ref('NumaNode')},
        'nics': {'type': 'array', 'items': _ref('Nic')},
        'instances': {'type': 'array', 'items': _ref('Instance')},
        'memory_demotion': {
            'type': 'boolean', 'nullable': True,
            'description': "Whether the host's kernel demotes pages to a "
            'lower memory tier during reclaim (its demotion_enabled); '
            'null when its agent does not say (before report 1.8, or a '
            'kernel before Linux 6.1).'}}}]}
SCHEMAS['HostList'] = _listing('hosts', 'HostSummary')
SCHEMAS['InstanceList'] = _listing('instances', 'Instance')
SCHEMAS['ActionList'] = _listing('actions', 'Action')


def _error(description):
    return {'description': description,
            'content': {'application/json': {'schema': _ref('Error')}}}


ERRORS = {
    '400': _error('Bad input; the message says which parameter and why.'),
    '401': _error('No valid token (keystone authentication).'),
    '403': _error('The policy does not allow the call (admin only by '
                  'default).'),
    '503': _error('The collector database is unavailable.'),
}


def _param(name, where, schema, description, required=False):
    return {'name': name, 'in': where, 'required': required or where ==
            'path', 'schema': schema, 'description': description}


def _operation(op_id, summary, schema, params, not_found=False,
               token_auth=True):
    responses = {'200': {'description': 'OK', 'content': {
        'application/json': {'schema': schema}}}}
    responses.update(ERRORS)
    if not_found:
        responses['404'] = _error('No such host or instance.')
    operation = {'operationId': op_id, 'summary': summary,
                 'parameters': params, 'responses': responses}
    if token_auth:
        operation['security'] = [{'token': []}]
    return {'get': operation}


def _explain_params():
    return [
        _param('vcpus', 'query', {'type': 'integer', 'minimum': 1,
                                  'maximum': validation.MAX_VCPUS},
               "The flavor's vCPUs.", required=True),
        _param('memory_mb', 'query',
               {'type': 'integer', 'minimum': 1,
                'maximum': validation.MAX_MEMORY_MB},
               "The flavor's memory in MiB.", required=True),
        {'name': 'extra_specs', 'in': 'query', 'required': False,
         'description': "The flavor's extra specs as a JSON object of "
         'strings, e.g. {"hw:numa_policy": "interleave"}; an unknown '
         'hw:numa_* value is refused with 400 naming the allowed ones.',
         'content': {'application/json': {'schema': {
             'type': 'object', 'additionalProperties': {'type': 'string'},
             'properties': {
                 policy.POLICY_KEY: {'enum': list(policy.POLICY_VALUES)},
                 policy.NIC_LOCALITY_KEY: {
                     'enum': list(policy.NIC_LOCALITY_VALUES)},
                 policy.IO_INTENSITY_KEY: {
                     'enum': list(policy.IO_INTENSITY_VALUES)},
                 tiers.MEMORY_TIERS_KEY: {
                     'enum': list(tiers.TIER_MODE_VALUES)},
                 tiers.TOP_TIER_PERCENT_KEY: {
                     'type': 'string', 'pattern': '^[0-9]{1,3}$'}}}}}},
        dict(_param('physnet', 'query', {'type': 'array', 'items': _NAME},
                    'A physical network the instance has a port on; '
                    'repeat for several.'),
             style='form', explode=True),
    ]


def document(max_limit=DEFAULT_MAX_LIMIT, token_auth=True):
    """The OpenAPI document, with ``limit`` bounded by ``max_limit``.

    ``token_auth=False`` describes a ``noauth`` deployment, which takes no
    token: the description says so rather than promise a 401.
    """
    op = functools.partial(_operation, token_auth=token_auth)
    limit = _param('limit', 'query', {'type': 'integer', 'minimum': 1,
                                      'maximum': max_limit},
                   'Items per page (default [numa_policy_api] '
                   'default_limit).')
    host_filter = _param('host', 'query', _NAME, 'Only this host.')
    host_path = _param('host', 'path', _NAME, 'Compute host name.')
    return {
        'openapi': '3.0.3',
        'info': {'title': 'nova-numa-policy collector API', 'version': '1.0',
                 'description': 'Read-only view of the NUMA reports and '
                 'actions of the nova-numa-policy agents.'},
        'paths': {
            '/v1/hosts': op(
                'listHosts', 'List hosts, by name.', _ref('HostList'),
                [limit, _param('marker', 'query', _NAME,
                               'Last host name of the previous page.')]),
            '/v1/hosts/{host}': op(
                'showHost', 'A host with nodes, NICs and instances.',
                _object({'host': _ref('HostDetail')}), [host_path],
                not_found=True),
            '/v1/hosts/{host}/reports': op(
                'listHostReports', "A host's report history, newest first.",
                _object({'reports': {'type': 'array',
                                     'items': _ref('ReportSummary')}}),
                [host_path, dict(limit, schema=dict(limit['schema'],
                                                    maximum=1000))],
                not_found=True),
            '/v1/instances': op(
                'listInstances', 'List instances, by uuid.',
                _ref('InstanceList'),
                [limit, _param('marker', 'query', _UUID,
                               'Last uuid of the previous page.'),
                 host_filter]),
            '/v1/instances/{uuid}': op(
                'showInstance', 'An instance: requested and applied '
                'policy, memory per node.',
                _object({'instance': _ref('Instance')}),
                [_param('uuid', 'path', _UUID, 'Instance uuid.')],
                not_found=True),
            '/v1/actions': op(
                'listActions', 'Agent actions, newest first.',
                _ref('ActionList'),
                [limit, _param('marker', 'query',
                               {'type': 'integer', 'minimum': 1},
                               'Last action id of the previous page.'),
                 host_filter, _param('instance_uuid', 'query', _UUID,
                                     'Only actions on this instance.')]),
            '/v1/explain': op(
                'explain', 'Why each reporting host passes or fails the '
                'scheduler filters for a flavor, and its weights.',
                _ref('Explanation'), _explain_params()),
        },
        'components': dict(
            {'schemas': SCHEMAS},
            **({'securitySchemes': {'token': {
                'type': 'apiKey', 'in': 'header', 'name': 'X-Auth-Token'}}}
               if token_auth else {})),
    }


if __name__ == '__main__':
    # Renders the copy kept in doc/source/openapi.json.
    import json
    print(json.dumps(document(), indent=2, sort_keys=True))
