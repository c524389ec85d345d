"""Factories of the collector data the panel tests show.

Reports and actions go through the collector's own checks
(``report_from_json`` by way of the objects, ``load_action``) and storage
functions, exactly as the listener stores them.
"""

import datetime

from nova_numa_policy.collector import actions
from nova_numa_policy.objects import report as report_obj

NOW = datetime.datetime(2025, 1, 31, 12, 0, tzinfo=datetime.timezone.utc)
UUID_OK = '11111111-1111-4111-8111-111111111111'
UUID_MISSED = '22222222-2222-4222-8222-222222222222'
UUID_NONE = '33333333-3333-4333-8333-333333333333'
# compute-1: node 0 quiet (green bar), node 1 hot (red bar).
LOADS = {'compute-1': (0.2, 0.92), 'compute-2': (0.1, 0.7, 0.5, 0.3)}
# Memory tier of each node and memory_demotion (report 1.8): compute-2's
# nodes 2 and 3 are a lower tier; compute-1 says neither, as an agent
# before 1.8.
TIERS = {'compute-1': ((None, None), None),
         'compute-2': ((0, 0, 1, 1), True)}
HISTORY = 12
PERIOD = 300.0


def _node(node, count, load, tier):
    distances = [10 if other == node else 21 for other in range(count)]
    return report_obj.NumaNodeReport(
        id=node, cpus=list(range(node * 8, node * 8 + 8)),
        memory_total_mb=65536, memory_free_mb=65536 - 16384 * (node + 1),
        cpu_load=load, distances=distances, memory_tier=tier)


def _instance(uuid, requested, applied, memory):
    return report_obj.NumaInstanceReport(
        uuid=uuid, requested_policy=requested, applied_policy=applied,
        memory_mb_per_node=memory, vcpu_cpus=[0, 1, 8, 9], io_rate=5.0,
        io_intensive=False, access_class='moderate')


INSTANCES = {
    'compute-1': [
        _instance(UUID_OK, 'interleave', 'interleave',
                  {'0': 2048, '1': 2048}),
        _instance(UUID_MISSED, 'home', 'first-touch',
                  {'0': 1024, '1': 3072})],
    'compute-2': [_instance(UUID_NONE, None, 'none', {'2': 4096})],
}


def make_report(host, seq, generated_at):
    loads = LOADS[host]
    tiers, demotion = TIERS[host]
    return report_obj.NumaHostReport(
        host=host, hypervisor_hostname=f'{host}.example.org',
        agent_version='1.0.0', seq=seq, generated_at=generated_at,
        period=PERIOD,
        numa_nodes=[_node(i, len(loads), load, tier)
                    for i, (load, tier) in enumerate(zip(loads, tiers))],
        nics=[report_obj.NumaNicReport(name='eth0', numa_node=1,
                                       speed_mbps=25000, physnet='physnet1',
                                       bridge=None),
              report_obj.NumaNicReport(name='eth1', numa_node=None,
                                       speed_mbps=None, physnet=None,
                                       bridge='br-ex')],
        instances=list(INSTANCES[host]),
        enforceable_policies=['first-touch', 'interleave', 'home'],
        memory_demotion=demotion)


def action_payload(host, seq, generated_at, outcome, uuid=UUID_OK):
    return {
        'version': '1.0', 'host': host, 'seq': seq,
        'generated_at': generated_at.isoformat(), 'instance_uuid': uuid,
        'kind': 'move_pages', 'outcome': outcome,
        'reason': f'node 1 memory controller at {80 + seq} %',
        'details': {'source_node': 1, 'target_node': 0, 'pages': 256},
    }


def fill(storage):
    """A history of :data:`HISTORY` reports per host, plus actions."""
    for host in LOADS:
        for seq in range(1, HISTORY + 1):
            generated = NOW - datetime.timedelta(
                seconds=PERIOD * (HISTORY - seq))
            # Delays of 1 to 4 s, so the delay chart has a real shape.
            delay = datetime.timedelta(seconds=1 + seq % 4)
            storage.store_report(make_report(host, seq, generated),
                                 generated + delay)
    outcomes = ('applied', 'applied', 'dry_run', 'failed')
    for seq in range(1, 9):
        moment = NOW - datetime.timedelta(minutes=7 * (9 - seq))
        action = actions.load_action(action_payload(
            'compute-1', seq, moment, outcomes[seq % 4]))
        storage.store_action(action, moment)
