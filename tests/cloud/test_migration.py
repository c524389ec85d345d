"""Servers with a port on physnet1 moved between the two computes by nova.

The cloud is tests/cloud/cloud.py's, shared by the modules of the test
process. Live migration goes libvirt to libvirt over the link between
the lab hosts (``[libvirt] live_migration_scheme = tcp``,
``live_migration_inbound_addr`` the destination's link address), as a
block migration: each lab host keeps its instances on its own tmpfs.
After each move, the destination's kernel shows the guest where the
domain XML there says, and that XML is a valid ``home`` placement for
the destination. When the node the source chose on the destination (blind
to its load) is busy, the destination's agent re-homes the guest on
arrival, and the kernel there shows it moved. A resize that is reverted
brings the guest back to a valid placement on its first host. After
every move the server's port is bound on the host the guest runs on. A
``home`` server that requires NIC locality, live-migrated, is on the
destination's uplink node (node 1 of one compute, node 0 of the other),
as the kernel there shows.
"""

import json
import uuid as uuid_mod

from testtools import content

from lxml import etree

from nova_numa_policy.contracts import policy
from nova_numa_policy.virt import metadata
from tests import base as test_base
from tests.cloud import cloud as cloud_mod
from tests.cloud import resources
from tests.cloud import test_servers
from tests.host import base
from tests.labhost import kernel

MIGRATION_TIMEOUT = 900
# How long the destination's agent may take to re-home an arrival: a
# few of its 5 s periods (two samples of the guest's own vCPU load
# first), and the page migration under emulation.
REHOME_TIMEOUT = 300
# neutron's binding follows a move within its agents' loops (5 s).
PORT_TIMEOUT = 120
# A migration's states once it failed (nova/objects/migration.py).
FAILED = ('error', 'failed', 'cancelled')
CLOUD = None


def setUpModule():
    global CLOUD
    CLOUD = cloud_mod.for_test_module()


