"""nova's scheduler, with our filters and weighers, choosing in the cloud.

A real load, spinners on every CPU of one compute's lab host, keeps that
compute's nodes busy as its own agent measures them; the other compute
runs as it is. The scheduler runs at the default load threshold (0.8),
on the agents' reports, and the flavors have 2 vCPUs: as many as a lab
host's node has CPUs. Each test reads our API's explanation first, so
that what the scheduler chose is compared with what it was told, then
lets nova schedule a server and reads where it went. A scheduled server
is deleted as soon as nova has given it a host: the choice is the test,
not the boot (tests/cloud/test_servers.py boots and checks servers).
"""

import ast
import json
import re
import urllib.parse
import uuid as uuid_mod

from testtools import content

from nova_numa_policy.contracts import policy
from tests import base as test_base
from tests.cloud import cloud as cloud_mod
from tests.cloud import layout as lay
from tests.cloud import resources
from tests.cloud import test_servers
from tests.host import base
from tests.labhost import kernel

CLOUD = None
LOAD_FILTER = 'NumaNodeLoadFilter'
LOAD_WEIGHER = 'NumaNodeLoadWeigher'
THRESHOLD = 0.8
# The busy compute's agent reports its spinners within a period or two;
# the scheduler's cache and our API read the same reports.
REPORT_TIMEOUT = 240
# A 2-vCPU server of the halting image, ACTIVE under emulation.
SCHEDULE_TIMEOUT = test_servers.BOOT_TIMEOUT
DELETE_TIMEOUT = 300


def setUpModule():
    global CLOUD
    CLOUD = cloud_mod.for_test_module()


class _CloudSchedulingBase(test_base.TestCase):
    """The flavors, the image and the helpers of the scheduling tests."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if CLOUD is None:
            raise cls.skipException('no cloud')
        cls.nova = CLOUD.nova()
        cls.image = resources.raw_image(CLOUD.session(), CLOUD.workdir,
                                        'numa-cloud-scheduling')
        suffix = uuid_mod.uuid4().hex[:6]
        cls.specs = {'interleave': {policy.POLICY_KEY: 'interleave'},
                     'plain': {},
                     'home': {policy.POLICY_KEY: 'home'},
                     'home-nic': {policy.POLICY_KEY: 'home',
                                  policy.NIC_LOCALITY_KEY: 'required'}}
        cls.flavors = {
            name: cls.nova.create_flavor(
                f'numa-scheduling-{name}-{suffix}', test_servers.VCPUS,
                test_servers.MEMORY_MB, test_servers.DISK_GB, specs)
            for name, specs in cls.specs.items()}
        cls.busy, cls.quiet = sorted(CLOUD.computes)

    def keep_busy(self, host, cpus):
        """Spinners on ``cpus`` of ``host``'s lab host, to the test's end."""
        lab = CLOUD.computes[host].lab
        base.keep_busy(lab, cpus)
        self.addCleanup(lab.run, base.STOP_BUSY)

    def keep_busy_whole(self, host):
        self.keep_busy(host, range(CLOUD.computes[host].topology.cpus))

    def explain(self, flavor_name, physnets=()):
        query = urllib.parse.urlencode([
            ('vcpus', test_servers.VCPUS),
            ('memory_mb', test_servers.MEMORY_MB),
            ('extra_specs', json.dumps(self.specs[flavor_name])),
            *(('physnet', name) for name in physnets)])
        status, body = CLOUD.numa_api(f'/v1/explain?{query}')
        self.assertEqual(200, status, body)
        return {host['host']: host for host in body['hosts']}

    @staticmethod
    def load_verdict(host):
        return next(f for f in host['filters'] if f['name'] == LOAD_FILTER)

    def explained_when(self, flavor_name, done, what):
        """Our API's explanation once ``done`` holds of it."""
        hosts = resources.wait_for(lambda: self.explain(flavor_name), done,
                                   what, REPORT_TIMEOUT, interval=5)
        self.addDetail(f'explain-{flavor_name}', content.text_content(
            json.dumps(hosts, indent=1, sort_keys=True)))
        return hosts

    def scheduled_host(self, flavor_name):
        return self.scheduled(flavor_name)['OS-EXT-SRV-ATTR:host']

    def scheduled(self, flavor_name):
        """A new server of the flavor once ACTIVE, deleted at the end.

        Deleted once ACTIVE: a delete while the compute still builds it
        takes nova's rarer path, where one failed call to placement (a
        connection reset, seen once through the lab's forward) leaves the
        server in ERROR.
        """
        server = self.nova.create_server(
            f'numa-scheduling-{flavor_name}',
            self.flavors[flavor_name]['id'], self.image['id'], 'none')
        self.addCleanup(self.nova.delete_and_wait, server['id'],
                        DELETE_TIMEOUT)
        placed = self.nova.wait_server(server['id'], ['ACTIVE'],
                                       SCHEDULE_TIMEOUT)
        self.addDetail('server', content.text_content(
            json.dumps(placed, indent=1, sort_keys=True)))
        CLOUD.assert_active(self, placed)
        return placed

    def guest_ram_pages(self, server):
        """The kernel's count of the server's RAM pages per node.

        numa_maps of its QEMU process in the lab host nova placed it on,
        the mapping of the flavor's memory size.
        """
        lab = CLOUD.computes[server['OS-EXT-SRV-ATTR:host']].lab
        domain = lab.call('tests.cloud.inlab:domain',
                          server['OS-EXT-SRV-ATTR:instance_name'])
        view = kernel.guest_view(lab.call(
            'tests.labhost.inside:kernel_view', domain['pid'],
            ram_bytes=test_servers.MEMORY_MB * 1024 * 1024))
        self.addDetail('numa_maps', content.text_content(view.numa_maps))
        return view.ram.pages

    def busy_and_quiet(self, hosts):
        busy = self.load_verdict(hosts[self.busy])
        quiet = self.load_verdict(hosts[self.quiet])
        return (not busy['passed'] and busy['numbers']['load'] > THRESHOLD
                and quiet['passed'])


