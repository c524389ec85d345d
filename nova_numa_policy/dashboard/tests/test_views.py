"""The panel's pages, rendered by Django against the in-process API."""

import json

from django.test import utils as test_utils
from django.urls import reverse
from openstack_dashboard.test import helpers

from nova_numa_policy.dashboard.tests import base
from nova_numa_policy.dashboard.tests import data

INDEX = reverse('horizon:admin:numa_policy:index')


def detail(host):
    return reverse('horizon:admin:numa_policy:detail', args=[host])


class ApiMixin:
    # Not 'roles': Horizon's test data owns that attribute name.
    api_roles = 'admin'

    def setUp(self):
        super().setUp()
        self.api = base.ServedApi(self.api_roles).start()
        self.addCleanup(self.api.stop)
        self.api.fill()


class IndexTest(ApiMixin, helpers.BaseAdminViewTests):

    def test_hosts_have_a_load_bar_per_node_coloured_by_load(self):
        response = self.client.get(INDEX)
        self.assertEqual(200, response.status_code)
        hosts = response.context['hosts_table'].data
        self.assertEqual(['compute-1', 'compute-2'],
                         [h['host'] for h in hosts])
        self.assertContains(response, 'class="numa-fill numa-hot" '
                            'style="width: 92%"', html=False)
        self.assertContains(response, 'class="numa-fill numa-ok" '
                            'style="width: 20%"', html=False)
        self.assertContains(response, 'class="numa-fill numa-busy" '
                            'style="width: 70%"', html=False)

    def test_nic_locality_is_shown(self):
        response = self.client.get(INDEX)
        self.assertContains(response,
                            'eth0 \u2192 node 1 (25 Gb/s, physnet1)')
        self.assertContains(response, 'eth1 \u2192 no NUMA node')

    def test_instances_show_requested_against_applied_policy(self):
        response = self.client.get(INDEX)
        rows = {i['uuid']: i for i in
                response.context['instances_table'].data}
        self.assertEqual(('home', 'first-touch', False), (
            rows[data.UUID_MISSED]['requested_policy'],
            rows[data.UUID_MISSED]['applied_policy'],
            rows[data.UUID_MISSED]['policy_applied']))
        self.assertContains(response,
                            '<span class="label label-danger">not applied'
                            '</span>', html=True)
        self.assertContains(response, 'title="node 1: 3072 MiB"')

    def test_recent_actions_newest_first(self):
        response = self.client.get(INDEX)
        actions = response.context['actions_table'].data
        self.assertEqual(list(range(8, 0, -1)), [a['id'] for a in actions])
        self.assertContains(response, 'node 1 memory controller at 88 %')

    @test_utils.override_settings(API_RESULT_PAGE_SIZE=1)
    def test_each_table_pages_with_its_own_marker(self):
        response = self.client.get(INDEX)
        self.assertContains(response, '?hosts_marker=compute-1')
        self.assertContains(response, '?actions_marker=8')
        response = self.client.get(INDEX + '?hosts_marker=compute-1')
        self.assertEqual(['compute-2'], [
            h['host'] for h in response.context['hosts_table'].data])


class DetailTest(ApiMixin, helpers.BaseAdminViewTests):

    def _charts(self, response):
        return {c['title']: c for c in response.context['charts']}

    def test_nodes_nics_and_instances_of_the_host(self):
        response = self.client.get(detail('compute-1'))
        self.assertEqual(200, response.status_code)
        nodes = response.context['nodes_table'].data
        self.assertEqual([0.2, 0.92], [n['cpu_load'] for n in nodes])
        self.assertEqual([data.UUID_OK, data.UUID_MISSED], [
            i['uuid'] for i in response.context['host_instances_table'].data])

    def test_history_charts_come_from_the_reports_and_actions(self):
        response = self.client.get(detail('compute-1'))
        charts = self._charts(response)
        intervals = charts['Interval between reports']['points']
        self.assertEqual([data.PERIOD] * (data.HISTORY - 1),
                         [v for _t, v in intervals])
        delays = [v for _t, v in charts['Report delivery delay']['points']]
        self.assertEqual([1 + seq % 4 for seq in range(1, data.HISTORY + 1)],
                         delays)
        buckets = charts['Agent actions']['buckets']
        self.assertEqual(8, sum(sum(b['counts'].values()) for b in buckets))

    def test_chart_data_is_embedded_as_json_for_the_script(self):
        response = self.client.get(detail('compute-1'))
        content = response.content.decode()
        start = content.index('<script id="numa-chart-data"')
        body = content[content.index('>', start) + 1:
                       content.index('</script>', start)]
        self.assertEqual(3, len(json.loads(body)))
        self.assertContains(response, 'numa_policy/numa.js')

    def test_unknown_host_goes_back_to_the_index_with_the_api_message(self):
        response = self.client.get(detail('nowhere'))
        self.assertRedirectsNoFollow(response, INDEX)


class RefusedByApiTest(ApiMixin, helpers.BaseAdminViewTests):
    # Horizon lets an admin in, but the API's policy file says no.
    api_roles = 'member'

    def test_the_page_renders_with_an_error_message(self):
        response = self.client.get(INDEX)
        self.assertEqual(200, response.status_code)
        self.assertEqual([], response.context['hosts_table'].data)
        self.assertMessageCount(response, error=3)


class NonAdminTest(ApiMixin, helpers.TestCase):

    def test_the_panel_is_not_for_members(self):
        response = self.client.get(INDEX)
        self.assertNotEqual(200, response.status_code)