class _MovesTestBase(test_base.TestCase):
    """A server of ``SPECS`` with a port on physnet1, and its moves."""

    SPECS = {policy.POLICY_KEY: 'home'}
    NAME = 'numa-home-migration'
    TOPOLOGY = test_servers.ServersTest.TOPOLOGY
    assert_kernel_follows = test_servers.ServersTest.assert_kernel_follows
    assert_interleaved = test_servers.ServersTest.assert_interleaved
    node_cpus = test_servers.ServersTest.node_cpus
    eventually = test_servers.ServersTest.eventually
    settled_view = test_servers.ServersTest.settled_view
    view = test_servers.ServersTest.view

    # One server for the class, moved by each test from wherever the
    # last one left it: a boot and a delete cost minutes under TCG.
    server = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if CLOUD is None:
            raise cls.skipException('no cloud')
        cls.nova = CLOUD.nova()
        cls.image = resources.raw_image(CLOUD.session(), CLOUD.workdir,
                                        f'{cls.NAME}-image')
        cls.flavor = cls.nova.create_flavor(
            f'{cls.NAME}-{uuid_mod.uuid4().hex[:6]}',
            test_servers.VCPUS, test_servers.MEMORY_MB,
            test_servers.DISK_GB, cls.SPECS)
        cls.networks = [
            {'uuid': resources.provider_network(CLOUD.session())['id']}]

    @classmethod
    def tearDownClass(cls):
        if cls.server is not None:
            cls._delete(cls.server['id'])
        super().tearDownClass()

    def setUp(self):
        """The class's server, ACTIVE on its flavor; a new one if not.

        A test that failed half-way may leave it in ERROR, resized, or
        awaiting a confirm: the next test then boots a server of its own
        rather than fail for its predecessor.
        """
        super().setUp()
        cls = type(self)
        if cls.server is not None:
            now = self.nova.server(cls.server['id'])
            if (now['status'] != 'ACTIVE' or now.get('OS-EXT-STS:task_state')
                    or now['flavor']['original_name'] != self.flavor['name']):
                cls._delete(now['id'])
                cls.server = None
        if cls.server is None:
            server = self.nova.create_server(
                self.NAME, self.flavor['id'], self.image['id'],
                self.networks)
            cls.server = self.nova.wait_server(server['id'], ['ACTIVE'],
                                               test_servers.BOOT_TIMEOUT)
        self.server = self.nova.server(cls.server['id'])
        CLOUD.assert_active(self, self.server)

    @classmethod
    def _delete(cls, server_id):
        cls.nova.delete_server(server_id)
        CLOUD.wait_all_deleted(cls.nova, [server_id])

    def _host(self, server):
        return server['OS-EXT-SRV-ATTR:host']

    def _other(self, host):
        (other,) = set(CLOUD.computes) - {host}
        return other

    def _busy(self, host, node):
        """Keep ``node``'s CPUs of ``host``'s lab host busy until the end."""
        lab = CLOUD.computes[host].lab
        self.TOPOLOGY = CLOUD.computes[host].topology
        base.keep_busy(lab, self.node_cpus(node))
        self.addCleanup(lab.run, base.STOP_BUSY)

    def _arrival_lines(self, server, lines=4):
        """The agent's last lines on ``server``'s arrival, or on its plan."""
        host = CLOUD.computes[self._host(server)]
        mine = [line for line in CLOUD.agent_log(host).splitlines()
                if server['id'] in line and (
                    'arrived by live migration' in line
                    or 'arrival:' in line or 'ERROR' in line
                    or 'WARNING' in line)]
        return '\n'.join(mine[-lines:]) or 'nothing on it'

    def _domain(self, server):
        host = self._host(server)
        return CLOUD.computes[host].lab.call(
            'tests.cloud.inlab:domain',
            server['OS-EXT-SRV-ATTR:instance_name'])

    def _act(self, body):
        """Ask nova for ``body``'s move; the migrations made before it."""
        before = {m['id'] for m in self._migrations()}
        answer = self.nova.action(self.server['id'], body)
        self.assertEqual(202, answer.status_code, answer.text)
        return before

    def _moved(self, done_status, before):
        """The server once its migration ended, and that migration.

        The migration is the first one not in ``before`` (the server's
        earlier moves). Done or failed, whichever: a failed move leaves
        the server ACTIVE where it was, which a wait for the done state
        alone would take to its timeout to see.
        """
        def new():
            fresh = [m for m in self._migrations() if m['id'] not in before]
            return fresh[0] if fresh else {}

        migration = resources.wait_for(
            new, lambda m: m.get('status') in (done_status,) + FAILED,
            f'migration {done_status} or failed', MIGRATION_TIMEOUT,
            interval=3)
        self.addDetail('migrations', content.text_content(
            json.dumps(self._migrations(), indent=1)))
        self.assertEqual(done_status, migration['status'],
                         CLOUD.diagnostics())
        return self.nova.wait_server(
            self.server['id'],
            ['ACTIVE'] if done_status == 'completed' else ['VERIFY_RESIZE'],
            MIGRATION_TIMEOUT)

    def _live_migrate(self):
        """The server once live-migrated and its arrival handled there.

        The destination's agent takes the source's blind choice again in
        its first period after the arrival, and may move the guest: the
        kernel is read once it has.
        """
        before = self._act({'os-migrateLive': {
            'host': None, 'block_migration': 'auto'}})
        server = self._moved('completed', before)
        CLOUD.assert_active(self, server)
        lab = CLOUD.computes[self._host(server)].lab
        # This arrival's domain: the guest may have arrived here before.
        arrived = self._domain(server)['id']
        self.eventually(
            lambda: lab.call('tests.cloud.inlab:arrivals_handled',
                             cloud_mod.AGENT_STATE_DIR),
            lambda handled: handled.get(server['id']) == arrived,
            'the arrival handled by the destination\'s agent',
            REHOME_TIMEOUT)
        return server

    def _cold_migrate(self):
        """The server once cold-migrated and the resize confirmed."""
        before = self._act({'migrate': None})
        server = self._moved('finished', before)
        self.assertEqual('VERIFY_RESIZE', server['status'],
                         f'{server.get("fault")}\n{CLOUD.diagnostics()}')
        answer = self.nova.action(self.server['id'], {'confirmResize': None})
        self.assertEqual(204, answer.status_code, answer.text)
        server = self.nova.wait_server(self.server['id'], ['ACTIVE'],
                                       MIGRATION_TIMEOUT)
        CLOUD.assert_active(self, server)
        return server

    def _migrations(self):
        return self.nova.get(
            f'/os-migrations?instance_uuid={self.server["id"]}')['migrations']

    def check_placed_on(self, server, host):
        """The guest runs on ``host`` as the XML there says, only there.

        ``home`` there: bound to one node (``strict`` as booted, or
        ``restrictive`` as a live migration's source writes it so that
        the destination may re-home it), its threads on that node's
        CPUs, all of its memory on it.
        """
        self.assertEqual(host, self._host(server))
        # The computes differ: the checks read this one's shape.
        self.TOPOLOGY = CLOUD.computes[host].topology
        name = server['OS-EXT-SRV-ATTR:instance_name']
        # Defined but shut off there while a resize awaits its confirm.
        left = CLOUD.computes[self._other(host)].lab.call(
            'tests.cloud.inlab:domain', name)
        self.assertFalse(left and left['active'], 'still running there')
        lab = CLOUD.computes[host].lab
        domain = lab.call('tests.cloud.inlab:domain', name)
        self.assertIsNotNone(domain)
        self.assertTrue(domain['active'])
        self.addDetail(f'domain-xml-{host}', content.text_content(
            domain['xml']))
        tune = test_servers.domain_tune(domain['xml'])
        # home on the destination: strict on one of its nodes, the
        # threads on that node's CPUs.
        self.assertIn(tune.mode, ('strict', 'restrictive'))
        self.assertEqual(1, len(tune.nodes))
        self.assertEqual(self.node_cpus(*tune.nodes), tune.cpus)
        for pinned in tune.vcpu_pins:
            self.assertEqual(self.node_cpus(*tune.nodes), pinned)
        guest = test_servers.Placed(server, CLOUD.computes[host], domain)
        view = self.settled_view(guest)
        self.addDetail(f'kernel-view-{host}', content.text_content(
            test_servers.describe(view)))
        self.assert_kernel_follows(
            view, tune, test_servers.domain_iothreads(domain['xml']))
        self.assertEqual(1.0, kernel.share_on(view.ram.pages, tune.nodes))
        self.assert_port_bound_on(server, host)
        return tune

    def assert_port_bound_on(self, server, host):
        """neutron has the server's port bound on ``host`` (Open vSwitch).

        Bound, not ACTIVE: after a live migration the destination's agent
        reported the port up while its binding there was still the
        inactive one ("not bound to the agent host", in neutron's log),
        and not again once nova activated it, so the port stayed DOWN
        (seen in this cloud, doc/source/cloud.rst).
        """
        port = self.eventually(
            lambda: resources.port_of(CLOUD.session(), server['id']),
            lambda p: p['binding:host_id'] == host
            and p['binding:vif_type'] == 'ovs',
            f'its port bound on {host}', PORT_TIMEOUT,
            describe=lambda p: repr({k: p[k] for k in (
                'binding:host_id', 'status', 'binding:vif_type')}))
        self.addDetail(f'port-{host}', content.text_content(
            json.dumps(port, indent=1, sort_keys=True)))