class SchedulerInTheCloudTest(_CloudSchedulingBase):
    """Our filters and weighers at their defaults, beside real loads."""

    def test_a_policy_server_avoids_the_compute_a_real_load_keeps_busy(self):
        self.keep_busy_whole(self.busy)
        hosts = self.explained_when(
            'interleave', self.busy_and_quiet,
            f'{self.busy} refused for its load, {self.quiet} passed')
        refused = self.load_verdict(hosts[self.busy])
        # The reason names the node and the numbers that decided.
        self.assertEqual('every node that holds the instance is measured '
                         'over the load threshold', refused['reason'])
        self.assertIn(refused['node'], range(
            CLOUD.computes[self.busy].topology.nodes))
        self.assertEqual(
            (test_servers.VCPUS, THRESHOLD, CLOUD.computes[
                self.busy].topology.cpus_per_node),
            (refused['numbers']['vcpus'], refused['numbers']['threshold'],
             refused['numbers']['cpus']))
        self.assertLess(refused['numbers']['headroom'], 0)
        chosen = self.load_verdict(hosts[self.quiet])
        self.assertEqual('a node measured under the load threshold holds '
                         'the instance', chosen['reason'])
        self.assertLessEqual(chosen['numbers']['load'], THRESHOLD)
        # Our load weigher ranks the quiet compute first too.
        weights = {host: hosts[host]['weights'][LOAD_WEIGHER]
                   for host in (self.busy, self.quiet)}
        self.assertGreater(weights[self.quiet], weights[self.busy], weights)
        self.assertEqual(self.quiet, self.scheduled_host('interleave'))

    def test_a_plain_server_is_not_refused_on_the_busy_compute(self):
        self.keep_busy_whole(self.busy)
        hosts = self.explained_when(
            'plain', lambda hosts: self.load_verdict(
                hosts[self.busy])['numbers'].get('load', 0) > THRESHOLD,
            f'{self.busy} measured busy')
        verdict = self.load_verdict(hosts[self.busy])
        self.assertTrue(verdict['passed'], verdict)
        self.assertIn('plain flavors are not filtered on load',
                      verdict['reason'])
        self.assertTrue(hosts[self.busy]['passed'])

    def test_required_nic_locality_goes_where_the_nic_s_node_is_quiet(self):
        """Each compute has one busy node; only the uplink's node counts.

        Node 1 is kept busy on both. On the first compute that is its
        uplink's node, on the second (its NIC on node 0) it is not: the
        load alone does not tell them apart, where the NIC sits does.
        """
        topologies = {host: CLOUD.computes[host].topology
                      for host in (self.busy, self.quiet)}
        self.assertEqual({self.busy: 1, self.quiet: 0},
                         {host: t.nic_node for host, t in topologies.items()})
        for host, topology in topologies.items():
            self.keep_busy(host, topology.node_cpus(1))
        # Without the NIC requirement every node counts: once the first
        # compute's reports show node 0 quiet (an earlier test's load
        # gone) and node 1 busy, its best node is node 0.
        self.explained_when(
            'home', lambda hosts: self.load_verdict(hosts[self.busy])[
                'node'] == 0 and self.load_verdict(hosts[self.busy])[
                'passed'], f"{self.busy}'s node 0 quiet, its best for home")

        def nic_node_decides(hosts):
            refused = self.load_verdict(hosts[self.busy])
            chosen = self.load_verdict(hosts[self.quiet])
            return (not refused['passed'] and refused['node'] == 1
                    and chosen['passed'] and chosen['node'] == 0)

        hosts = self.explained_when(
            'home-nic', nic_node_decides,
            f"{self.busy}'s uplink node busy, {self.quiet}'s quiet")
        for host in hosts.values():
            # Both have an uplink node with room: locality is no refusal.
            self.assertTrue(self.nic_verdict(host)['passed'], host)
        refused = self.load_verdict(hosts[self.busy])
        self.assertGreater(refused['numbers']['load'], THRESHOLD)
        chosen = self.load_verdict(hosts[self.quiet])
        server = self.scheduled('home-nic')
        self.assertEqual(self.quiet, server['OS-EXT-SRV-ATTR:host'])
        # Where the explanation said, as the kernel counts the RAM.
        pages = self.guest_ram_pages(server)
        self.assertGreater(pages.get(chosen['node'], 0), 0, pages)
        self.assertEqual({chosen['node']}, set(pages), pages)

    def test_required_nic_locality_refuses_hosts_without_the_physnets_uplink(
            self):
        """A port on a physnet no compute's uplink carries: no valid host.

        ``required`` is the flavor's, the operator's, word: a refusal is
        what it asks for. Our API's explanation of ``home`` with
        ``hw:numa_nic_locality=required`` for a port on ``physnet2``
        refuses every host, naming the physnet (each agent reports its
        uplink on physnet1 only); for a port on physnet1 it passes both.
        Then nova itself: a server of that flavor on a physnet2 network
        is refused by nova's scheduler, our NIC filter the one that
        removed every host. nova knows the port's physnet because its
        ``[neutron]`` user may read it (tests/cloud/configs.py,
        doc/source/scheduler.rst "Which physnet").
        """
        hosts = self.explain('home-nic', [lay.UNCARRIED_PHYSNET])
        self.addDetail('explain-home-nic-uncarried', content.text_content(
            json.dumps(hosts, indent=1, sort_keys=True)))
        self.assertEqual(set(CLOUD.computes), set(hosts))
        for name, host in hosts.items():
            nic = self.nic_verdict(host)
            self.assertFalse(nic['passed'], nic)
            self.assertEqual('no NUMA node is local to the uplink',
                             nic['reason'])
            self.assertEqual([lay.UNCARRIED_PHYSNET],
                             nic['numbers']['physnets'])
            self.assertFalse(host['passed'], name)
        hosts = self.explain('home-nic', [lay.PHYSNET])
        for host in hosts.values():
            self.assertTrue(self.nic_verdict(host)['passed'], host)

        server = self.server_on_uncarried_physnet('home-nic')
        self.assertEqual('ERROR', server['status'], server)
        self.assertIsNone(server.get('OS-EXT-SRV-ATTR:host'), server)
        self.assertIn('No valid host', server['fault']['message'])
        self.assertEqual(
            f'NumaNicLocalityFilter: (start: {len(CLOUD.computes)}, end: 0)',
            self.filter_that_removed_every_host(server['id']))

    @staticmethod
    def nic_verdict(host):
        return next(f for f in host['filters']
                    if f['name'] == 'NumaNicLocalityFilter')

    def server_on_uncarried_physnet(self, flavor_name):
        """A server of the flavor on a physnet2 network, once scheduled.

        The network is the admin project's own, not shared: tempest's
        servers, which name no network, never see two.
        """
        network, _subnet = resources.create_provider_network(
            CLOUD.session(), f'numa-scheduling-{lay.UNCARRIED_PHYSNET}',
            physnet=lay.UNCARRIED_PHYSNET, shared=False)
        self.addCleanup(resources.delete_network, CLOUD.session(),
                        network['id'])
        server = self.nova.create_server(
            f'numa-scheduling-{flavor_name}-{lay.UNCARRIED_PHYSNET}',
            self.flavors[flavor_name]['id'], self.image['id'],
            [{'uuid': network['id']}])
        self.addCleanup(self.nova.delete_and_wait, server['id'],
                        DELETE_TIMEOUT)
        server = self.nova.wait_server(server['id'], ['ACTIVE'],
                                       SCHEDULE_TIMEOUT)
        self.addDetail('server', content.text_content(
            json.dumps(server, indent=1, sort_keys=True)))
        return server

    def filter_that_removed_every_host(self, server_id):
        """The last entry of nova-scheduler's filter results for a server.

        nova logs, at INFO, "Filtering removed all hosts for the request
        with instance ID '<id>'. Filter results: [...]": each filter with
        the hosts it started and ended with, the last the one that left
        none.
        """
        with open(CLOUD.control.layout.log('nova-scheduler')) as log:
            # The INFO line; at DEBUG nova also logs the hosts each
            # filter kept, another shape.
            line = next(line for line in log
                        if 'Filtering removed all hosts' in line
                        and server_id in line and '(start: ' in line)
        self.addDetail('nova-scheduler', content.text_content(line))
        results = ast.literal_eval(
            re.search(r'Filter results: (\[.*\])', line).group(1))
        return results[-1]


