"""The API end to end in-process: noauth, real policy, real SQLite."""

import json
import os
from unittest import mock

from oslo_db import exception as db_exc

from nova_numa_policy.collector import actions
from nova_numa_policy.rest import openapi
from tests import base as test_base
from tests.unit.collector import fakes
from tests.unit.rest import base

PROTECTED = (
    '/v1/hosts',
    '/v1/hosts/compute-1',
    '/v1/hosts/compute-1/reports',
    '/v1/instances',
    f'/v1/instances/{fakes.UUID_A}',
    '/v1/actions',
    '/v1/explain?vcpus=1&memory_mb=512',
)
DOC_COPY = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'doc',
                        'source', 'openapi.json')


class ApiTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.api = self.useFixture(base.ApiFixture())
        storage = self.api.storage
        storage.store_report(fakes.make_report(), fakes.at(100))
        storage.store_action(
            actions.load_action(fakes.make_action_payload()), fakes.at(100))

    def _json(self, path, status=200, headers=base.ADMIN):
        response = self.api.get(path, headers=headers)
        self.assertEqual(status, response.status_int, response.text)
        self.assertEqual('application/json', response.content_type)
        return response.json

    def test_an_admin_reads_every_resource(self):
        for path in PROTECTED:
            with self.subTest(path):
                self._json(path)

    def test_anyone_else_is_refused_with_403(self):
        for headers in (base.MEMBER, {}):
            for path in PROTECTED:
                with self.subTest(f'{path} {headers}'):
                    body = self._json(path, 403, headers=headers)
                    self.assertIn('policy does not allow numa_policy:',
                                  body['error']['message'])

    def test_a_non_admin_gets_403_even_for_bad_input(self):
        self._json('/v1/hosts?limit=banana', 403, headers=base.MEMBER)

    def test_host_detail_has_nodes_nics_and_instances(self):
        host = self._json('/v1/hosts/compute-1')['host']
        self.assertEqual([0.25, 0.5], [n['cpu_load']
                                       for n in host['numa_nodes']])
        self.assertEqual([512, 512], [n['instance_memory_mb']
                                      for n in host['numa_nodes']])
        self.assertEqual(['eth0'], host['numa_nodes'][1]['nics'])
        self.assertEqual(25000, host['nics'][0]['speed_mbps'])
        self.assertEqual([fakes.UUID_A],
                         [i['uuid'] for i in host['instances']])

    def test_host_detail_says_memory_tiers_where_the_agent_does(self):
        self.api.storage.store_report(
            fakes.make_report('compute-2', tiers={0: 0, 1: 1},
                              demotion=True), fakes.at(100))
        host = self._json('/v1/hosts/compute-2')['host']
        self.assertEqual(([0, 1], True), (
            [n['memory_tier'] for n in host['numa_nodes']],
            host['memory_demotion']))
        # compute-1's agent does not say: null, not a guess.
        host = self._json('/v1/hosts/compute-1')['host']
        self.assertEqual(([None, None], None), (
            [n['memory_tier'] for n in host['numa_nodes']],
            host['memory_demotion']))

    def test_instance_shows_requested_and_applied_policy(self):
        instance = self._json(f'/v1/instances/{fakes.UUID_A}')['instance']
        self.assertEqual(('interleave', 'interleave', True),
                         (instance['requested_policy'],
                          instance['applied_policy'],
                          instance['policy_applied']))
        self.assertEqual({'0': 512, '1': 512},
                         instance['memory_mb_per_node'])

    def test_actions_list_with_filters(self):
        actions_ = self._json(
            f'/v1/actions?host=compute-1&instance_uuid={fakes.UUID_A}')[
                'actions']
        self.assertEqual(['move_pages'], [a['kind'] for a in actions_])
        self.assertEqual([], self._json('/v1/actions?host=other')['actions'])

    def test_bad_input_is_400_with_a_clear_message(self):
        cases = [
            ('/v1/hosts?limit=0',
             "limit must be an integer from 1 to 1000, got '0'"),
            ('/v1/hosts?limit=1001', 'from 1 to 1000'),
            ('/v1/hosts?color=red', "unknown query parameter 'color'"),
            ('/v1/hosts/compute-1?limit=1',
             "unknown query parameter 'limit'; this resource takes none"),
            ('/v1/instances?marker=x', "marker must be a UUID, got 'x'"),
            ('/v1/instances/not-a-uuid',
             "uuid must be a UUID, got 'not-a-uuid'"),
            ('/v1/actions?marker=-3', "marker must be an integer"),
            ('/v1/actions?instance_uuid=1', 'instance_uuid must be a UUID'),
            ('/v1/hosts/a%01b', 'host must be 1 to 255 characters without'),
            ('/v1/hosts?host=%ff', 'not UTF-8'),
        ]
        for path, message in cases:
            with self.subTest(path):
                body = self._json(path, 400)
                self.assertIn(message, body['error']['message'])
                self.assertEqual(400, body['error']['code'])

    def test_unknown_items_are_404(self):
        for path, message in (
                ('/v1/hosts/ghost', "no report from host 'ghost'"),
                ('/v1/hosts/ghost/reports', "no report from host 'ghost'"),
                (f'/v1/instances/{fakes.UUID_B}', fakes.UUID_B),
                ('/v1/servers', "no resource at '/v1/servers'")):
            with self.subTest(path):
                body = self._json(path, 404)
                self.assertIn(message, body['error']['message'])

    def test_writes_are_405(self):
        response = self.api.get('/v1/hosts', method='DELETE')
        self.assertEqual(405, response.status_int)
        self.assertEqual('GET, HEAD', response.headers['Allow'])

    def test_a_database_outage_is_503(self):
        with mock.patch.object(self.api.storage, 'list_hosts',
                               side_effect=db_exc.DBConnectionError('x')):
            body = self._json('/v1/hosts', 503)
        self.assertIn('database is unavailable', body['error']['message'])

    def test_an_unexpected_error_is_a_json_500_without_details(self):
        with mock.patch.object(self.api.storage, 'list_hosts',
                               side_effect=RuntimeError('secret detail')):
            body = self._json('/v1/hosts', 500)
        self.assertNotIn('secret', json.dumps(body))

    def test_responses_carry_a_request_id(self):
        response = self.api.get('/v1/hosts')
        self.assertTrue(response.headers['x-openstack-request-id']
                        .startswith('req-'))

    def test_discovery_and_description_are_public(self):
        for path in ('/', '/v1'):
            body = self._json(path, headers={})
            self.assertEqual('v1', body['versions'][0]['id'])
        # The test app runs noauth: its description asks for no token.
        self.assertEqual(openapi.document(token_auth=False),
                         self._json('/v1/openapi.json', headers={}))


