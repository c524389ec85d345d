"""The CPUs nova's configuration gives unpinned guests on a host."""

import os

import fixtures
from oslo_config import cfg
import testtools

from nova_numa_policy import scope

from agent import cmd

HOST = frozenset(range(8))


class FloatingCpusTest(testtools.TestCase):

    # (partition, the CPUs nova gives guests without dedicated CPUs)
    CASES = [
        (scope.CpuPartition(), frozenset()),
        (scope.CpuPartition(shared=frozenset({0, 1})), {0, 1}),
        (scope.CpuPartition(dedicated=frozenset({4, 5, 6, 7})), {0, 1, 2, 3}),
        # nova's order: the shared set wins over the legacy pin set.
        (scope.CpuPartition(shared=frozenset({2}), pin_set=frozenset({3})),
         {2}),
        (scope.CpuPartition(pin_set=frozenset({3, 4})), {3, 4}),
    ]

    def test_cases(self):
        for partition, expected in self.CASES:
            self.assertEqual(frozenset(expected), partition.floating(HOST),
                             partition)


class BoundTest(testtools.TestCase):

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


class NovaConfTest(testtools.TestCase):

    def partition(self, text):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w') as f:
            f.write(text)
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
