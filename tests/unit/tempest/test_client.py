"""The collector API client: paths, bodies and errors over a fake HTTP
connection (tempest's own test fakes), with tempest's real RestClient.

The fake auth provider hands URLs through unchanged; keystone's joins them
to the catalog endpoint, so the paths are relative to the server root.
"""

import json

from tempest.lib import exceptions as lib_exc
from tempest.tests.lib import fake_auth_provider
from tempest.tests.lib import fake_http

from nova_numa_policy.tempest_plugin.services import numa_policy_client
from tests import base as test_base


class FakeConnection:
    """Answers every request with one status and JSON body; keeps URLs."""

    def __init__(self, status, body):
        self.status = status
        self.body = json.dumps(body)
        self.urls = []

    def request(self, url, method, **kwargs):
        self.urls.append((method, url))
        headers = {'content-type': 'application/json'}
        return (fake_http.fake_http_response(headers, status=self.status),
                self.body)


class NumaPolicyClientTest(test_base.TestCase):

    def client(self, status=200, body=None):
        client = numa_policy_client.NumaPolicyClient(
            fake_auth_provider.FakeAuthProvider(),
            'numa-policy', 'RegionOne')
        client.http_obj = FakeConnection(status, body or {})
        return client

    def test_show_instance_returns_the_wrapped_body(self):
        instance = {'uuid': 'u-1', 'requested_policy': 'interleave',
                    'applied_policy': 'interleave'}
        client = self.client(body={'instance': instance})
        self.assertEqual({'instance': instance}, client.show_instance('u-1'))
        self.assertEqual([('GET', 'v1/instances/u-1')],
                         client.http_obj.urls)

    def test_host_names_are_quoted_into_the_path(self):
        client = self.client(body={'host': {'host': 'cmp 1/a'}})
        client.show_host('cmp 1/a')
        self.assertEqual([('GET', 'v1/hosts/cmp%201%2Fa')],
                         client.http_obj.urls)

    def test_list_filters_become_the_query_string(self):
        client = self.client(body={'instances': [], 'links': []})
        client.list_instances(host='cmp1')
        client.list_hosts()
        self.assertEqual([('GET', 'v1/instances?host=cmp1'),
                          ('GET', 'v1/hosts')],
                         client.http_obj.urls)

    def test_missing_instance_is_not_found(self):
        # The scenario tests poll through 404 until the first report.
        client = self.client(status=404, body={'error': 'no report'})
        self.assertRaises(lib_exc.NotFound, client.show_instance, 'u-2')
