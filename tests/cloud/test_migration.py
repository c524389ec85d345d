"""A ``home`` server moved between the two compute lab hosts by nova.

The cloud is tests/cloud/cloud.py's, shared by the modules of the test
process. Live migration goes libvirt to libvirt over the link between
the lab hosts (``[libvirt] live_migration_scheme = tcp``,
``live_migration_inbound_addr`` the destination's link address), as a
block migration: each lab host keeps its instances on its own tmpfs.
After each move, the destination's kernel shows the guest where the
domain XML there says, and that XML is a valid ``home`` placement for
the destination.
"""

import json
import uuid as uuid_mod

import testtools
from testtools import content

from nova_numa_policy.contracts import policy
from tests.cloud import cloud as cloud_mod
from tests.cloud import resources
from tests.cloud import test_servers
from tests.labhost import kernel

MIGRATION_TIMEOUT = 900
CLOUD = None


def setUpModule():
    global CLOUD
    CLOUD = cloud_mod.for_test_module()


class MigrationTest(testtools.TestCase):

    TOPOLOGY = test_servers.ServersTest.TOPOLOGY
    assert_kernel_follows = test_servers.ServersTest.assert_kernel_follows
    node_cpus = test_servers.ServersTest.node_cpus
    eventually = test_servers.ServersTest.eventually
    settled_view = test_servers.ServersTest.settled_view
    view = test_servers.ServersTest.view

    def setUp(self):
        super().setUp()
        if CLOUD is None:
            self.skipTest('no cloud')
        self.nova = CLOUD.nova()
        session = CLOUD.session()
        image_path = resources.make_raw_image(
            f'{CLOUD.workdir}/raw-migration.img')
        self.image = resources.upload_image(session, image_path,
                                            name='numa-cloud-migration')
        self.flavor = self.nova.create_flavor(
            f'numa-home-migration-{uuid_mod.uuid4().hex[:6]}',
            test_servers.VCPUS, test_servers.MEMORY_MB,
            test_servers.DISK_GB, {policy.POLICY_KEY: 'home'})
        server = self.nova.create_server(
            'numa-home-migration', self.flavor['id'], self.image['id'],
            'none')
        self.addCleanup(self._delete, server['id'])
        self.server = self.nova.wait_server(server['id'], ['ACTIVE'],
                                            test_servers.BOOT_TIMEOUT)
        self.assertEqual('ACTIVE', self.server['status'],
                         self.server.get('fault'))

    def _delete(self, server_id):
        self.nova.delete_server(server_id)
        resources.wait_for(
            lambda: self.nova.session.get(
                f'{self.nova.base}/servers/{server_id}',
                headers=self.nova.headers, raise_exc=False,
                connect_retries=cloud_mod.GET_RETRIES).status_code,
            lambda status: status == 404, f'server {server_id} deleted',
            300, interval=3)

    def _host(self, server):
        return server['OS-EXT-SRV-ATTR:host']

    def _other(self, host):
        (other,) = set(CLOUD.computes) - {host}
        return other

    def _migrations(self):
        return self.nova.get(
            f'/os-migrations?instance_uuid={self.server["id"]}')['migrations']

    def check_placed_on(self, server, host):
        """The guest runs on ``host`` as the XML there says, only there."""
        self.assertEqual(host, self._host(server))
        name = server['OS-EXT-SRV-ATTR:instance_name']
        source = CLOUD.computes[self._other(host)].lab
        self.assertNotIn(name, source.call('tests.cloud.inlab:domain_names'))
        lab = CLOUD.computes[host].lab
        domain = lab.call('tests.cloud.inlab:domain', name)
        self.assertIsNotNone(domain)
        self.assertTrue(domain['active'])
        self.addDetail(f'domain-xml-{host}', content.text_content(
            domain['xml']))
        tune = test_servers.domain_tune(domain['xml'])
        # home on the destination: strict on one of its nodes, the
        # threads on that node's CPUs.
        self.assertEqual('strict', tune.mode)
        self.assertEqual(1, len(tune.nodes))
        self.assertEqual(self.node_cpus(*tune.nodes), tune.cpus)
        guest = test_servers.Placed(server, CLOUD.computes[host], domain)
        view = self.settled_view(guest)
        self.addDetail(f'kernel-view-{host}', content.text_content(
            test_servers.describe(view)))
        self.assert_kernel_follows(view, tune)
        self.assertEqual(1.0, kernel.share_on(view.ram.pages, tune.nodes))

    def test_live_migration(self):
        source = self._host(self.server)
        destination = self._other(source)
        answer = self.nova.action(self.server['id'], {'os-migrateLive': {
            'host': None, 'block_migration': 'auto'}})
        self.assertEqual(202, answer.status_code, answer.text)
        server = resources.wait_for(
            lambda: self.nova.server(self.server['id']),
            lambda s: (s['status'] in ('ACTIVE', 'ERROR')
                       and not s.get('OS-EXT-STS:task_state')),
            'live migration done', MIGRATION_TIMEOUT, interval=3)
        self.addDetail('migrations', content.text_content(
            json.dumps(self._migrations(), indent=1)))
        self.assertEqual('ACTIVE', server['status'], server.get('fault'))
        self.assertEqual(
            ['completed'], [m['status'] for m in self._migrations()],
            CLOUD.diagnostics())
        self.check_placed_on(server, destination)

    def test_cold_migration(self):
        source = self._host(self.server)
        destination = self._other(source)
        answer = self.nova.action(self.server['id'], {'migrate': None})
        self.assertEqual(202, answer.status_code, answer.text)
        server = self.nova.wait_server(self.server['id'], ['VERIFY_RESIZE'],
                                       MIGRATION_TIMEOUT)
        self.addDetail('migrations', content.text_content(
            json.dumps(self._migrations(), indent=1)))
        self.assertEqual('VERIFY_RESIZE', server['status'],
                         f'{server.get("fault")}\n{CLOUD.diagnostics()}')
        answer = self.nova.action(self.server['id'], {'confirmResize': None})
        self.assertEqual(204, answer.status_code, answer.text)
        server = self.nova.wait_server(self.server['id'], ['ACTIVE'],
                                       MIGRATION_TIMEOUT)
        self.assertEqual('ACTIVE', server['status'], server.get('fault'))
        self.check_placed_on(server, destination)
