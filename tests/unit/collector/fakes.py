"""Reports and actions for the collector's and the API's tests.

The reports are tests/report_factory.py's, with these suites' defaults.
"""

import datetime

from nova_numa_policy.objects import wire as report_wire
from tests import report_factory

BASE_TIME = datetime.datetime(2025, 1, 31, 12, 0, tzinfo=datetime.timezone.utc)
UUID_A = '11111111-1111-4111-8111-111111111111'
UUID_B = '22222222-2222-4222-8222-222222222222'
NOT_SAID = report_factory.NOT_SAID


def at(seconds):
    return BASE_TIME + datetime.timedelta(seconds=seconds)


def make_instance(uuid=UUID_A, requested='interleave', applied='interleave',
                  memory=None):
    return report_factory.make_instance(
        uuid, requested_policy=requested, applied_policy=applied,
        memory_mb_per_node=memory if memory is not None else {'0': 512,
                                                              '1': 512},
        vcpu_cpus=[0, 8], io_rate=10.0, enforcement=NOT_SAID,
        cpu_wait=NOT_SAID)


def make_report(host='compute-1', seq=1, generated_at=None, instances=None,
                free_mb=(30000, 31000),
                enforceable=('first-touch', 'interleave'),
                locality_signal=None, floating=None, tiers=None,
                demotion=NOT_SAID):
    """A report of nodes of eight CPUs, one a ``free_mb``, at ``at(seq)``.

    ``floating``: {node: (CPUs, load)} nova gives guests without
    dedicated CPUs; None: the agent does not say (before report 1.6).
    ``tiers``: {node: the rank of its memory tier}, ``demotion``: the
    host's memory_demotion; by default the agent does not say (before
    report 1.8).
    """
    unsaid = (NOT_SAID,) * 2
    floating = floating or {}
    tiers = tiers or {}
    nodes = []
    for node, free in enumerate(free_mb):
        cpus, load = floating.get(node, unsaid)
        nodes.append(report_factory.make_node(
            node, len(free_mb), cpus=list(range(node * 8, node * 8 + 8)),
            memory_total_mb=32768, memory_free_mb=free,
            cpu_load=0.25 * (node + 1), floating_cpus=cpus,
            floating_load=load, memory_tier=tiers.get(node, NOT_SAID)))
    return report_factory.make_report(
        host=host, hypervisor_hostname=f'{host}.example.org', seq=seq,
        boot_id=NOT_SAID, generated_at=generated_at or at(seq),
        period=60.0,
        numa_nodes=nodes, nics=[report_factory.make_nic('eth0', 1)],
        instances=[make_instance()] if instances is None else instances,
        enforceable_policies=list(enforceable),
        locality_signal=locality_signal, measurements=NOT_SAID,
        memory_demotion=demotion)


def make_payload(**kwargs):
    return report_wire.dump_report(make_report(**kwargs))


def make_action_payload(host='compute-1', seq=1, generated_at=None,
                        **overrides):
    payload = {
        'version': '1.0', 'host': host, 'seq': seq,
        'generated_at': (generated_at or at(seq)).isoformat(),
        'instance_uuid': UUID_A, 'kind': 'move_pages', 'outcome': 'applied',
        'reason': 'node 0 memory controller at 92 %, node 1 at 31 %',
        'details': {'source_node': 0, 'target_node': 1, 'pages': 512},
    }
    payload.update(overrides)
    return payload
