"""Where the control plane keeps its files, and the names it owns.

Pure values only: nothing here touches the disk or a server, so every
other module (and a compute's configuration) can ask for a path or a
URL without a running cloud.
"""

import dataclasses
import os
import sys

from tests.cloud import endpoints

REGION = 'RegionOne'
# The lab's cloud listens on loopback only and lives as long as a test
# run: fixed passwords cost nothing there and let a second process (the
# CLI's ``down``, a compute's configuration) know them without a lookup.
ADMIN_PASSWORD = 'numa-cloud-admin'
SERVICE_PASSWORD = 'numa-cloud-service'
SERVICE_PROJECT = 'service'
DOMAIN = 'Default'
RABBIT_USER = 'guest'
RABBIT_PASSWORD = 'guest'
MYSQL_PORT = 3306
# Every database of the cloud has this prefix: start() drops and creates
# only these, never another database on the machine's MariaDB.
DB_PREFIX = 'numa_cloud_'
DATABASES = ('keystone', 'placement', 'nova_api', 'nova_cell0',
             'nova_cell1', 'glance', 'neutron', 'numa_policy')
PHYSNET = 'physnet1'
# A physnet neutron knows (ML2's flat networks) and no compute's uplink
# carries: a port there binds nowhere, and a flavor requiring NIC
# locality finds no NIC-local node (tests/cloud/test_scheduling.py).
UNCARRIED_PHYSNET = 'physnet2'
# What the cloud tier keeps after a run (tempest's summary, Horizon's
# screenshots), at the top of the source tree.
ARTIFACTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), '.artifacts', 'cloud')
# nova-scheduler maps computes that lab hosts start later on its own:
# short, so a test waits seconds, not nova's default of never.
DISCOVER_HOSTS_INTERVAL = 10


def db_name(service):
    return DB_PREFIX + service


def db_url(service):
    # No password: the machine's MariaDB lets root in from 127.0.0.1.
    return (f'mysql+pymysql://root@{endpoints.HOST_ADDRESS}:{MYSQL_PORT}/'
            f'{db_name(service)}?charset=utf8')


def transport_url(address=endpoints.HOST_ADDRESS):
    return (f'rabbit://{RABBIT_USER}:{RABBIT_PASSWORD}@{address}:'
            f'{endpoints.PORTS["rabbitmq"]}/{endpoints.RABBIT_VHOST}')


def keystone_url(address=endpoints.HOST_ADDRESS):
    return endpoints.url('keystone', address)


@dataclasses.dataclass(frozen=True)
class Layout:
    """The work directory's tree: configuration, data, logs, state."""

    workdir: str

    def _under(self, *parts):
        return os.path.join(self.workdir, *parts)

    @property
    def etc(self):
        return self._under('etc')

    @property
    def logs(self):
        return self._under('logs')

    @property
    def data(self):
        return self._under('data')

    def conf_dir(self, service):
        return self._under('etc', service)

    def conf(self, service, name=None):
        return os.path.join(self.conf_dir(service),
                            name or f'{service}.conf')

    def log(self, name):
        return os.path.join(self.logs, f'{name}.log')

    def data_dir(self, service):
        return self._under('data', service)

    @property
    def openrc(self):
        return self._under('admin-openrc')

    @property
    def state(self):
        # The foreground process's pid, for ``python -m tests.cloud down``.
        return self._under('control.json')

    @property
    def numa_policy_conf(self):
        return self.conf('nova-numa-policy')


def bin_path(name):
    """A console script of the environment this Python runs in."""
    return os.path.join(os.path.dirname(sys.executable), name)


def share_path(*parts):
    """A file the packages install under the environment's prefix.

    nova, neutron and glance ship their paste pipelines as data files
    (``<prefix>/etc/<project>/...``), not inside the Python package.
    """
    return os.path.join(sys.prefix, 'etc', *parts)