class MigrationTest(_MovesTestBase):
    """A ``home`` server, moved by each test from where the last left it."""

    def test_live_migration(self):
        source = self._host(self.server)
        destination = self._other(source)
        server = self._live_migrate()
        self.check_placed_on(server, destination)

    def blind_choice(self, host):
        """The node a live migration's source picks for a guest on ``host``.

        It sees neither load nor free memory there, only the nodes nova
        records: every node empty, so the one with the most memory in
        MiB, as nova records a cell's (the lowest-numbered among equals).
        The emulated nodes get the same RAM, of which the kernel keeps
        different amounts for itself (seen: node 0 had more).
        """
        cells = CLOUD.computes[host].lab.call(
            'tests.cloud.inlab:cells_memory_kib')
        self.addDetail(f'cells-{host}', content.text_content(repr(cells)))
        return max(sorted(int(node) for node in cells),
                   key=lambda node: cells[str(node)] // 1024)

    def test_live_migration_to_a_busy_node_is_rehomed_on_arrival(self):
        """The source's blind choice, busy on arrival, is re-taken there.

        The source chooses the destination's home node as if the host
        were empty (:meth:`blind_choice`) and says so in our record
        (``chosen-by="migration-source"``). That node of the destination
        is kept busy from before the migration, so the destination's
        agent must move the guest to the other node, memory and threads,
        within a few periods (the record keeps the source's choice).
        """
        destination = self._other(self._host(self.server))
        blind = self.blind_choice(destination)
        self._busy(destination, blind)
        server = self._live_migrate()
        self.assertEqual(destination, self._host(server))
        arrived = self._domain(server)['xml']
        record = metadata.find_record(etree.fromstring(arrived.encode()))
        self.addDetail('arrived-record', content.text_content(repr(record)))
        self.assertTrue(record.chosen_by_source, record)
        self.assertEqual(frozenset({blind}), record.nodes,
                         "the source's blind choice on the destination")

        def now():
            return test_servers.domain_tune(self._domain(server)['xml'])

        def said(tune):
            # What the agent decided, in its words: the cause, in CI's
            # short log, where the kernel's view alone shows no move.
            return f'{tune!r}; the agent: {self._arrival_lines(server)}'

        # Another node of the destination, one (home's), whichever.
        tune = self.eventually(
            now, lambda t: len(t.nodes) == 1 and blind not in t.nodes,
            f'the guest re-homed off node {blind} on arrival',
            REHOME_TIMEOUT, describe=said)
        (other,) = tune.nodes
        self.addDetail('rehomed-tune', content.text_content(repr(tune)))
        self.check_placed_on(server, destination)
        # Each action the agent carried out, told to our collector (the
        # policy's enforcement took the arrival's decision).

        def actions():
            status, body = CLOUD.numa_api(
                f'/v1/actions?instance_uuid={self.server["id"]}')
            self.assertEqual(200, status, body)
            return body['actions']

        moved = f'arrival: home moves to nodes [{other}]'
        told = self.eventually(
            actions, lambda listed: [
                a for a in listed if a['host'] == destination
                and a['outcome'] == 'applied' and moved in a['reason']],
            f'the agent\'s {moved!r} action in our API', REHOME_TIMEOUT)
        self.addDetail('actions', content.text_content(
            json.dumps(told, indent=1, sort_keys=True)))

    def test_cold_migration(self):
        source = self._host(self.server)
        destination = self._other(source)
        server = self._cold_migrate()
        self.check_placed_on(server, destination)

    def test_resize_revert(self):
        """Resized to the other host, then reverted: home again where it was.

        nova does not resize onto the same host by default: the resize
        moves the guest, and its revert gives it back its first host and
        flavor, where its placement must still be a valid home.
        """
        source = self._host(self.server)
        bigger = self.nova.create_flavor(
            f'numa-home-bigger-{uuid_mod.uuid4().hex[:6]}',
            test_servers.VCPUS, test_servers.MEMORY_MB * 2,
            test_servers.DISK_GB, {policy.POLICY_KEY: 'home'})
        before = self._act({'resize': {'flavorRef': bigger['id']}})
        server = self._moved('finished', before)
        self.assertEqual('VERIFY_RESIZE', server['status'],
                         f'{server.get("fault")}\n{CLOUD.diagnostics()}')
        self.check_placed_on(server, self._other(source))
        answer = self.nova.action(self.server['id'], {'revertResize': None})
        self.assertEqual(202, answer.status_code, answer.text)
        server = self.nova.wait_server(self.server['id'], ['ACTIVE'],
                                       MIGRATION_TIMEOUT)
        CLOUD.assert_active(self, server)
        self.assertEqual(self.flavor['name'],
                         server['flavor']['original_name'])
        self.check_placed_on(server, source)


class NicLocalMigrationTest(_MovesTestBase):
    """``home`` with ``hw:numa_nic_locality=required``, live-migrated.

    The computes' uplinks sit on different nodes (node 1 of the first,
    node 0 of the second): after the move the guest must be on the
    destination's uplink node, memory and threads, as the kernel there
    shows, and its port bound there. Live, since there the destination's
    agent must re-home what the source wrote; a cold move boots the
    guest anew on its destination, as its first boot was (the servers'
    NIC test, and ``MigrationTest``'s cold move with a port).
    """

    SPECS = {policy.POLICY_KEY: 'home',
             policy.NIC_LOCALITY_KEY: 'required'}
    NAME = 'numa-home-nic-migration'

    def assert_on_the_nic_node(self, server, host):
        nic_node = CLOUD.computes[host].topology.nic_node

        def now():
            return test_servers.domain_tune(self._domain(server)['xml'])

        self.eventually(now, lambda t: t.nodes == {nic_node},
                        f"the guest on {host}'s uplink node {nic_node}",
                        REHOME_TIMEOUT, describe=repr)
        tune = self.check_placed_on(server, host)
        self.assertEqual(frozenset({nic_node}), tune.nodes)

    def test_live_migration_lands_it_on_the_destination_s_uplink_node(self):
        first = self._host(self.server)
        self.assert_on_the_nic_node(self.server, first)
        server = self._live_migrate()
        self.assert_on_the_nic_node(server, self._other(first))
