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

import json
import urllib.parse
import uuid as uuid_mod

from testtools import content

from nova_numa_policy.contracts import policy
from tests import base as test_base
from tests.cloud import cloud as cloud_mod
from tests.cloud import resources
from tests.cloud import test_servers
from tests.host import base

CLOUD = None
LOAD_FILTER = 'NumaNodeLoadFilter'
THRESHOLD = 0.8
# The busy compute's agent reports its spinners within a period or two;
# the scheduler's cache and our API read the same reports.
REPORT_TIMEOUT = 240
# A 2-vCPU server of the halting image, ACTIVE under emulation.
SCHEDULE_TIMEOUT = test_servers.BOOT_TIMEOUT
DELETE_TIMEOUT = 300
# A physnet no compute's uplink carries.
UNCARRIED_PHYSNET = 'physnet2'


def setUpModule():
    global CLOUD
    CLOUD = cloud_mod.for_test_module()


class SchedulerInTheCloudTest(test_base.TestCase):

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
        """The host nova gives a new server of the flavor; then deleted.

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
        return placed['OS-EXT-SRV-ATTR:host']

    def busy_and_quiet(self, hosts):
        busy = self.load_verdict(hosts[self.busy])
        quiet = self.load_verdict(hosts[self.quiet])
        return (not busy['passed'] and busy['numbers']['load'] > THRESHOLD
                and quiet['passed'])

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
            nic = next(f for f in host['filters']
                       if f['name'] == 'NumaNicLocalityFilter')
            # Both have an uplink node with room: locality is no refusal.
            self.assertTrue(nic['passed'], nic)
        refused = self.load_verdict(hosts[self.busy])
        self.assertGreater(refused['numbers']['load'], THRESHOLD)
        self.assertEqual(self.quiet, self.scheduled_host('home-nic'))

    def test_required_nic_locality_refuses_hosts_without_the_physnets_uplink(
            self):
        """A port on a physnet no compute's uplink carries: no NIC-local node.

        Our API's explanation of ``home`` with
        ``hw:numa_nic_locality=required`` for an instance with a port on
        ``physnet2``: each agent reports its uplink on physnet1 only, so
        the NIC filter refuses every host, naming the physnet.
        ``required`` is the flavor's, the operator's, word: a refusal is
        what it asks for. Asked of nova's scheduler, the same refusal
        needs nova to know the port's physnet (doc/source/scheduler.rst,
        "Which physnet"); tests/functional/scheduler/test_placement.py
        shows it there.
        """
        hosts = self.explain('home-nic', [UNCARRIED_PHYSNET])
        self.addDetail('explain-home-nic-uncarried', content.text_content(
            json.dumps(hosts, indent=1, sort_keys=True)))
        self.assertEqual(set(CLOUD.computes), set(hosts))
        for name, host in hosts.items():
            nic = next(f for f in host['filters']
                       if f['name'] == 'NumaNicLocalityFilter')
            self.assertFalse(nic['passed'], nic)
            self.assertEqual('no NUMA node is local to the uplink',
                             nic['reason'])
            self.assertEqual([UNCARRIED_PHYSNET],
                             nic['numbers']['physnets'])
            self.assertFalse(host['passed'], name)
        # The same flavor for a port on physnet1 passes both.
        hosts = self.explain('home-nic', ['physnet1'])
        for name, host in hosts.items():
            nic = next(f for f in host['filters']
                       if f['name'] == 'NumaNicLocalityFilter')
            self.assertTrue(nic['passed'], nic)
