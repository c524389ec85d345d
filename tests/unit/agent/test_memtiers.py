"""The kernel's memory tiers: parsed and ranked, and read from fixture sysfs
trees."""

import os

import fixtures

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import memtiers as tier_files

from agent.sensors import memtiers
from agent.sensors import sysfs
from tests import base as test_base
from tests import fixtures as host_fixtures

# The lab host's kernel (6.1): DRAM nodes 0-1 in memory_tier4, the
# memory-only node 2 brought online by dax/kmem in memory_tier22.
LAB_HOST = {4: '0-1', 22: '2'}


class RankTiersTest(test_base.TestCase):

    def test_ranks_follow_the_tier_numbers_without_gaps(self):
        self.assertEqual({0: 0, 1: 0, 2: 1},
                         tier_files.rank_tiers({22: {2}, 4: {0, 1}}))

    def test_three_tiers_rank_0_1_2_whatever_their_numbers(self):
        self.assertEqual({0: 0, 4: 0, 1: 1, 2: 2, 3: 2},
                         tier_files.rank_tiers({
                             100: {2, 3}, 4: {0, 4}, 9: {1}}))

    def test_a_tier_without_nodes_takes_no_rank(self):
        self.assertEqual({0: 0, 2: 1},
                         tier_files.rank_tiers({3: set(), 4: {0},
                                                10: frozenset(), 22: {2}}))

    def test_no_tier_ranks_nothing(self):
        self.assertEqual({}, tier_files.rank_tiers({}))
        self.assertEqual({}, tier_files.rank_tiers({4: frozenset()}))


class ParseTest(test_base.TestCase):

    def test_nodelists_are_read_as_the_kernel_writes_them(self):
        self.assertEqual({4: {0, 1, 4}, 22: {2, 3}, 30: set()},
                         tier_files.parse_tiers({
                             'memory_tier4': '0-1,4\n',
                             'memory_tier22': '2-3',
                             'memory_tier30': ''}))

    def test_what_the_kernel_would_not_write_is_refused(self):
        for nodelists in ({'memory_tier4': 'zero'},
                          {'memory_tier4': '0-'},
                          {'memory_tier4': '-1'},
                          {'memory_tier4': '0;1'},
                          # Expanded, a range this wide would fill memory.
                          {'memory_tier4': '0-99999999999'},
                          {'memory_tier4': None},
                          {'memory_tierX': '0'},
                          {'memory_tier4': '0-1', 'memory_tier22': '1'}):
            with self.subTest(nodelists):
                self.assertRaises(ValueError, tier_files.parse_tiers,
                                  nodelists)

    def test_demotion_reads_true_false_1_0_or_nothing(self):
        for text, expected in (('true\n', True), ('false\n', False),
                               ('1', True), ('0', False), (None, None)):
            with self.subTest(text):
                self.assertIs(expected, tier_files.parse_demotion(text))
        for text in ('yes', '', 'True', '2'):
            with self.subTest(text):
                self.assertRaises(ValueError, tier_files.parse_demotion, text)

    def test_each_unreadable_part_is_left_unsaid_and_said_why(self):
        found, problems = tier_files.memory_tiers(
            {'memory_tier4': 'garbage'}, 'true')
        self.assertEqual(backend.MemoryTiers(ranks=None, demotion=True),
                         found)
        self.assertEqual({'tiers'}, set(problems))
        found, problems = tier_files.memory_tiers({'memory_tier4': '0'},
                                                  'maybe')
        self.assertEqual(backend.MemoryTiers(ranks={0: 0}, demotion=None),
                         found)
        self.assertIn('maybe', problems['demotion'])


class TierSensorTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        host_fixtures.numa_host(self.root, 3, 2)
        self.log = self.useFixture(fixtures.FakeLogger())

    def read(self):
        return memtiers.TierSensor(self.root).read()

    def test_the_lab_hosts_kernel_ranks_the_memory_only_node_below(self):
        host_fixtures.write_memory_tiers(self.root, LAB_HOST, 'false')
        found = self.read()
        self.assertEqual({0: 0, 1: 0, 2: 1}, found.ranks)
        self.assertIs(False, found.demotion)
        self.assertEqual([0, 0, 1], [found.rank(n) for n in range(3)])
        self.assertEqual('', self.log.output)

    def test_demotion_on(self):
        host_fixtures.write_memory_tiers(self.root, LAB_HOST, 'true')
        self.assertIs(True, self.read().demotion)

    def test_a_kernel_before_6_1_says_nothing(self):
        found = self.read()
        self.assertEqual(backend.MemoryTiers(ranks=None, demotion=None),
                         found)
        # Every node is then in the top tier.
        self.assertEqual([0, 0, 0], [found.rank(n) for n in range(3)])
        self.assertEqual('', self.log.output)

    def test_tiers_without_the_demotion_file_say_no_demotion(self):
        host_fixtures.write_memory_tiers(self.root, LAB_HOST)
        found = self.read()
        self.assertEqual({0: 0, 1: 0, 2: 1}, found.ranks)
        self.assertIsNone(found.demotion)

    def test_tiers_that_list_no_node_say_nothing(self):
        os.makedirs(os.path.join(self.root, sysfs.MEMORY_TIERING_DIR))
        self.assertIsNone(self.read().ranks)
        host_fixtures.write_memory_tiers(self.root, {4: ''}, 'false')
        found = self.read()
        self.assertEqual((None, False), (found.ranks, found.demotion))
        self.assertEqual('', self.log.output)

    def test_only_tier_directories_count(self):
        host_fixtures.write_memory_tiers(self.root, LAB_HOST)
        host_fixtures.write_file(
            self.root, f'{sysfs.MEMORY_TIERING_DIR}/uevent', '')
        self.assertEqual({0: 0, 1: 0, 2: 1}, self.read().ranks)

    def test_a_malformed_nodelist_is_warned_once_and_said_as_nothing(self):
        host_fixtures.write_memory_tiers(self.root, {4: '0-1', 22: '2-x'},
                                         'true')
        sensor = memtiers.TierSensor(self.root)
        for _ in range(3):
            found = sensor.read()
            self.assertEqual((None, True), (found.ranks, found.demotion))
        self.assertEqual(1, self.log.output.count('memory tiers cannot be '
                                                  'read'))
        self.assertIn("'2-x'", self.log.output)

    def test_a_tier_without_its_nodelist_is_malformed(self):
        os.makedirs(os.path.join(self.root, sysfs.MEMORY_TIERING_DIR,
                                 'memory_tier4'))
        self.assertIsNone(self.read().ranks)
        self.assertIn('memory_tier4 has an unreadable nodelist',
                      self.log.output)

    def test_a_malformed_demotion_file_is_warned_once(self):
        host_fixtures.write_memory_tiers(self.root, LAB_HOST, 'perhaps')
        sensor = memtiers.TierSensor(self.root)
        for _ in range(2):
            found = sensor.read()
            self.assertEqual(({0: 0, 1: 0, 2: 1}, None),
                             (found.ranks, found.demotion))
        self.assertEqual(1, self.log.output.count('demotion cannot be read'))

    def test_bytes_that_are_not_text_are_said_as_nothing(self):
        host_fixtures.write_undecodable_tier(self.root,
                                             sysfs.MEMORY_TIERING_DIR)
        self.assertEqual(backend.MemoryTiers(), self.read())
        self.assertIn('memory tiers cannot be read', self.log.output)