# What an operator sets on an aggregate of the computes so that the
# node-load weigher decides among the hosts our filters pass (nova's
# aggregate multipliers: doc/source/scheduler.rst).
OPERATOR_MULTIPLIER = 10.0
WEIGHER_SCORE = re.compile(
    r'(\w+): score \(multiplier \* weight\) (\{.*?\})(?: \S+ \S+:\d+)?$')


class OperatorMultiplierTest(_CloudSchedulingBase):
    """The node-load weigher decides where the operator's multiplier says.

    With the default multiplier (1.0) our weigher is one vote among
    nova's: among hosts our filters all pass, nova's own weighers may
    outvote it (``lab-compute-2`` has twice the vCPUs, which nova's
    CPUWeigher prefers). An operator who wants the quietest node to
    decide raises ``node_load_weight_multiplier``, here on an aggregate
    of both computes. Loads, real spinners: one CPU of every node of
    ``lab-compute-2`` (each node about half busy, under the threshold)
    and one CPU of ``lab-compute-1``'s node 0, so that its node 1, idle,
    is the one node with the most headroom. The server of ``home`` then
    lands on ``lab-compute-1``, and nova's log shows our weigher's
    multiplied score deciding against its CPUWeigher's. The host is the
    scheduler's to choose; the node, the driver's at boot
    (decisions/enforcement.py, select_home_nodes), by the node loads the
    agent's last report gave the scheduler (agent/service/handoff.py):
    the explanation's best node. In ``tox -e cloud-all`` (a boot and an
    aggregate more than CI's subset has room for).
    """

    def aggregate_with_multiplier(self, hosts, multiplier):
        aggregate = self.nova.post('/os-aggregates', {'aggregate': {
            'name': f'numa-weigh-{uuid_mod.uuid4().hex[:6]}'}}).json()[
            'aggregate']
        path = f"/os-aggregates/{aggregate['id']}"
        self.addCleanup(self.nova.delete, path)
        for host in hosts:
            self.nova.post(f'{path}/action', {'add_host': {'host': host}})
            self.addCleanup(self.nova.post, f'{path}/action',
                            {'remove_host': {'host': host}})
        self.nova.post(f'{path}/action', {'set_metadata': {'metadata': {
            'node_load_weight_multiplier': str(multiplier)}}})

    def weigher_scores(self, since):
        """{weigher: {host: (multiplier, weight)}} nova logged after ``since``.

        ``since``: the scheduler log's size before the request; the
        tests run one at a time, so what follows is this request's.
        """
        with open(CLOUD.control.layout.log('nova-scheduler')) as log:
            log.seek(since)
            lines = log.read().splitlines()
        scores = {}
        for line in lines:
            match = WEIGHER_SCORE.search(line)
            if match:
                scores[match.group(1)] = {
                    host: tuple(float(x) for x in text.split(' * '))
                    for (host, _node), text in ast.literal_eval(
                        match.group(2)).items()}
        self.addDetail('weigher-scores', content.text_content(
            json.dumps({k: {h: list(v) for h, v in by.items()}
                        for k, by in scores.items()}, indent=1)))
        return scores

    def test_the_operators_multiplier_lets_our_weigher_decide(self):
        light, heavy = sorted(CLOUD.computes)
        topology = CLOUD.computes[heavy].topology
        self.keep_busy(heavy, [topology.node_cpus(node)[0]
                               for node in range(topology.nodes)])
        self.keep_busy(light, CLOUD.computes[light].topology.node_cpus(0)[:1])
        self.aggregate_with_multiplier(sorted(CLOUD.computes),
                                       OPERATOR_MULTIPLIER)

        def ours_prefers_the_light_one(hosts):
            verdicts = {h: self.load_verdict(hosts[h]) for h in hosts}
            weights = {h: hosts[h]['weights'][LOAD_WEIGHER] for h in hosts}
            return (all(v['passed'] for v in verdicts.values())
                    and verdicts[light]['node'] == 1
                    and verdicts[heavy]['numbers']['load'] > 0.3
                    and weights[light] > weights[heavy])

        hosts = self.explained_when(
            'home', ours_prefers_the_light_one,
            f'both computes passing, {light} node 1 the quietest')
        with open(CLOUD.control.layout.log('nova-scheduler')) as log:
            since = log.seek(0, 2)
        server = self.scheduled('home')
        self.assertEqual(light, server['OS-EXT-SRV-ATTR:host'])
        scores = self.weigher_scores(since)
        ours, cpu = scores[LOAD_WEIGHER], scores['CPUWeigher']
        # Our weigher, at the aggregate's multiplier, for the light one;
        # nova's CPUWeigher for the heavy one, which has more vCPUs.
        self.assertEqual((OPERATOR_MULTIPLIER, 1.0), ours[light])
        self.assertEqual(0.0, ours[heavy][1])
        self.assertGreater(cpu[heavy][1], cpu[light][1])
        # The light compute's best node, as the explanation said, holds
        # the guest's memory, as the kernel counts its pages.
        self.assertEqual(1, self.load_verdict(hosts[light])['node'])
        pages = self.guest_ram_pages(server)
        self.assertEqual({1}, set(pages), pages)
