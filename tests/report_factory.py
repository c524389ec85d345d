"""The one factory of HostReports for tests: a fresh object per call.

Each function gives a whole object with plain defaults; a keyword
replaces a field, and :data:`NOT_SAID` leaves one unset, as an agent
of an older report version leaves the fields it does not know. The
collector's and the scheduler's tests keep their suites' shorthands
(tests/unit/collector/fakes.py, tests/unit/scheduler/reports.py) on
top of these functions.
"""

import datetime

from nova_numa_policy.objects import report as report_obj

DEFAULT_UUID = '2d3c1f2e-7f4b-4a7e-9a59-5b7c8d9e0f11'
BOOT_ID = '5e1d0c6a-3b7f-4c29-8d4e-0a1b2c3d4e5f'
# A field left unset: not the same as None, which is said.
NOT_SAID = object()


def _said(values, fields):
    values.update(fields)
    return {name: value for name, value in values.items()
            if value is not NOT_SAID}


def make_node(node_id=0, node_count=2, cpus=None, **fields):
    distances = [10 if other == node_id else 21
                 for other in range(node_count)]
    cpus = cpus if cpus is not None else [2 * node_id, 2 * node_id + 1]
    # nova shares the node's first CPU and dedicates the others.
    values = dict(id=node_id, cpus=cpus,
                  memory_total_mb=16384, memory_free_mb=8192,
                  cpu_load=0.25, distances=distances,
                  floating_cpus=cpus[:1],
                  floating_load=0.5 if cpus else None,
                  # DRAM: the host's top memory tier, and no tiering loop
                  # saying what may leave it.
                  memory_tier=0, demotable_mb=None)
    return report_obj.NumaNodeReport(**_said(values, fields))


def make_nic(name='ens1f0', numa_node=1, **fields):
    values = dict(name=name, numa_node=numa_node, speed_mbps=25000,
                  physnet='physnet1', bridge=None)
    return report_obj.NumaNicReport(**_said(values, fields))


def make_instance(uuid=DEFAULT_UUID, **fields):
    values = dict(uuid=uuid, requested_policy='interleave',
                  applied_policy='interleave',
                  memory_mb_per_node={'0': 1024, '1': 1024},
                  vcpu_cpus=[0, 2], io_rate=120.0, io_intensive=False,
                  access_class='moderate', enforcement='applied',
                  cpu_wait=0.05)
    return report_obj.NumaInstanceReport(**_said(values, fields))


def make_report(node_count=2, **fields):
    values = dict(
        host='compute1', hypervisor_hostname='compute1.example.org',
        agent_version='1.0.0', seq=7, boot_id=BOOT_ID,
        generated_at=datetime.datetime(2026, 11, 22, 8, 0, 0,
                                       tzinfo=datetime.timezone.utc),
        period=5.0,
        numa_nodes=[make_node(n, node_count) for n in range(node_count)],
        nics=[make_nic(
            numa_node=node_count - 1, irqs=[120, 121],
            irq_cpus=[2 * node_count - 2, 2 * node_count - 1],
            irq_steering=f'steered to node {node_count - 1} for 1 '
                         f'I/O-intensive guest(s) there')],
        instances=[make_instance()],
        enforceable_policies=['first-touch', 'interleave', 'home'],
        locality_signal=None, measurements=['interface-traffic'],
        memory_demotion=False)
    return report_obj.NumaHostReport(**_said(values, fields))
