"""Our filters and weighers only read the request nova gives them.

nova passes every filter and weigher the same RequestSpec and keeps using
it after the scheduler answers: NUMATopologyFilter and
PciPassthroughFilter read its physnets and PCI requests in the same
pass, and the conductor reads its networks on every move operation. A
plugin that changed any of it, or only marked it changed, would change
what nova does next; these tests hold every field as it was.
"""

import datetime

from oslo_config import cfg
from oslo_config import fixture as config_fixture

from nova import exception as nova_exception
from nova import objects
from nova.scheduler import weights as nova_weights
from nova.tests.unit.scheduler import fakes

from nova_numa_policy import conf as numa_conf  # noqa: F401  registers opts
import placement_filters
from placement_filters import cache as cache_mod
from placement_filters import listener
from tests import base as test_base
from tests.unit.scheduler import reports

INSTANCE = '0f4ab4ba-1d64-4b4c-9e1c-1b0e2b8f6a11'
PORT = '5a1f0c3e-7f55-4d1e-9a3c-0c2b7e0f6d21'
PHYSNET = 'physnet1'
# One flavor per path through our plugins: each filter and weigher asks,
# nova owns the topology, nothing asked.
FLAVORS = {
    'nic_required': {'hw:numa_policy': 'interleave',
                     'hw:numa_nic_locality': 'required'},
    'nova_topology': {'hw:numa_nodes': '1'},
    'contradiction': {'hw:numa_policy': 'interleave',
                      'hw:cpu_policy': 'dedicated'},
    'plain': {},
}
HOSTS = ('with_report', 'without_report')


def sriov_request(extra_specs):
    """A RequestSpec as nova builds one for an SR-IOV guest on a physnet."""
    spec = objects.RequestSpec(
        instance_uuid=INSTANCE,
        flavor=objects.Flavor(vcpus=2, memory_mb=2048,
                              extra_specs=dict(extra_specs)),
        image=objects.ImageMeta(properties=objects.ImageMetaProps(
            hw_vif_model='virtio')),
        numa_topology=None, scheduler_hints={},
        network_metadata=objects.NetworkMetadata(physnets={PHYSNET},
                                                 tunneled=False),
        requested_networks=objects.NetworkRequestList(objects=[
            objects.NetworkRequest(port_id=PORT)]),
        pci_requests=objects.InstancePCIRequests(
            instance_uuid=INSTANCE, requests=[objects.InstancePCIRequest(
                count=1, spec=[{'physical_network': PHYSNET}],
                request_id=PORT, requester_id=PORT)]))
    spec.obj_reset_changes(recursive=True)
    return spec


class PluginsOnlyReadTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        objects.register_all()
        self.useFixture(config_fixture.Config(cfg.CONF))
        cache = cache_mod.ReportCache(
            max_hosts=10, max_report_bytes=1 << 20, io_rate=500, ttl=180)
        listener.RUNTIME.install(cache)
        self.addCleanup(listener.RUNTIME.stop)
        cache.ingest(reports.make_payload(
            host=HOSTS[0], nics=((0, PHYSNET),),
            generated_at=datetime.datetime.now(datetime.timezone.utc)))
        self.hosts = [fakes.FakeHostState(name, name, {'aggregates': []})
                      for name in HOSTS]

    def _schedule(self, spec):
        for cls in placement_filters.all_filters():
            try:
                list(cls().filter_all(self.hosts, spec))
            except nova_exception.NoValidHost:
                pass  # a contradictory request's refusal: checked below
        weighers = (placement_filters.all_weighers()
                    + placement_filters.combined_weighers())
        nova_weights.HostWeightHandler().get_weighed_objects(
            [cls() for cls in weighers], self.hosts, spec)

    def test_every_field_is_as_it_was(self):
        for name, extra_specs in FLAVORS.items():
            spec = sriov_request(extra_specs)
            before = spec.obj_to_primitive()
            self._schedule(spec)
            self.assertEqual(before, spec.obj_to_primitive(), name)

    def test_nothing_is_marked_changed(self):
        for name, extra_specs in FLAVORS.items():
            spec = sriov_request(extra_specs)
            self._schedule(spec)
            self.assertEqual(set(), spec.obj_what_changed(), name)