class PaginationTest(test_base.TestCase):

    def test_next_links_walk_every_host_once(self):
        api = self.useFixture(base.ApiFixture(default_limit=2))
        names = [f'compute-{i}' for i in range(5)]
        for name in names:
            api.storage.store_report(fakes.make_report(host=name),
                                     fakes.at(100))
        seen, path, pages = [], '/v1/hosts', 0
        while path:
            body = api.get(path).json
            seen.extend(h['host'] for h in body['hosts'])
            links = [link['href'] for link in body['links']
                     if link['rel'] == 'next']
            path = links[0].replace('http://localhost', '') if links else ''
            pages += 1
        self.assertEqual(names, seen)
        self.assertEqual(3, pages)

    def test_the_served_description_follows_max_limit(self):
        api = self.useFixture(base.ApiFixture(max_limit=10, default_limit=5))
        doc = api.get('/v1/openapi.json').json
        limit = doc['paths']['/v1/hosts']['get']['parameters'][0]
        self.assertEqual(10, limit['schema']['maximum'])
        self.assertEqual(400, api.get('/v1/hosts?limit=11').status_int)


class DocumentCopyTest(test_base.TestCase):

    def test_the_copy_in_doc_is_the_served_description(self):
        with open(DOC_COPY) as f:
            copy = json.load(f)
        self.assertEqual(
            openapi.document(), copy,
            'doc/source/openapi.json is stale; regenerate it with '
            'python -m nova_numa_policy.rest.openapi > '
            'doc/source/openapi.json')
