"""HostReports of given topologies, for scheduler tests.

tests/report_factory.py's, a fresh object per call. A node is
``(cpus, load, free_mb)``, or
``(cpus, load, free_mb, floating, floating_load)`` when nova gives
guests without dedicated CPUs only its first ``floating`` CPUs, whose
load is ``floating_load`` (the first form: the agent does not say, as
before report 1.6), or ``(cpus, load, free_mb, floating, floating_load,
memory_tier)`` for a node in a lower memory tier (a rank above 0;
``floating`` None: not said), and ``(..., memory_tier, demotable_mb)``
for a node whose tiering loop says what a lower tier may take off it. A
NIC is ``(numa_node, physnet)``.
"""

import datetime

from nova_numa_policy.objects import wire as report_wire
from nova_numa_policy.scheduling import summary as summary_mod
from tests import report_factory

TOTAL_MB = 65536
ALL_POLICIES = ('first-touch', 'interleave', 'home', 'first-touch+carrefour',
                'interleave+carrefour', 'auto')
NOT_SAID = report_factory.NOT_SAID
# A node as an agent before report 1.6 gives it.
NODE_SAYS_NO_FLOATING = dict(floating_cpus=NOT_SAID, floating_load=NOT_SAID)


def _node(node_id, count, first_cpu, cpus, load, free_mb, floating=None,
          floating_load=None, memory_tier=0, demotable_mb=None):
    ids = list(range(first_cpu, first_cpu + cpus))
    said = {} if floating is None else dict(
        floating_cpus=ids[:floating],
        floating_load=floating_load if floating else None)
    return report_factory.make_node(
        node_id, count, cpus=ids,
        memory_total_mb=max(TOTAL_MB, free_mb), memory_free_mb=free_mb,
        cpu_load=load, memory_tier=memory_tier, demotable_mb=demotable_mb,
        **{**NODE_SAYS_NO_FLOATING, **said})


def make_report(host='compute1', nodename=None, nodes=((8, 0.1, 32768),) * 2,
                nics=((0, 'physnet1'),), enforceable=ALL_POLICIES,
                generated_at=None, seq=1, instances=(), boot_id=None):
    nodes_out, first = [], 0
    for node_id, node in enumerate(nodes):
        nodes_out.append(_node(node_id, len(nodes), first, *node))
        first += node[0]
    return report_factory.make_report(
        host=host, hypervisor_hostname=nodename or host, seq=seq,
        boot_id=boot_id, generated_at=generated_at or datetime.datetime.now(
            datetime.timezone.utc),
        period=60.0, numa_nodes=nodes_out,
        nics=[report_factory.make_nic(f'eth{i}', node, speed_mbps=40000,
                                      physnet=physnet)
              for i, (node, physnet) in enumerate(nics)],
        instances=list(instances), enforceable_policies=list(enforceable),
        locality_signal=NOT_SAID, measurements=NOT_SAID)


def make_instance(uuid, memory_mb_per_node, io_rate=0.0):
    return report_factory.make_instance(
        uuid, requested_policy=None, applied_policy='none',
        memory_mb_per_node=memory_mb_per_node, vcpu_cpus=[],
        io_rate=io_rate, access_class=None, enforcement=NOT_SAID,
        cpu_wait=NOT_SAID)


def make_payload(version=None, **kwargs):
    """A report's wire primitive; ``version``: as an agent pinned to it."""
    return report_wire.dump_report(make_report(**kwargs),
                                   target_version=version)


def make_summary(io_rate=500.0, version=None, **kwargs):
    return summary_mod.summarize(
        report_wire.load_report_data(make_payload(version, **kwargs)),
        io_rate)
