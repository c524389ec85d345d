"""Trait sync against a real placement service, in process.

Placement runs from its own code and database behind wsgi-intercept
(nova's functional PlacementFixture); the agent talks to it through a
keystoneauth adapter as it does in production, only with the endpoint
given instead of found in a catalog.
"""

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from nova.tests.functional import fixtures as func_fixtures
from oslo_utils import uuidutils

from nova_numa_policy.contracts import backend

from agent.service import traits
from tests import base as test_base

HOST = 'cn1.example.org'
CAPS = frozenset({backend.CAP_VCPU_PINNING, backend.CAP_LIVE_NODESET})
OURS = ['CUSTOM_NUMA_POLICY_FIRST_TOUCH', 'CUSTOM_NUMA_POLICY_HOME',
        'CUSTOM_NUMA_POLICY_INTERLEAVE', 'CUSTOM_NUMA_POLICY_LIVE_NODESET']


class RacingAdapter:
    """An adapter whose first traits PUT loses a race to another writer."""

    def __init__(self, adapter, compete):
        self._adapter = adapter
        self._compete = compete
        self.puts = 0

    def request(self, url, method, **kwargs):
        if method == 'PUT' and url.endswith('/traits'):
            self.puts += 1
            self._compete()
        return self._adapter.request(url, method, **kwargs)


class PlacementTraitsTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        placement = self.useFixture(func_fixtures.PlacementFixture())
        self.adapter = ks_adapter.Adapter(
            ks_session.Session(auth=None), service_type='placement',
            endpoint_override=placement.endpoint,
            additional_headers={'x-auth-token': placement.token})
        self.rp = uuidutils.generate_uuid()
        self.call('POST', '/resource_providers', 200,
                  json={'name': HOST, 'uuid': self.rp})

    def call(self, method, url, expected, **kwargs):
        response = self.adapter.request(url, method, microversion='1.20',
                                        raise_exc=False, **kwargs)
        self.assertEqual(expected, response.status_code, response.text)
        return response.json() if response.text else None

    def provider_traits(self):
        return self.call('GET', f'/resource_providers/{self.rp}/traits', 200)

    def put_traits(self, names):
        current = self.provider_traits()
        self.call('PUT', f'/resource_providers/{self.rp}/traits', 200,
                  json={'traits': names, 'resource_provider_generation':
                        current['resource_provider_generation']})

    def external(self, *names):
        for name in names:
            if name.startswith('CUSTOM_'):
                self.call('PUT', f'/traits/{name}', 201)
        self.put_traits(list(names))

    def test_ours_are_added_and_external_ones_kept(self):
        self.external('CUSTOM_RACK_7', 'HW_CPU_X86_AVX2')
        self.assertTrue(traits.PlacementTraits(self.adapter).sync(HOST,
                                                                  CAPS))
        self.assertEqual(
            sorted(['CUSTOM_RACK_7', 'HW_CPU_X86_AVX2'] + OURS),
            sorted(self.provider_traits()['traits']))

    def test_our_stale_traits_are_removed(self):
        self.external('CUSTOM_RACK_7', 'CUSTOM_NUMA_POLICY_AUTO')
        syncer = traits.PlacementTraits(self.adapter)
        syncer.sync(HOST, CAPS)
        self.assertEqual(sorted(['CUSTOM_RACK_7'] + OURS),
                         sorted(self.provider_traits()['traits']))
        # Live nodeset lost (libvirt reconnected to a driver without it).
        syncer.sync(HOST, CAPS - {backend.CAP_LIVE_NODESET})
        self.assertNotIn('CUSTOM_NUMA_POLICY_LIVE_NODESET',
                         self.provider_traits()['traits'])

    def test_a_concurrent_change_is_reread_not_overwritten(self):
        self.external('CUSTOM_RACK_7')
        racing = RacingAdapter(
            self.adapter,
            # nova-compute adds a trait between our read and our write.
            lambda: racing.puts == 1 and self.put_traits(
                self.provider_traits()['traits'] + ['COMPUTE_NET_VIF_MODEL_'
                                                    'VIRTIO']))
        self.assertTrue(traits.PlacementTraits(racing).sync(HOST, CAPS))
        self.assertEqual(2, racing.puts)
        self.assertEqual(
            sorted(['CUSTOM_RACK_7', 'COMPUTE_NET_VIF_MODEL_VIRTIO'] + OURS),
            sorted(self.provider_traits()['traits']))

    def test_conflicts_are_retried_a_bounded_number_of_times(self):
        for n in (1, 2, 3):
            self.call('PUT', f'/traits/CUSTOM_RACE_{n}', 201)
        racing = RacingAdapter(
            self.adapter, lambda: self.put_traits(
                [f'CUSTOM_RACE_{racing.puts}']))
        syncer = traits.PlacementTraits(racing, max_conflicts=3)
        self.assertFalse(syncer.sync(HOST, CAPS))
        self.assertEqual(3, racing.puts)
        self.assertEqual(['CUSTOM_RACE_3'], self.provider_traits()['traits'])

    def test_unchanged_traits_cost_no_request(self):
        counting = RacingAdapter(self.adapter, lambda: None)
        syncer = traits.PlacementTraits(counting)
        self.assertTrue(syncer.sync(HOST, CAPS))
        self.assertTrue(syncer.sync(HOST, CAPS))
        self.assertEqual(1, counting.puts)

    def test_an_unregistered_host_is_not_an_error(self):
        self.assertFalse(traits.PlacementTraits(self.adapter).sync(
            'not-yet-registered', CAPS))
