"""Hosts with sparse node ids (0, 1, 8, 9): the same decisions as 0-3.

Linux numbers nodes as the firmware does. Every strategy, on the same
host and guests, must decide the same actions whatever the node ids,
up to renaming the nodes.
"""

import dataclasses

from nova_numa_policy.contracts import backend
from nova_numa_policy.loops import brm
from nova_numa_policy.loops import nodeids
from nova_numa_policy.loops import runner
from nova_numa_policy.loops import vnuioa
from tests import base as test_base
from tests import topology_factory
from tests.unit.loops import snapshots as s

CPUS = 4
BUSY = 10 ** 9


class _Host:
    """A backend with every capability; only its name is read."""

    name = 'sparse-test'

    def capabilities(self):
        return frozenset(backend.CAPABILITIES)


def _topology(ids):
    def distance(a, b):
        # By place in the list, not by id: 20 a step further, 10 more.
        steps = abs(ids.index(a) - ids.index(b))
        return 10 if not steps else 20 + 10 * steps
    return topology_factory.host_topology(
        cpus=CPUS, memory_mb=16384, ids=ids, distance=distance,
        nics=(backend.NicInfo(name='eth0', numa_node=ids[3]),))


def _guests(ids):
    """Guests every loop acts on; memory and accesses keyed by node id."""
    n = dict(enumerate(ids))
    net = s.instance('net', (0,), {n[0]: 1024}, io_rate=900,
                     policy='first-touch')
    far = s.instance('far', (4, 5), {n[2]: 2048},
                     acc={n[1]: BUSY // 10, n[2]: 2 * BUSY},
                     policy='first-touch+carrefour')
    auto = s.instance('auto', (8, 12), {n[2]: 1024, n[3]: 64},
                      acc={n[2]: 3 * BUSY, n[3]: BUSY // 50},
                      policy='auto')
    home = dataclasses.replace(
        s.instance('home', (13,), {n[3]: 512}, policy='home'),
        memory_mb=512)
    penalised = s.instance('brm', (1,), {n[1]: 512}, penalty=(0.9,),
                           policy='first-touch')
    return [net, far, auto, home, penalised]


ALL = ('carrefour', 'brm', 'vnuioa', 'auto')


def _decisions(ids, loops=ALL):
    topo = _topology(ids)
    snapshot = s.snapshot(_guests(ids), topo)
    configs = {'brm': brm.Config(prob_step=100),
               'vnuioa': vnuioa.Config(max_pin_count=0)}
    r = runner.Runner(_Host(), runner.strategies(loops), configs=configs)
    return [r.decide(snapshot) for _ in range(3)]


def _renamed(decisions, ids):
    """Decisions with node ids turned into positions."""
    position = {node_id: k for k, node_id in enumerate(ids)}
    return [[(name, _positions(action, position)) for name, action in period]
            for period in decisions]


def _positions(action, position):
    if isinstance(action, backend.MovePages):
        return dataclasses.replace(action,
                                   source_node=position[action.source_node],
                                   target_node=position[action.target_node])
    if isinstance(action, backend.SetNodeset):
        return dataclasses.replace(
            action, nodes=frozenset(position[n] for n in action.nodes))
    return action


class SparseNodeIdsTest(test_base.TestCase):

    def test_every_strategy_decides_alike_on_sparse_ids(self):
        sparse = (0, 1, 8, 9)
        for loops in [(name,) for name in ALL] + [ALL]:
            dense = _decisions((0, 1, 2, 3), loops)
            acting = {name for period in dense for name, _ in period}
            # Each has something to do, or the test proves nothing.
            self.assertLessEqual({'policy', *loops[:1]}, acting, loops)
            self.assertEqual(_strip(dense), _strip(_renamed(
                _decisions(sparse, loops), sparse)), loops)

    def test_actions_name_the_hosts_node_ids(self):
        sparse = (0, 1, 8, 9)
        named = {n for period in _decisions(sparse) for _, a in period
                 for n in _nodes(a)}
        self.assertTrue(named)
        self.assertLessEqual(named, set(sparse))

    def test_a_dense_snapshot_is_passed_through_untouched(self):
        snapshot = s.snapshot(_guests((0, 1, 2, 3)), _topology((0, 1, 2, 3)))
        self.assertEqual((snapshot, None), nodeids.dense(snapshot))
        self.assertIs(snapshot, nodeids.dense(snapshot)[0])


def _nodes(action):
    if isinstance(action, backend.MovePages):
        return {action.source_node, action.target_node}
    if isinstance(action, backend.SetNodeset):
        return set(action.nodes)
    return set()


def _strip(decisions):
    # Reasons name nodes by id; the decisions are what must agree.
    return [[(name, dataclasses.replace(action, reason=''))
             for name, action in period] for period in decisions]
