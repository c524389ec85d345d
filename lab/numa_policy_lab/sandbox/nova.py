"""nova in one process: API, conductor, scheduler, placement, computes.

nova's functional-test base class is where nova itself keeps the order in
which its fixtures must start (configuration, databases and cells, fake
RPC, placement, the services). Rather than re-create that order here, the
sandbox drives one instance of that class as a plain ``fixtures.Fixture``:
``setUp`` starts the cloud, ``cleanUp`` runs nova's own cleanups. Nothing
of the test runner is involved.

Must be imported after :func:`numa_policy_lab.sandbox.threading_mode`.
"""

import os
import sys
import sysconfig
import time

import fixtures
from nova.tests.fixtures import conf as nova_conf_fixture
from nova.tests.fixtures import libvirt as fakelibvirt
from nova.tests.functional.libvirt import base as libvirt_base
from oslo_config import cfg

from placement_filters import listener

CONF = cfg.CONF
OUR_FILTERS = ['NumaPolicyFilter', 'NumaNicLocalityFilter',
               'NumaNodeLoadFilter']


def installed_api_paste():
    """nova's api-paste.ini as pip installs it (``<prefix>/etc/nova``).

    nova's ConfFixture looks under its state path, the site-packages
    directory, where a pip installed nova does not have it.
    """
    for prefix in (sys.prefix, sysconfig.get_path('data')):
        path = os.path.join(prefix, 'etc', 'nova', 'api-paste.ini')
        if os.path.exists(path):
            return path
    raise RuntimeError(f"nova's api-paste.ini was not found under "
                       f"{sys.prefix}; is nova installed here?")


class _InstalledPaste(fixtures.Fixture):
    """Point nova's ConfFixture at the installed api-paste.ini meanwhile."""

    def _setUp(self):
        path = installed_api_paste()
        original = nova_conf_fixture.ConfFixture.setUp

        def setup(conf_fixture):
            original(conf_fixture)
            conf_fixture.conf.set_default('api_paste_config', path,
                                          group='wsgi')

        self.useFixture(fixtures.MonkeyPatch(
            'nova.tests.fixtures.conf.ConfFixture.setUp', setup))


class _Cloud(libvirt_base.ServersTestBase):
    """nova's libvirt functional base, configured for the sandbox."""

    ADMIN_API = True
    microversion = 'latest'

    def __init__(self, settings):
        super().__init__('never_run')
        self.settings = settings

    def never_run(self):
        """testtools needs a method name; the sandbox never runs it."""

    def _setup_scheduler_service(self):
        s = self.settings
        self.flags(available_filters=['nova.scheduler.filters.all_filters',
                                      'placement_filters.all_filters'],
                   enabled_filters=(CONF.filter_scheduler.enabled_filters
                                    + OUR_FILTERS),
                   weight_classes=['nova.scheduler.weights.all_weighers',
                                   'placement_filters.all_weighers'],
                   group='filter_scheduler')
        self.flags(no_report_mode='permissive',
                   group='numa_policy_scheduler')
        # The full script boots more cores than nova's default quota.
        self.flags(cores=-1, ram=-1, instances=-1, group='quota')
        # nova's own RPC and notifications stay on the fake bus; only our
        # reports go to the real broker, on a topic of this run.
        self.flags(transport_url=s.transport_url,
                   group='oslo_messaging_notifications')
        self.flags(topic=s.topic, group='numa_policy_reports')
        self.flags(listener_pool=s.scheduler_pool,
                   group='numa_policy_scheduler')
        return super()._setup_scheduler_service()


class NovaSettings:
    def __init__(self, transport_url, topic, scheduler_pool):
        self.transport_url = transport_url
        self.topic = topic
        self.scheduler_pool = scheduler_pool


class NovaCloud(fixtures.Fixture):
    """Started nova services; ``compute()`` adds fake libvirt computes."""

    def __init__(self, settings):
        super().__init__()
        self._settings = settings
        self.cloud = None

    def _setUp(self):
        self.useFixture(_InstalledPaste())
        cloud = _Cloud(self._settings)
        # Registered first, so it runs last: after the listener is gone.
        self.addCleanup(cloud.doCleanups)
        cloud.setUp()
        # Before nova's check for leaked pollers, which is one of its
        # cleanups: the scheduler's report listener is ours to stop.
        cloud.addCleanup(listener.RUNTIME.stop)
        self.cloud = cloud

    def scheduler_cache(self):
        """The scheduler's report cache; starts its listener if needed."""
        return listener.RUNTIME.get_cache()

    def start_compute(self, hostname, nodes, cores_per_node, memory_mb):
        info = fakelibvirt.HostInfo(
            cpu_nodes=nodes, cpu_sockets=1, cpu_cores=cores_per_node,
            cpu_threads=1, kB_mem=memory_mb * 1024)
        return self.cloud.start_compute(hostname=hostname, host_info=info)

    def create_flavor(self, name, vcpus, memory_mb, extra_specs):
        return self.cloud._create_flavor(
            name=name, vcpu=vcpus, memory_mb=memory_mb,
            extra_spec=dict(extra_specs) or None)

    def boot(self, name, flavor_id, timeout=60.0):
        """Boot a server; its API body once ACTIVE or ERROR.

        An ERROR (no valid host, say) is a result the summary reports,
        not a reason to stop the sandbox.
        """
        api = self.cloud.api
        created = api.post_server({'server': self.cloud._build_server(
            name=name, flavor_id=flavor_id, networks='none')})
        deadline = time.monotonic() + timeout
        server = api.get_server(created['id'])
        while server['status'] not in ('ACTIVE', 'ERROR'):
            if time.monotonic() > deadline:
                raise TimeoutError(f'{name} still {server["status"]} '
                                   f'after {timeout:.0f}s')
            time.sleep(0.1)
            server = api.get_server(created['id'])
        return server

    def nodename(self, hostname):
        return self.cloud.computes[hostname].driver._host.get_hostname()
