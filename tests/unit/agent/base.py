"""A two-socket host: libvirt's test driver for guests, sysfs for NUMA."""

import os

import fixtures
import libvirt
from oslo_config import cfg

from nova_numa_policy.conf import loops as loops_conf
from nova_numa_policy.contracts import policy
from nova_numa_policy.loops import options as loop_options
from nova_numa_policy.virt import metadata

from agent.backend import calls
from agent.backend import connection
from agent.backend import libvirt_backend
from agent.backend import settings
from agent.sensors import discovery
from tests import base as test_base
from tests import fixtures as host_fixtures

INTERLEAVED = '11111111-1111-4111-8111-111111111111'
HOME_FROM_NOVA = '22222222-2222-4222-8222-222222222222'
NOVA_TOPOLOGY = '33333333-3333-4333-8333-333333333333'
SHUT_OFF = '44444444-4444-4444-8444-444444444444'
NO_POLICY = '55555555-5555-4555-8555-555555555555'


def record(value, mode=None, nodes=()):
    return metadata.render(metadata.PolicyRecord(
        policy.resolve({policy.POLICY_KEY: value}), mode, frozenset(nodes)))


def domains():
    return [
        host_fixtures.domain_xml(
            1, INTERLEAVED, policy=record('interleave', 'interleave', {0, 1}),
            numatune=('interleave', '0-1')),
        host_fixtures.domain_xml(2, HOME_FROM_NOVA, iothreads=1,
                                 nova_specs={policy.POLICY_KEY: 'home'}),
        host_fixtures.domain_xml(
            3, NOVA_TOPOLOGY, nova_topology=True,
            nova_specs={policy.POLICY_KEY: 'first-touch',
                        'hw:numa_nodes': '1'}),
        host_fixtures.domain_xml(4, SHUT_OFF, running=False,
                                 nova_specs={policy.POLICY_KEY: 'home'}),
        host_fixtures.domain_xml(5, NO_POLICY),
    ]


class FakeClock:
    """A monotonic clock a test moves by setting ``now``."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class TestDriverHostTest(test_base.TestCase):
    """Each test gets its own host file, sysfs tree and connection."""

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.root = host_fixtures.two_sockets_nic_on_node1(
            os.path.join(tmp, 'root'))
        self.uri = 'test://' + host_fixtures.write_host_xml(
            os.path.join(tmp, 'host.xml'), self.domains())
        self.connection = connection.Connection(self.uri)
        self.addCleanup(self.connection.close)
        # No wait for a first rate window: these tests look at other
        # things (NodeLoadWindowTest covers the window).
        self.backend = libvirt_backend.LibvirtBackend(
            self.connection, paths=settings.HostPaths(root=self.root),
            timing=settings.Timing(sleep=lambda seconds: None),
            share=settings.HostShare(
                uplinks=discovery.Uplinks({'physnet1': 'ens2f0'})))

    def domains(self):
        return domains()

    def dom(self, uuid):
        return self.connection.get().lookupByUUIDString(uuid)

    def vcpu_affinity(self, uuid):
        return [calls.cpus_from_map(m)
                for m in self.dom(uuid).vcpus()[1]]

    def numa_parameters(self, uuid):
        return self.dom(uuid).numaParameters(libvirt.VIR_DOMAIN_AFFECT_LIVE)


def loops_group(**options):
    """A ``[numa_policy_loops]`` group with ``options`` set."""
    conf = cfg.ConfigOpts()
    # A group of its own: every ConfigOpts registering loops_conf.GROUP
    # shares its table of options, overrides included, so an override
    # would outlive the test that set it.
    conf.register_opts(loops_conf.OPTS + loop_options.loop_opts(),
                       group=cfg.OptGroup(loops_conf.GROUP.name))
    conf([])
    for name, value in options.items():
        conf.set_override(name, value, group='numa_policy_loops')
    return conf.numa_policy_loops
