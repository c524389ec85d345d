"""What every fault scenario reads of the cloud: guests, reports, actions."""

import datetime
import json
import time
import urllib.parse
import uuid as uuid_mod

from testtools import content

from tests import base as test_base
from tests.cloud import cloud as cloud_mod
from tests.cloud import endpoints
from tests.cloud import plugin
from tests.cloud import resources
from tests.cloud import test_servers
from tests.labhost import kernel

# A report older than this is not heeded (devstack's NUMA_POLICY_REPORT_TTL
# in this cloud); the agents report every 5 s.
REPORT_TTL = plugin.REPORT_TTL
AGENT_PERIOD = 5
# Silence is seen once the last report is older than the TTL; a restarted
# agent reports within a period of its start, which takes a while under
# emulation (its imports, libvirt's connection, the first period).
STALE_TIMEOUT = REPORT_TTL + 60
BACK_TIMEOUT = 240
BOOT_TIMEOUT = test_servers.BOOT_TIMEOUT
DELETE_TIMEOUT = 300
# A nova-compute started again, or back on a restarted libvirtd, is up
# in nova's API once it reported its state (every 10 s) after its start.
COMPUTE_UP_TIMEOUT = 300
# What nova-compute puts on its resource provider while its service is
# disabled; nova's scheduler asks placement for providers without it.
DISABLED_TRAIT = 'COMPUTE_STATUS_DISABLED'
PLACEMENT_VERSION = '1.39'
ACTIONS_LIMIT = 1000
# Reports of a host read back from our API, at most (the API's limit).
HISTORY = 1000


def verdict(host, name):
    """Filter ``name``'s verdict on one host of our API's explanation."""
    return next(f for f in host['filters'] if f['name'] == name)


