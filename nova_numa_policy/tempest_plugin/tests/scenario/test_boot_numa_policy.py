"""Boot a guest with a NUMA policy and look at what really happened: where
nova placed it, what the agent reported through the collector API, and
the memory mode in the guest's libvirt domain XML.

One guest for the class, booted once: each test only reads what
happened to it, and a boot costs a minute where computes emulate their
CPUs.
"""

from tempest.common import compute
from tempest.common import waiters
from tempest import config
from tempest.lib.common.utils import test_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc
from tempest.scenario import manager

from nova_numa_policy.tempest_plugin.services import numa_policy_client
from nova_numa_policy.tempest_plugin.tests import base
from nova_numa_policy.tempest_plugin import whitebox

CONF = config.CONF
POLICY = 'interleave'


class BootNumaPolicyTest(manager.ScenarioTest):

    credentials = ['primary', 'admin']

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        base.skip_unless_deployed(cls.skipException)

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.admin_flavors_client = cls.os_admin.flavors_client
        cls.admin_servers_client = cls.os_admin.servers_client
        cls.numa_client = numa_policy_client.NumaPolicyClient(
            cls.os_admin.auth_provider,
            **config.service_client_config('numa-policy'))

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        cls.server = cls._boot(POLICY)

    @classmethod
    def _boot(cls, policy):
        """An ACTIVE server of a flavor asking for ``policy``.

        Returns the admin view, which has the host and the libvirt name.
        Deleted, then its flavor, once the class's tests are done.
        """
        flavor = base.create_flavor_like(
            cls.addClassResourceCleanup, cls.admin_flavors_client,
            CONF.compute.flavor_ref, {base.POLICY_KEY: policy})
        servers_client = cls.os_primary.servers_client
        server, _ = compute.create_test_server(
            cls.os_primary, tenant_network=cls.get_tenant_network(),
            flavor=flavor['id'], wait_until='ACTIVE')
        cls.addClassResourceCleanup(
            waiters.wait_for_server_termination, servers_client,
            server['id'])
        cls.addClassResourceCleanup(
            test_utils.call_and_ignore_notfound_exc,
            servers_client.delete_server, server['id'])
        return cls.admin_servers_client.show_server(server['id'])['server']

    def _reported_instance(self, uuid, done):
        """Poll the collector API until ``done(instance)``; the instance.

        Fails with the last state seen: a missing report and a wrong
        applied policy call for different fixes.
        """
        instance = None

        def _check():
            nonlocal instance
            try:
                instance = self.numa_client.show_instance(uuid)['instance']
            except lib_exc.NotFound:
                return False
            return done(instance)

        if not test_utils.call_until_true(
                _check, CONF.numa_policy.report_timeout,
                CONF.numa_policy.report_interval):
            self.fail(f'after {CONF.numa_policy.report_timeout} s the '
                      f'collector API shows instance {uuid} as {instance}')
        return instance

    def _node_count(self, host):
        return self.numa_client.show_host(host)['host']['node_count']

    def _skip_unless_policy_can_apply(self, host):
        if not CONF.numa_policy.driver_extension:
            raise self.skipException(
                'an interleaved guest needs its memory mode at boot, which '
                'only the libvirt driver extension writes '
                '([numa_policy] driver_extension = False)')
        nodes = self._node_count(host)
        if nodes < 2:
            raise self.skipException(
                f'compute host {host} reports {nodes} NUMA node; '
                f'interleaving needs at least two')

    @decorators.idempotent_id('017b9ae5-6a20-472a-9fc6-60dfd9539253')
    def test_agent_reports_the_instance_where_nova_placed_it(self):
        server = self.server
        host = server['OS-EXT-SRV-ATTR:host']
        instance = self._reported_instance(
            server['id'], lambda i: i['requested_policy'] == POLICY)
        self.assertEqual(host, instance['host'])
        listed = self.numa_client.list_instances(host=host)['instances']
        self.assertIn(server['id'], [i['uuid'] for i in listed])
        self.assertIn(host, [h['host'] for h in
                             self.numa_client.list_hosts()['hosts']])

    @decorators.idempotent_id('5a5863f9-f736-4ea5-b33c-9ee404163095')
    def test_agent_reports_the_policy_applied(self):
        server = self.server
        self._skip_unless_policy_can_apply(server['OS-EXT-SRV-ATTR:host'])
        instance = self._reported_instance(
            server['id'], lambda i: i['applied_policy'] == POLICY)
        self.assertTrue(instance['policy_applied'])

    @decorators.idempotent_id('1ef97dcc-70b5-43c4-9dfb-9ff0154f6f94')
    def test_domain_xml_interleaves_memory(self):
        reason = whitebox.ssh_unconfigured_reason()
        if reason:
            raise self.skipException(reason)
        server = self.server
        host = server['OS-EXT-SRV-ATTR:host']
        self._skip_unless_policy_can_apply(host)
        xml = whitebox.ComputeHost(host).domain_xml(
            server['OS-EXT-SRV-ATTR:instance_name'])
        mode, nodes = whitebox.memory_tune(xml)
        self.assertEqual('interleave', mode, xml)
        # Interleaving over the host's nodes, or over half of them for a
        # guest large enough to be kept to an idle half ([numa_policy]
        # large_guest_share, hosts of four nodes or more).
        count = self._node_count(host)
        allowed = {count, count // 2} if count >= 4 else {count}
        self.assertIn(len(nodes or ()), allowed, xml)
