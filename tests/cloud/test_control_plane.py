"""The control plane, against its real services (no mocks).

The whole cloud's (tests/cloud/cloud.py), shared by the modules of the
test process. Needs the machine's MariaDB and RabbitMQ on 127.0.0.1,
and the ports of tests/cloud/endpoints.py free.
"""

import os
import re
import uuid

import fixtures

from nova_numa_policy.contracts import policy
from tests import base as test_base
from tests.cloud import cloud as cloud_mod
from tests.cloud import configs
from tests.cloud import endpoints
from tests.cloud import infra
from tests.cloud import layout as lay
from tests.cloud import resources

# nova validates a flavor's extra specs from this microversion on.
EXTRA_SPEC_VALIDATION = {'OpenStack-API-Version': 'compute 2.86'}
CATALOG_TYPES = {'identity', 'compute', 'placement', 'image', 'network',
                 'numa-policy'}
CLOUD = None


def setUpModule():
    global CLOUD
    CLOUD = cloud_mod.for_test_module()


class ControlPlaneTest(test_base.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.cloud = CLOUD.control

    def setUp(self):
        super().setUp()
        self.session = self.cloud.admin_session()

    def _url(self, service, path=''):
        return endpoints.url(service) + path

    def test_keystone_gives_a_token_and_a_catalog_of_every_service(self):
        access = self.session.auth.get_access(self.session)
        self.assertTrue(access.auth_token)
        catalog = {entry['type']: entry for entry in access.service_catalog
                   .catalog}
        self.assertLessEqual(CATALOG_TYPES, set(catalog))
        for entry in catalog.values():
            for endpoint in entry['endpoints']:
                self.assertTrue(endpoint['url'].startswith(
                    f'http://{endpoints.HOST_ADDRESS}:'), endpoint)

    def test_placement_answers(self):
        response = self.session.get(
            self._url('placement', '/resource_providers'),
            headers={'OpenStack-API-Version': 'placement 1.39'})
        self.assertEqual(200, response.status_code)
        self.assertIn('resource_providers', response.json())

    def _flavor(self):
        response = self.session.post(
            self._url('nova', '/v2.1/flavors'),
            json={'flavor': {'name': f'numa-{uuid.uuid4().hex[:8]}',
                             'ram': 64, 'vcpus': 1, 'disk': 1}},
            headers=EXTRA_SPEC_VALIDATION)
        flavor_id = response.json()['flavor']['id']
        self.addCleanup(self.session.delete,
                        self._url('nova', f'/v2.1/flavors/{flavor_id}'),
                        headers=EXTRA_SPEC_VALIDATION)
        return flavor_id

    def _set_extra_specs(self, flavor_id, specs):
        return self.session.post(
            self._url('nova', f'/v2.1/flavors/{flavor_id}/os-extra_specs'),
            json={'extra_specs': specs}, headers=EXTRA_SPEC_VALIDATION,
            raise_exc=False)

    def test_nova_api_refuses_a_bad_numa_policy_naming_the_allowed(self):
        response = self._set_extra_specs(self._flavor(),
                                         {policy.POLICY_KEY: 'nearby'})
        self.assertEqual(400, response.status_code, response.text)
        for value in policy.POLICY_VALUES:
            self.assertIn(value, response.text)

    def test_nova_api_accepts_every_numa_policy(self):
        flavor_id = self._flavor()
        for value in policy.POLICY_VALUES:
            response = self._set_extra_specs(flavor_id,
                                             {policy.POLICY_KEY: value})
            self.assertEqual(200, response.status_code, response.text)
            self.assertEqual(value, response.json()['extra_specs'][
                policy.POLICY_KEY])

    def test_scheduler_runs_with_our_filters_and_weighers(self):
        # nova logs its options at DEBUG as it starts: what it runs with,
        # not only what the file says.
        with open(self.cloud.layout.log('nova-scheduler')) as f:
            log = f.read()

        def option(name):
            found = re.findall(
                rf'filter_scheduler\.{name} = (\[.*?\])', log)
            self.assertTrue(found, f'{name} not in the scheduler log')
            return found[-1]

        for name in ('NumaPolicyFilter', 'NumaNicLocalityFilter',
                     'NumaNodeLoadFilter'):
            self.assertIn(f"'{name}'", option('enabled_filters'))
        self.assertIn("'placement_filters.all_filters'",
                      option('available_filters'))
        self.assertIn("'nova.scheduler.filters.all_filters'",
                      option('available_filters'))
        self.assertIn("'placement_filters.all_weighers'",
                      option('weight_classes'))
        self.assertIn('Listening for NUMA host reports', log)

    def test_an_uploaded_image_becomes_active(self):
        path = resources.make_raw_image(os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'disk.raw'))
        image = resources.upload_image(self.session, path)
        self.addCleanup(self.session.delete,
                        self._url('glance', f'/v2/images/{image["id"]}'))
        self.assertEqual('active', image['status'])
        self.assertEqual(os.path.getsize(path), image['size'])

    def test_a_flat_provider_network_on_physnet1_with_a_subnet(self):
        network, subnet = resources.create_provider_network(
            self.session, name=f'flat-{uuid.uuid4().hex[:8]}')
        self.addCleanup(self.session.delete, self._url(
            'neutron', f'/v2.0/networks/{network["id"]}'))
        self.assertEqual('flat', network['provider:network_type'])
        self.assertEqual(lay.PHYSNET, network['provider:physical_network'])
        self.assertEqual(network['id'], subnet['network_id'])
        self.assertEqual(resources.DEFAULT_CIDR, subnet['cidr'])

    def test_our_api_answers_with_a_keystone_token(self):
        response = self.session.get(self._url('numa-policy', '/v1/hosts'))
        self.assertEqual(200, response.status_code, response.text)
        without_token = self.session.get(
            self._url('numa-policy', '/v1/hosts'), authenticated=False,
            raise_exc=False)
        self.assertEqual(401, without_token.status_code)

    def test_compute_config_names_the_guest_gateway(self):
        sections = self.cloud.compute_config()
        self.assertEqual(lay.transport_url(endpoints.GUEST_GATEWAY),
                         sections['DEFAULT']['transport_url'])
        for section in ('placement', 'neutron', 'glance', 'keystone'):
            self.assertIn(endpoints.GUEST_GATEWAY,
                          sections[section]['auth_url'])
            self.assertIn(endpoints.GUEST_GATEWAY,
                          sections[section]['endpoint_override'])
        self.assertEqual('numa_policy_reports',
                         sections['numa_policy_reports']['topic'])

    def test_keystone_hashes_passwords_with_the_fewest_rounds(self):
        hashes = infra.keystone_password_hashes()
        self.assertTrue(hashes)
        prefix = f'$2b${configs.PASSWORD_HASH_ROUNDS:02d}$'
        for password_hash in hashes:
            self.assertTrue(password_hash.startswith(prefix), password_hash)

    def test_its_databases_are_the_clouds_only(self):
        self.assertEqual(sorted(lay.db_name(name) for name in lay.DATABASES),
                         infra.existing_databases())
