"""The panel's pages, rendered by Django against the in-process API."""

import json
import unittest

from django.test import utils as test_utils
from django.urls import reverse
from openstack_dashboard.test import helpers

from nova_numa_policy.dashboard.numa import bars
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

    def test_nodes_of_a_tiered_host_are_labelled_with_their_tier(self):
        response = self.client.get(INDEX)
        # compute-2's four nodes; compute-1 says no tiers and has none.
        self.assertContains(response, 'numa-tier', count=4)
        self.assertContains(
            response, '<span class="label label-default numa-tier">'
            'tier 1</span>', count=2, html=True)
        self.assertContains(
            response, '<span class="label label-default numa-tier">'
            'tier 0 (top)</span>', count=2, html=True)

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

    def test_a_tiered_host_shows_node_tiers_and_demotion(self):
        response = self.client.get(detail('compute-2'))
        self.assertContains(response, 'Memory tier')
        self.assertEqual(
            ['tier 0 (top)', 'tier 0 (top)', 'tier 1', 'tier 1'],
            [row.cells['tier'].data for row in
             response.context['nodes_table'].get_rows()])
        self.assertContains(response, '<dt>Memory demotion</dt><dd>on</dd>',
                            html=True)

    def test_a_host_without_tiers_shows_no_tier_text(self):
        response = self.client.get(detail('compute-1'))
        self.assertEqual(200, response.status_code)
        self.assertNotIn('tier', response.content.decode().lower())
        self.assertNotContains(response, 'Memory demotion')
        self.assertNotIn('tier', response.context['nodes_table'].columns)

    def test_unknown_host_goes_back_to_the_index_with_the_api_message(self):
        response = self.client.get(detail('nowhere'))
        self.assertRedirectsNoFollow(response, INDEX)


class TierTextTest(unittest.TestCase):
    """The pure formatting of memory tiers."""

    def _host(self, *tiers, demotion=None):
        return {'memory_demotion': demotion, 'numa_nodes': [
            {'id': i, 'memory_tier': tier, 'cpu_load': 0.1,
             'memory_total_mb': 1024, 'memory_free_mb': 512, 'nics': []}
            for i, tier in enumerate(tiers)]}

    def test_a_node_that_says_no_tier_is_on_the_top_tier(self):
        self.assertEqual(['tier 0 (top)', 'tier 0 (top)', 'tier 1'], [
            bars.tier_text({'memory_tier': t}) for t in (None, 0, 1)])

    def test_only_a_lower_tier_makes_a_host_tiered(self):
        self.assertFalse(bars.tiered(self._host(None, 0)['numa_nodes']))
        self.assertFalse(bars.tiered([]))
        self.assertTrue(bars.tiered(self._host(None, 1)['numa_nodes']))

    def test_demotion_on_off_or_not_said(self):
        self.assertEqual(['on', 'off', 'not said'], [
            bars.demotion_text({'memory_demotion': d})
            for d in (True, False, None)])

    def test_nodes_cell_labels_tiers_only_on_a_tiered_host(self):
        cell = bars.nodes_cell(self._host(0, 1))
        self.assertIn('tier 0 (top)</span>', cell)
        self.assertIn('tier 1</span>', cell)
        self.assertNotIn('tier', bars.nodes_cell(self._host(0, None)))


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