class FaultTestBase(test_base.TestCase):
    """One cloud for the module (``CLOUD``), flavors made on demand."""

    CLOUD = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if cls.CLOUD is None:
            cls.CLOUD = cloud_mod.for_test_module()
        cls.nova = cls.CLOUD.nova()
        cls.image = resources.raw_image(cls.CLOUD.session(),
                                        cls.CLOUD.workdir,
                                        f'numa-faults-{cls.__name__}')
        cls.suffix = uuid_mod.uuid4().hex[:6]
        cls._flavors = {}

    def flavor(self, specs):
        key = json.dumps(specs, sort_keys=True)
        if key not in self._flavors:
            self._flavors[key] = self.nova.create_flavor(
                f'numa-faults-{len(self._flavors)}-{self.suffix}',
                test_servers.VCPUS, test_servers.MEMORY_MB,
                test_servers.DISK_GB, specs)
        return self._flavors[key]

    # -- servers -------------------------------------------------------

    def create(self, name, specs, host=None):
        """A new server of ``specs``, deleted at the test's end.

        ``host``: the compute asked for, through the scheduler's filters.
        """
        server = self.nova.create_server(
            name, self.flavor(specs)['id'], self.image['id'], 'none',
            host=host)
        self.addCleanup(self.nova.delete_and_wait, server['id'],
                        DELETE_TIMEOUT)
        return server

    def settled(self, server, statuses=('ACTIVE', 'ERROR')):
        server = self.nova.wait_server(server['id'], list(statuses),
                                       BOOT_TIMEOUT)
        self.addDetail(f'server-{server["name"]}', content.text_content(
            json.dumps(server, indent=1, sort_keys=True)))
        return server

    def boot(self, name, specs, host=None):
        server = self.settled(self.create(name, specs, host))
        self.CLOUD.assert_active(self, server)
        return server

    def guest_state(self, server):
        """What the kernel says of a server's guest, to compare over time.

        The nodes holding its RAM, each vCPU thread's allowed CPUs, and
        the ``<numatune>`` and pins of its live domain XML.
        """
        compute = self.CLOUD.computes[server['OS-EXT-SRV-ATTR:host']]
        domain = compute.lab.call('tests.cloud.inlab:domain',
                                  server['OS-EXT-SRV-ATTR:instance_name'])
        view = kernel.guest_view(compute.lab.call(
            'tests.labhost.inside:kernel_view', domain['pid'],
            ram_bytes=test_servers.MEMORY_MB * 1024 * 1024))
        ram = view.ram
        return {'ram_nodes': sorted(n for n, p in ram.pages.items() if p),
                'vcpu_cpus': [sorted(c) for c in view.vcpu_cpus()],
                'tune': repr(test_servers.domain_tune(domain['xml']))}

    def agent_back(self, host):
        """``host``'s agent running (started if it is not) and heeded.

        A cleanup, whatever the test did: for the tests after it.
        """
        if not self.CLOUD.agent_running(host):
            self.CLOUD.start_agent(host)
        self.wait_freshness(host, True, BACK_TIMEOUT)

    def wait_compute_up(self, host):
        """Wait until nova has ``host``'s nova-compute enabled and up.

        And placement too: nova-compute takes the disabled trait off its
        resource provider after the service is enabled again, and until
        it has, nova's scheduler gets no allocation candidate there (seen:
        "No valid host" for a server asked onto the host a moment after
        its service showed enabled).
        """
        def service():
            return next(s for s in self.nova.compute_services()
                        if s['host'] == host)

        resources.wait_for(
            service, lambda s: s['status'] == 'enabled' and s['state'] == 'up',
            f'nova-compute of {host} enabled and up', COMPUTE_UP_TIMEOUT,
            interval=3)
        resources.wait_for(
            lambda: self.provider_traits(host),
            lambda traits: DISABLED_TRAIT not in traits,
            f'{DISABLED_TRAIT} off the provider of {host}',
            COMPUTE_UP_TIMEOUT, interval=3)

    def provider_traits(self, host):
        """The traits placement holds on ``host``'s resource provider."""
        session = self.CLOUD.session()
        version = {'OpenStack-API-Version': f'placement {PLACEMENT_VERSION}'}
        base_url = endpoints.url('placement')
        providers = session.get(f'{base_url}/resource_providers?name={host}',
                                headers=version).json()['resource_providers']
        (provider,) = providers
        return session.get(
            f'{base_url}/resource_providers/{provider["uuid"]}/traits',
            headers=version).json()['traits']

    # -- what our API says ----------------------------------------------

    def api(self, path):
        status, body = self.CLOUD.numa_api(path)
        self.assertEqual(200, status, body)
        return body

    def report_fresh(self, host):
        return self.api(f'/v1/hosts/{host}')['host']['report_fresh']

    def wait_freshness(self, host, fresh, timeout):
        """Seconds until our API says ``host``'s report is ``fresh``."""
        began = time.monotonic()
        resources.wait_for(lambda: self.report_fresh(host),
                           lambda seen: seen is fresh,
                           f'{host} report_fresh {fresh}', timeout,
                           interval=2)
        return time.monotonic() - began

    def wait_report_since(self, host, began, what):
        """Seconds until our API holds a report of ``host`` since ``began``.

        ``began``, a monotonic time: a report made after it (a restarted
        agent's, or one that crossed a restarted broker), not one fresh
        from before.
        """
        resources.wait_for(
            lambda: self.api(f'/v1/hosts/{host}')['host'],
            lambda h: h['report_age'] < time.monotonic() - began,
            what, BACK_TIMEOUT, interval=2)
        return time.monotonic() - began

    def longest_silence(self, host, since):
        """Seconds of the widest gap between two of ``host``'s reports.

        In our API's history of its reports, from the last one made
        before ``since`` (an aware datetime) on.
        """
        body = self.api(f'/v1/hosts/{host}/reports?limit={HISTORY}')
        made = sorted(datetime.datetime.fromisoformat(r['generated_at'])
                      for r in body['reports'])
        before = [m for m in made if m < since]
        made = before[-1:] + [m for m in made if m >= since]
        return max((b - a).total_seconds() for a, b in zip(made, made[1:]))

    def actions(self, uuid):
        body = self.api(f'/v1/actions?instance_uuid={uuid}'
                        f'&limit={ACTIONS_LIMIT}')
        return body['actions']

    def applied(self, uuid):
        """Our API's record of the instance, once its policy is applied."""
        def read():
            return self.CLOUD.numa_api(f'/v1/instances/{uuid}')

        status, body = resources.wait_for(
            read, lambda a: a[0] == 200 and a[1]['instance']['policy_applied'],
            f'instance {uuid} applied in the collector', BACK_TIMEOUT,
            interval=3)
        return body['instance']

    def explain(self, specs):
        query = urllib.parse.urlencode({
            'vcpus': test_servers.VCPUS, 'memory_mb': test_servers.MEMORY_MB,
            'extra_specs': json.dumps(specs)})
        return {host['host']: host
                for host in self.api(f'/v1/explain?{query}')['hosts']}

    def note(self, name, value):
        """A figure for the operator's page, in the test's details."""
        self.addDetail(name, content.text_content(str(value)))
        print(f'fault figure: {self.id()}: {name}: {value}', flush=True)
