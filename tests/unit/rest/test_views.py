import datetime

from nova_numa_policy.rest import views
from tests import base as test_base


class PolicyAppliedTest(test_base.TestCase):

    def test_table(self):
        rows = [
            (None, 'none', None),
            (None, 'interleave', None),
            ('interleave', 'interleave', True),
            ('interleave', 'first-touch', False),
            ('interleave', 'none', False),
            ('auto', 'interleave+carrefour', True),
            ('auto', 'none', False),
        ]
        for requested, applied, expected in rows:
            with self.subTest(f'{requested} -> {applied}'):
                self.assertEqual(expected,
                                 views.policy_applied(requested, applied))


def _epoch(moment):
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()


class HostDetailTest(test_base.TestCase):

    def test_the_report_is_fresh_within_the_ttl_as_the_scheduler_says(self):
        moment = datetime.datetime(2025, 1, 31, 12, 0)
        row = {'host': 'h', 'hypervisor_hostname': 'h', 'agent_version': '1',
               'seq': 1, 'generated_at': moment, 'received_at': moment,
               'period': 5.0, 'instance_count': 0, 'numa_nodes': [],
               'enforceable_policies': []}
        for age, fresh in ((0, True), (180, True), (180.5, False)):
            body = views.host_summary(row, _epoch(moment) + age, 180)
            self.assertEqual((age, fresh),
                             (body['report_age'], body['report_fresh']))

    def test_nodes_carry_instance_memory_and_their_nics(self):
        moment = datetime.datetime(2025, 1, 31, 12, 0)
        node = {'id': 0, 'cpus': [0], 'cpu_load': 0.5,
                'memory_total_mb': 100, 'memory_free_mb': 10,
                'distances': [10]}
        row = {
            'host': 'h', 'hypervisor_hostname': 'h', 'agent_version': '1',
            'seq': 1, 'generated_at': moment, 'received_at': moment,
            'period': 60.0, 'instance_count': 2,
            'enforceable_policies': [],
            'numa_nodes': [node, dict(node, id=1)],
            'nics': [{'name': 'eth0', 'numa_node': 1, 'speed_mbps': None,
                      'physnet': None, 'bridge': None},
                     {'name': 'eth1', 'numa_node': None, 'speed_mbps': None,
                      'physnet': None, 'bridge': None}],
            'instances': [
                {'uuid': 'a', 'host': 'h', 'requested_policy': None,
                 'applied_policy': 'none',
                 'memory_mb_per_node': {'0': 30, '1': 5}, 'vcpu_cpus': [],
                 'io_rate': 0.0, 'io_intensive': False,
                 'access_class': None, 'generated_at': moment},
                {'uuid': 'b', 'host': 'h', 'requested_policy': 'home',
                 'applied_policy': 'home', 'memory_mb_per_node': {'0': 12},
                 'vcpu_cpus': [], 'io_rate': 0.0, 'io_intensive': False,
                 'access_class': None, 'generated_at': moment}],
        }
        body = views.host_detail(row, _epoch(moment), 180)
        self.assertEqual([42, 5], [n['instance_memory_mb']
                                   for n in body['numa_nodes']])
        self.assertEqual([[], ['eth0']], [n['nics']
                                          for n in body['numa_nodes']])
        self.assertEqual('2025-01-31T12:00:00+00:00', body['generated_at'])
        self.assertEqual(2, body['node_count'])
        # Stored before report 1.7: no vector known, no verdict.
        self.assertEqual([([], [], None)] * 2,
                         [(n['irqs'], n['irq_cpus'], n['irq_steering'])
                          for n in body['nics']])
        # Stored before report 1.6: every CPU floats, at the node's load.
        self.assertEqual([([0], 0.5)] * 2,
                         [(n['floating_cpus'], n['floating_load'])
                          for n in body['numa_nodes']])
        # Stored before report 1.8: no tier said, no demotion.
        self.assertEqual([None, None], [n['memory_tier']
                                        for n in body['numa_nodes']])
        self.assertIsNone(body['memory_demotion'])

    def test_nodes_say_what_guests_without_dedicated_cpus_may_use(self):
        moment = datetime.datetime(2025, 1, 31, 12, 0)
        node = {'id': 0, 'cpus': [0, 1], 'cpu_load': 0.5,
                'memory_total_mb': 100, 'memory_free_mb': 10,
                'distances': [10, 21], 'floating_cpus': [1],
                'floating_load': 0.9}
        row = {
            'host': 'h', 'hypervisor_hostname': 'h', 'agent_version': '1',
            'seq': 1, 'generated_at': moment, 'received_at': moment,
            'period': 60.0, 'instance_count': 0,
            'enforceable_policies': [], 'nics': [], 'instances': [],
            'numa_nodes': [node, dict(node, id=1, cpus=[2, 3],
                                      distances=[21, 10], floating_cpus=[],
                                      floating_load=None)],
        }
        body = views.host_detail(row, _epoch(moment), 180)
        self.assertEqual([([1], 0.9), ([], None)],
                         [(n['floating_cpus'], n['floating_load'])
                          for n in body['numa_nodes']])

    def test_nodes_say_their_memory_tier_and_the_host_its_demotion(self):
        moment = datetime.datetime(2025, 1, 31, 12, 0)
        node = {'id': 0, 'cpus': [0, 1], 'cpu_load': 0.5,
                'memory_total_mb': 100, 'memory_free_mb': 10,
                'distances': [10, 30], 'memory_tier': 0}
        row = {
            'host': 'h', 'hypervisor_hostname': 'h', 'agent_version': '1',
            'seq': 1, 'generated_at': moment, 'received_at': moment,
            'period': 60.0, 'instance_count': 0,
            'enforceable_policies': [], 'nics': [], 'instances': [],
            'memory_demotion': False,
            # A memory-only node a tier below.
            'numa_nodes': [node, dict(node, id=1, cpus=[],
                                      distances=[30, 10], memory_tier=1)],
        }
        body = views.host_detail(row, _epoch(moment), 180)
        self.assertEqual([0, 1], [n['memory_tier']
                                  for n in body['numa_nodes']])
        self.assertIs(False, body['memory_demotion'])
        # The list says neither: it shows no node.
        summary = views.host_summary(row, _epoch(moment), 180)
        self.assertNotIn('memory_demotion', summary)


class PageTest(test_base.TestCase):

    def test_a_full_page_links_to_the_next(self):
        body = views.page('items', [{'k': 'a'}, {'k': 'b'}], 2,
                          'http://api/v1/items', {'host': 'h x'},
                          lambda item: item['k'])
        self.assertEqual(
            [{'rel': 'next',
              'href': 'http://api/v1/items?host=h+x&limit=2&marker=b'}],
            body['links'])

    def test_a_short_page_is_the_last(self):
        body = views.page('items', [{'k': 'a'}], 2, 'http://api/v1/items',
                          {}, lambda item: item['k'])
        self.assertEqual([], body['links'])
