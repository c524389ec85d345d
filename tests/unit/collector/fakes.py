"""Factories of reports and actions shared by collector and API tests."""

import datetime

from nova_numa_policy.objects import report as report_obj
from nova_numa_policy.objects import wire as report_wire

BASE_TIME = datetime.datetime(2025, 1, 31, 12, 0, tzinfo=datetime.timezone.utc)
UUID_A = '11111111-1111-4111-8111-111111111111'
UUID_B = '22222222-2222-4222-8222-222222222222'


def at(seconds):
    return BASE_TIME + datetime.timedelta(seconds=seconds)


def make_instance(uuid=UUID_A, requested='interleave', applied='interleave',
                  memory=None):
    return report_obj.NumaInstanceReport(
        uuid=uuid, requested_policy=requested, applied_policy=applied,
        memory_mb_per_node=memory if memory is not None else {'0': 512,
                                                              '1': 512},
        vcpu_cpus=[0, 8], io_rate=10.0, io_intensive=False,
        access_class='moderate')


def make_report(host='compute-1', seq=1, generated_at=None, instances=None,
                free_mb=(30000, 31000),
                enforceable=('first-touch', 'interleave'),
                locality_signal=None, floating=None):
    """A report of two nodes of eight CPUs.

    ``floating``: {node: (CPUs, load)} nova gives guests without
    dedicated CPUs; None: the agent does not say (before report 1.6).
    """
    said = {node: dict(floating_cpus=cpus, floating_load=load)
            for node, (cpus, load) in (floating or {}).items()}
    nodes = [
        report_obj.NumaNodeReport(
            id=node, cpus=list(range(node * 8, node * 8 + 8)),
            memory_total_mb=32768, memory_free_mb=free,
            cpu_load=0.25 * (node + 1), distances=[10, 21] if node == 0
            else [21, 10], **said.get(node, {}))
        for node, free in enumerate(free_mb)]
    return report_obj.NumaHostReport(
        host=host, hypervisor_hostname=f'{host}.example.org',
        agent_version='1.0.0', seq=seq,
        generated_at=generated_at or at(seq), period=60.0,
        numa_nodes=nodes,
        nics=[report_obj.NumaNicReport(name='eth0', numa_node=1,
                                       speed_mbps=25000, physnet='physnet1',
                                       bridge=None)],
        instances=[make_instance()] if instances is None else instances,
        enforceable_policies=list(enforceable),
        locality_signal=locality_signal)


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
