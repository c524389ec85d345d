"""The CPUs nova's configuration gives unpinned guests on a host."""

import collections

import fixtures
from oslo_config import cfg

from nova_numa_policy.contracts import scope

from agent.service import cmd
from tests import base as test_base
from tests import fixtures as host_fixtures

HOST = frozenset(range(8))


class FloatingCpusTest(test_base.TestCase):

    # (partition, the CPUs nova gives guests without dedicated CPUs)
    CASES = [
        (scope.CpuPartition(), frozenset()),
        (scope.CpuPartition(shared=frozenset({0, 1})), {0, 1}),
        (scope.CpuPartition(dedicated=frozenset({4, 5, 6, 7})), {0, 1, 2, 3}),
        # nova's order: the legacy pin set wins over the shared set.
        (scope.CpuPartition(shared=frozenset({2}), pin_set=frozenset({3})),
         {3}),
        (scope.CpuPartition(pin_set=frozenset({3, 4})), {3, 4}),
    ]

    def test_cases(self):
        for partition, expected in self.CASES:
            self.assertEqual(frozenset(expected), partition.floating(HOST),
                             partition)


Node = collections.namedtuple('Node', 'id cpus')
NODES = (Node(0, (0, 1, 2, 3)), Node(1, (4, 5, 6, 7)))


class FloatingByNodeTest(test_base.TestCase):

    # (partition, each node's CPUs guests without dedicated CPUs may use)
    CASES = [
        (scope.CpuPartition(), {0: {0, 1, 2, 3}, 1: {4, 5, 6, 7}}),
        # Dedicated CPUs and no shared set: nova places no floating guest
        # on the host (no VCPU inventory), so no node has capacity.
        (scope.CpuPartition(dedicated=frozenset({4, 5, 6, 7})),
         {0: set(), 1: set()}),
        # Node 1 wholly dedicated: no capacity for floating guests.
        (scope.CpuPartition(shared=frozenset({0, 1, 2, 3}),
                            dedicated=frozenset({4, 5, 6, 7})),
         {0: {0, 1, 2, 3}, 1: set()}),
        # Each node split between shared and dedicated CPUs.
        (scope.CpuPartition(shared=frozenset({0, 1, 4, 5}),
                            dedicated=frozenset({2, 3, 6, 7})),
         {0: {0, 1}, 1: {4, 5}}),
        # A shared set alone: CPUs outside it are the host's own.
        (scope.CpuPartition(shared=frozenset({1})), {0: {1}, 1: set()}),
        (scope.CpuPartition(pin_set=frozenset({3, 4})), {0: {3}, 1: {4}}),
    ]

    def test_cases(self):
        for partition, expected in self.CASES:
            self.assertEqual(
                {node: frozenset(cpus) for node, cpus in expected.items()},
                partition.floating_by_node(NODES), partition)

    def test_a_node_list_given_once_as_a_generator_is_read_once(self):
        nodes = (node for node in NODES)
        self.assertEqual({0: frozenset({0, 1, 2, 3}), 1: frozenset()},
                         scope.CpuPartition(
                             shared=frozenset(range(4)),
                             dedicated=frozenset(range(4, 8)))
                         .floating_by_node(nodes))


class BoundTest(test_base.TestCase):

    # (the guest's own bound, the host's, the bound kept)
    CASES = [
        ((), (), ()),
        ({0, 1, 2}, (), {0, 1, 2}),
        # Defined with no bound, before the host was partitioned.
        ((), {0, 1, 2, 3}, {0, 1, 2, 3}),
        ({2, 3, 4, 5}, {0, 1, 2, 3}, {2, 3}),
        # Its whole bound now dedicated: where nova would put it now.
        ({6, 7}, {0, 1, 2, 3}, {0, 1, 2, 3}),
    ]

    def test_cases(self):
        for guest, host, expected in self.CASES:
            self.assertEqual(frozenset(expected), scope.bound(guest, host),
                             (guest, host))


class NovaConfTest(test_base.TestCase):

    def partition(self, text):
        path = host_fixtures.write_file(
            self.useFixture(fixtures.TempDir()).path, 'nova.conf', text)
        conf = cfg.ConfigOpts()
        conf([], default_config_files=[path])
        return cmd.cpu_partition(conf)

    def test_novas_options_as_nova_writes_them(self):
        self.assertEqual(
            scope.CpuPartition(shared=frozenset({0, 1, 3}),
                               dedicated=frozenset({4, 5, 6, 7})),
            self.partition('[compute]\ncpu_shared_set = 0-3,^2\n'
                           'cpu_dedicated_set = 4-7\n'))

    def test_the_legacy_pin_set(self):
        self.assertEqual(scope.CpuPartition(pin_set=frozenset({2, 3})),
                         self.partition('[DEFAULT]\nvcpu_pin_set = 2-3\n'))

    def test_none_set(self):
        self.assertEqual(scope.CpuPartition(), self.partition(''))
