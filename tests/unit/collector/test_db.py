"""The collector database on a real SQLite file."""

from nova_numa_policy.collector import actions
from tests import base as test_base
from tests.unit.collector import base
from tests.unit.collector import fakes


def _naive(seconds):
    return fakes.at(seconds).replace(tzinfo=None)


class StoreReportTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.storage = self.useFixture(
            base.SqliteStorage(report_history_per_host=3)).storage

    def _store(self, **kwargs):
        report = fakes.make_report(**kwargs)
        return self.storage.store_report(report, fakes.at(100))

    def test_a_report_becomes_the_host_its_instances_and_history(self):
        self.assertTrue(self._store(seq=1))
        host = self.storage.get_host('compute-1')
        self.assertEqual(1, host['seq'])
        self.assertEqual(_naive(1), host['generated_at'])
        self.assertEqual([30000, 31000],
                         [n['memory_free_mb'] for n in host['numa_nodes']])
        self.assertEqual('eth0', host['nics'][0]['name'])
        self.assertEqual([fakes.UUID_A],
                         [i['uuid'] for i in host['instances']])
        instance = self.storage.get_instance(fakes.UUID_A)
        self.assertEqual('interleave', instance['applied_policy'])
        self.assertEqual({'0': 512, '1': 512},
                         instance['memory_mb_per_node'])
        self.assertEqual([1], [r['seq'] for r in
                               self.storage.list_reports('compute-1', 10)])

    def test_the_host_keeps_its_tiers_as_its_newest_report_says(self):
        self.assertTrue(self._store(seq=1, tiers={0: 0, 1: 1},
                                    demotion=True))
        host = self.storage.get_host('compute-1')
        self.assertEqual(([0, 1], True), (
            [n['memory_tier'] for n in host['numa_nodes']],
            host['memory_demotion']))
        self.assertTrue(self._store(seq=2, tiers={0: 0, 1: 1},
                                    demotion=False))
        self.assertIs(False,
                      self.storage.get_host('compute-1')['memory_demotion'])
        # An agent pinned below 1.8 says neither.
        self.assertTrue(self._store(seq=3))
        host = self.storage.get_host('compute-1')
        self.assertEqual(([None, None], None), (
            [n['memory_tier'] for n in host['numa_nodes']],
            host['memory_demotion']))

    def test_redelivery_is_stored_once(self):
        self.assertTrue(self._store(seq=1))
        self.assertFalse(self._store(seq=1))
        self.assertEqual(1, len(self.storage.list_reports('compute-1', 10)))

    def test_the_same_seq_at_another_time_is_another_report(self):
        # An agent restarted: seq starts again, the time tells them apart.
        self._store(seq=1, generated_at=fakes.at(1))
        self.assertTrue(self._store(seq=1, generated_at=fakes.at(500)))
        self.assertEqual(_naive(500),
                         self.storage.get_host('compute-1')['generated_at'])

    def test_a_late_older_report_joins_history_only(self):
        self._store(seq=2, free_mb=(100, 200))
        self.assertTrue(self._store(seq=1, free_mb=(300, 400)))
        host = self.storage.get_host('compute-1')
        self.assertEqual(2, host['seq'])
        self.assertEqual([100, 200],
                         [n['memory_free_mb'] for n in host['numa_nodes']])
        self.assertEqual([2, 1], [r['seq'] for r in
                                  self.storage.list_reports('compute-1', 10)])

    def test_history_keeps_the_newest_per_host(self):
        for seq in range(1, 6):
            self._store(seq=seq)
        self._store(host='compute-2', seq=1)
        self.assertEqual([5, 4, 3], [r['seq'] for r in
                                     self.storage.list_reports('compute-1',
                                                               10)])
        self.assertEqual(1, len(self.storage.list_reports('compute-2', 10)))

    def test_an_instance_gone_from_its_host_loses_its_row(self):
        self._store(seq=1)
        self._store(seq=2, instances=[])
        self.assertIsNone(self.storage.get_instance(fakes.UUID_A))
        self.assertEqual(0, self.storage.get_host('compute-1')[
            'instance_count'])

    def test_a_migrated_instance_follows_the_newer_report(self):
        self._store(host='compute-1', seq=1)
        self._store(host='compute-2', seq=1, generated_at=fakes.at(50))
        self.assertEqual('compute-2',
                         self.storage.get_instance(fakes.UUID_A)['host'])
        # compute-1 has not noticed yet and still lists it at an older time.
        self._store(host='compute-1', seq=2, generated_at=fakes.at(40))
        self.assertEqual('compute-2',
                         self.storage.get_instance(fakes.UUID_A)['host'])
        # compute-1 no longer lists it: compute-2's row is not touched.
        self._store(host='compute-1', seq=3, generated_at=fakes.at(60),
                    instances=[])
        self.assertEqual('compute-2',
                         self.storage.get_instance(fakes.UUID_A)['host'])


class StoreActionTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.storage = self.useFixture(
            base.SqliteStorage(action_history_per_host=2)).storage

    def _store(self, **kwargs):
        action = actions.load_action(fakes.make_action_payload(**kwargs))
        return self.storage.store_action(action, fakes.at(100))

    def test_an_action_is_stored_once(self):
        self.assertTrue(self._store(seq=1))
        self.assertFalse(self._store(seq=1))
        stored = self.storage.list_actions(10)
        self.assertEqual(1, len(stored))
        self.assertEqual('move_pages', stored[0]['kind'])
        self.assertEqual(512, stored[0]['details']['pages'])

    def test_history_keeps_the_newest_per_host(self):
        for seq in range(1, 5):
            self._store(seq=seq)
        self._store(host='compute-2', seq=1)
        self.assertEqual([4, 3], [a['seq'] for a in self.storage.list_actions(
            10, host='compute-1')])
        self.assertEqual(3, len(self.storage.list_actions(10)))

    def test_actions_filter_by_instance(self):
        self._store(seq=1)
        self._store(seq=2, instance_uuid=fakes.UUID_B)
        self.assertEqual([2], [a['seq'] for a in self.storage.list_actions(
            10, instance_uuid=fakes.UUID_B)])


class PaginationTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.storage = self.useFixture(base.SqliteStorage()).storage
        for name in ('c', 'a', 'b'):
            self.storage.store_report(fakes.make_report(host=name),
                                      fakes.at(100))

    def test_hosts_page_by_name_after_the_marker(self):
        self.assertEqual(['a', 'b'],
                         [h['host'] for h in self.storage.list_hosts(2)])
        self.assertEqual(['c'], [h['host'] for h in
                                 self.storage.list_hosts(2, marker='b')])

    def test_a_marker_that_is_gone_still_pages_after_it(self):
        self.assertEqual(['b', 'c'], [h['host'] for h in
                                      self.storage.list_hosts(2,
                                                              marker='a0')])

    def test_actions_page_newest_first(self):
        for seq in range(1, 4):
            self.storage.store_action(
                actions.load_action(fakes.make_action_payload(seq=seq)),
                fakes.at(100))
        first = self.storage.list_actions(2)
        self.assertEqual([3, 2], [a['seq'] for a in first])
        rest = self.storage.list_actions(2, marker=first[-1]['id'])
        self.assertEqual([1], [a['seq'] for a in rest])
