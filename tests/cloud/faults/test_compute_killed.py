"""nova-compute killed on the source while it live-migrates a policy guest.

A ``home`` server is live-migrated; once libvirt on the source runs the
migration job, the source's nova-compute is killed (SIGKILL). libvirt
carries the job on or drops it without nova; nova-compute is started
again and clears the migration as its start does. Wherever the guest
runs in the end (one host only), its policy holds there as the kernel
shows: memory and threads on one node of that host; on the destination,
that host's agent has handled it as an arrival. The source then takes
a new policy server. Where nova's database says the guest is, and where
it runs, are both recorded: nova's start does not reconcile the two.
"""

import time

from testtools import content

from tests.cloud import cloud as cloud_mod
from tests.cloud import compute as compute_mod
from tests.cloud.faults import base
from tests.cloud import resources
from tests.cloud import test_servers
from tests.labhost import kernel

HOME = {'hw:numa_policy': 'home'}
MIGRATION_START_TIMEOUT = 300
# The job goes on in libvirt without nova: as long as a migration.
JOB_END_TIMEOUT = 900
# nova-compute's start under emulation, up to its instances' handling.
START_TIMEOUT = 600
ARRIVAL_TIMEOUT = 300
# A migration that nova-compute's start found unfinished ends so.
UNFINISHED = ('queued', 'preparing', 'running')


class ComputeKilledMidMigrationTest(base.FaultTestBase):

    def test_the_policy_holds_wherever_the_guest_is_left(self):
        server = self.boot('numa-faults-migrating', HOME)
        source = server['OS-EXT-SRV-ATTR:host']
        (destination,) = set(self.CLOUD.computes) - {source}
        name = server['OS-EXT-SRV-ATTR:instance_name']
        self.applied(server['id'])
        self.addCleanup(self.leave_no_orphan, server['id'], name)
        self.addCleanup(self.compute_running, source)

        answer = self.nova.action(server['id'], {'os-migrateLive': {
            'host': None, 'block_migration': 'auto'}})
        self.assertEqual(202, answer.status_code, answer.text)
        job = self.CLOUD.computes[source].lab.call(
            'tests.cloud.inlab:kill_once_migrating', name,
            compute_mod.NOVA_COMPUTE_PATTERN.strip("'"),
            MIGRATION_START_TIMEOUT, timeout=MIGRATION_START_TIMEOUT + 60)
        self.addDetail('job-at-the-kill', content.text_content(repr(job)))
        self.assertIsNotNone(job, 'no migration job on the source')
        self.assertEqual(1, job['killed'], job)
        self.assertTrue(job['job_running'], f'killed after the job: {job}')
        self.note('migration data left when nova-compute was killed '
                  '(bytes)', job['data_remaining'])
        self.assertFalse(self.CLOUD.computes[source].running())
        killed = time.monotonic()

        running = resources.wait_for(
            lambda: self.running_on(name),
            lambda hosts: len(hosts) == 1 and not any(self.jobs(name)),
            'the guest running on one host, no job left', JOB_END_TIMEOUT,
            interval=3)
        (host,) = running
        self.note('the guest runs on', 'destination' if host == destination
                  else 'source')
        self.note('seconds from nova-compute killed to the job ended',
                  round(time.monotonic() - killed))

        self.CLOUD.computes[source].start()
        started = time.monotonic()
        server = resources.wait_for(
            lambda: (self.nova.server(server['id']),
                     self.migration(server['id'])),
            lambda seen: not seen[0].get('OS-EXT-STS:task_state')
            and seen[1]['status'] not in UNFINISHED,
            "nova-compute's start clearing the migration", START_TIMEOUT,
            interval=3)[0]
        migration = self.migration(server['id'])
        self.addDetail('migration', content.text_content(repr(migration)))
        self.note("nova's server after the source's start",
                  f"{server['status']} on {server['OS-EXT-SRV-ATTR:host']}"
                  f", migration {migration['status']}")
        self.note('seconds from nova-compute started to the migration '
                  'cleared', round(time.monotonic() - started))

        if host == destination:
            lab = self.CLOUD.computes[host].lab
            resources.wait_for(
                lambda: lab.call('tests.cloud.inlab:arrivals_handled',
                                 cloud_mod.AGENT_STATE_DIR),
                lambda handled: handled.get(server['id'])
                == running[host]['id'],
                f"the arrival handled by {host}'s agent", ARRIVAL_TIMEOUT)
        self.assert_home_on(host, name)
        # Our API tells the operator where it runs, whatever nova says.
        resources.wait_for(
            lambda: self.api(f'/v1/instances/{server["id"]}')['instance'],
            lambda told: told['host'] == host and told['policy_applied'],
            f'our API placing it on {host}, its policy applied',
            base.BACK_TIMEOUT, interval=3)

        self.wait_compute_up(source)
        began = time.monotonic()
        self.boot('numa-faults-after-compute', HOME, host=source)
        self.note('seconds from the source up in nova to a new policy '
                  'server ACTIVE there', round(time.monotonic() - began))

    # -- reading the computes -------------------------------------------

    def running_on(self, name):
        """{host: domain} of the computes running domain ``name``."""
        found = {}
        for host, compute in self.CLOUD.computes.items():
            domain = compute.lab.call('tests.cloud.inlab:domain', name)
            if domain and domain['active']:
                found[host] = domain
        return found

    def jobs(self, name):
        return [compute.lab.call('tests.cloud.inlab:job_running', name)
                for compute in self.CLOUD.computes.values()]

    def migration(self, server_id):
        (latest, *_) = sorted(
            self.nova.get(f'/os-migrations?instance_uuid={server_id}')
            ['migrations'], key=lambda m: m['id'], reverse=True)
        return latest

    def assert_home_on(self, host, name):
        """``home`` on ``host``: memory and threads on one of its nodes."""
        compute = self.CLOUD.computes[host]
        domain = compute.lab.call('tests.cloud.inlab:domain', name)
        tune = test_servers.domain_tune(domain['xml'])
        self.addDetail(f'domain-xml-{host}', content.text_content(
            domain['xml']))
        self.assertIn(tune.mode, ('strict', 'restrictive'))
        self.assertEqual(1, len(tune.nodes), tune)
        (node,) = tune.nodes
        cpus = frozenset(compute.topology.node_cpus(node))
        view = kernel.guest_view(compute.lab.call(
            'tests.labhost.inside:kernel_view', domain['pid'],
            ram_bytes=test_servers.MEMORY_MB * 1024 * 1024))
        self.assertEqual([cpus] * test_servers.VCPUS,
                         [frozenset(c) for c in view.vcpu_cpus()])
        self.assertEqual(1.0, kernel.share_on(view.ram.pages, tune.nodes))

    # -- cleanups ---------------------------------------------------------

    def compute_running(self, host):
        """nova-compute started again, whatever happened, for later tests."""
        compute = self.CLOUD.computes[host]
        if not compute.running():
            compute.start()

    def leave_no_orphan(self, server_id, name):
        """Remove the guest from every host but the one nova records.

        Run before nova's delete: a copy nova lost track of would keep
        its memory and CPUs there for the rest of the cloud's tests.
        """
        recorded = self.nova.server(server_id)['OS-EXT-SRV-ATTR:host']
        for host, compute in self.CLOUD.computes.items():
            if host == recorded:
                continue
            was = compute.lab.call('tests.cloud.inlab:remove', name)
            if was:
                self.note(f'a copy nova does not record, removed from '
                          f'{host}', was)
