"""The one-shot steps before the services start, grouped in chains.

A :class:`Chain` is a list of steps run one after the other, then the
services that need them; independent chains run side by side (the
schema syncs are mostly waits on MariaDB's DDL). ``after`` names the
chains that must be complete first: the services on the broker wait
for the cloud's virtual host.
"""

import dataclasses
import grp
import os
import pwd

from tests.cloud import infra
from tests.cloud import layout as lay
from tests.cloud import plugin
from tests.cloud import services


@dataclasses.dataclass(frozen=True)
class Chain:
    """Steps (:class:`services.Spec`) then services (names), in order.

    ``then`` names an action of the control plane to run once the
    services answer (the chain is complete only then).
    """

    name: str
    steps: tuple = ()
    services: tuple = ()
    after: tuple = ()
    then: str = None


def _manage(name, tool, conf, *args):
    return services.step(name, [lay.bin_path(tool), '--config-file', conf,
                                *args])


def keystone_steps(layout):
    conf = layout.conf('keystone')
    # keystone-manage chowns the key repositories to this account.
    user = pwd.getpwuid(os.getuid()).pw_name
    group = grp.getgrgid(os.getgid()).gr_name
    owner = ('--keystone-user', user, '--keystone-group', group)
    return (
        _manage('keystone-db-sync', 'keystone-manage', conf, 'db_sync'),
        _manage('keystone-fernet-setup', 'keystone-manage', conf,
                'fernet_setup', *owner),
        _manage('keystone-credential-setup', 'keystone-manage', conf,
                'credential_setup', *owner),
        _manage('keystone-bootstrap', 'keystone-manage', conf, 'bootstrap',
                '--bootstrap-username', 'admin',
                '--bootstrap-password', lay.ADMIN_PASSWORD,
                '--bootstrap-project-name', 'admin',
                '--bootstrap-role-name', 'admin',
                '--bootstrap-service-name', 'keystone',
                '--bootstrap-region-id', lay.REGION,
                '--bootstrap-public-url', lay.keystone_url()),
    )


def nova_steps(layout):
    """Cells v2: the API database, cell0, then cell1 (nova.conf's own)."""
    conf = layout.conf('nova')
    return (
        _manage('nova-api-db-sync', 'nova-manage', conf, 'api_db', 'sync'),
        _manage('nova-map-cell0', 'nova-manage', conf, 'cell_v2',
                'map_cell0', '--database_connection',
                lay.db_url('nova_cell0')),
        # Without --local_cell: cell0's schema too.
        _manage('nova-db-sync', 'nova-manage', conf, 'db', 'sync'),
        _manage('nova-create-cell1', 'nova-manage', conf, 'cell_v2',
                'create_cell', '--name', 'cell1', '--verbose'),
    )


def vhost_steps():
    delete, add, permit = infra.vhost_commands()
    return (
        # 65: there was no such virtual host to delete.
        services.step('rabbitmq-delete-vhost', delete, ok_codes=(0, 65)),
        services.step('rabbitmq-add-vhost', add),
        services.step('rabbitmq-permissions', permit),
    )


def chains(layout):
    """Every chain of the control plane's start."""
    neutron_confs = ('--config-file', layout.conf('neutron'),
                     '--config-file', layout.conf('neutron', 'ml2_conf.ini'))
    return (
        Chain('rabbitmq', vhost_steps()),
        # nova's and neutron's services ask keystone for tokens as they
        # start: the service users exist before those start.
        Chain('keystone', keystone_steps(layout), ('keystone',),
              then='create_accounts'),
        Chain('placement', (_manage(
            'placement-db-sync', 'placement-manage',
            layout.conf('placement'), 'db', 'sync'),), ('placement',)),
        Chain('nova', nova_steps(layout)),
        Chain('nova-services', (),
              ('nova-api', 'nova-conductor', 'nova-scheduler'),
              after=('nova', 'rabbitmq', 'keystone')),
        Chain('glance', (_manage(
            'glance-db-sync', 'glance-manage',
            layout.conf('glance', 'glance-api.conf'), 'db_sync'),),
            ('glance-api',)),
        Chain('neutron', (
            services.step('neutron-db-sync', [
                lay.bin_path('neutron-db-manage'), *neutron_confs,
                'upgrade', 'heads']),)),
        Chain('neutron-services', (),
              ('neutron-api', 'neutron-rpc-server',
               'neutron-periodic-workers'),
              after=('neutron', 'rabbitmq', 'keystone')),
        # The plugin's own extra phase syncs the collector's schema.
        Chain('numa-policy', (services.step(
            'devstack-plugin-extra', plugin.command(plugin.START),
            plugin.environment(layout, {}).items()),),
            ('numa-policy-api',)),
        Chain('numa-policy-services', (), ('numa-policy-collector',),
              after=('numa-policy', 'rabbitmq')),
    )
