"""The control plane's configuration files, as data.

Each function returns ``{section: {option: value}}`` (a list value is a
multi-valued option, one line each); :func:`render` turns that into INI
text and :func:`write` puts it on disk. The settings of our own pieces
are not here: devstack/plugin.sh writes them (tests/cloud/plugin.py).
"""

import os

from tests.cloud import endpoints
from tests.cloud import layout as lay

# The services' own debug logging: nova logs its options at DEBUG when
# it starts, which is how a test reads what nova-scheduler runs with.
DEBUG = 'True'
# The user of nova's client sections ([placement], [neutron]): ``nova``,
# as devstack's configure_keystoneauth writes them, with its ``admin``
# role. nova-api reads a network's provider:physical_network (for the
# request spec's physnets) with [neutron]'s credentials, and neutron's
# policy shows it to admin only (doc/source/scheduler.rst, "Which
# physnet").
NOVA_CLIENT_USER = 'nova'


def auth_section(user, address=endpoints.HOST_ADDRESS):
    """A keystoneauth password section for service user ``user``.

    What devstack's configure_keystoneauth writes.
    """
    return {
        'auth_type': 'password',
        # The catalog has public endpoints only (keystonemiddleware's
        # default is internal).
        'interface': 'public',
        'auth_url': lay.keystone_url(address),
        'username': user,
        'password': lay.SERVICE_PASSWORD,
        'user_domain_name': lay.DOMAIN,
        'project_name': lay.SERVICE_PROJECT,
        'project_domain_name': lay.DOMAIN,
        'region_name': lay.REGION,
    }


def authtoken_section(user):
    """[keystone_authtoken] of an API that validates tokens as ``user``."""
    section = auth_section(user)
    section['www_authenticate_uri'] = lay.keystone_url()
    return section


def placement_client(section):
    """nova's [placement] client ``section``, retrying a failed connection."""
    return {**section, 'connect_retries': str(PLACEMENT_CONNECT_RETRIES)}


def _common(layout, service):
    return {
        'debug': DEBUG,
        'state_path': layout.data_dir(service),
    }


# Seconds a nova service waits for an RPC call's answer (nova's
# default is 60).
RPC_RESPONSE_TIMEOUT = 180
# Times nova's placement client sends a request again when its
# connection fails. gunicorn closes a keep-alive connection idle for 2 s,
# and a request sent on one it is closing fails (RemoteDisconnected): a
# compute's delete failed so, leaving its server in ERROR (a CI run of
# 2026-11-30). nova's neutron and glance clients retry by default
# ([neutron] http_retries, [glance] num_retries); its placement client
# only when told (keystoneauth's connect_retries, default none).
PLACEMENT_CONNECT_RETRIES = 3
# bcrypt's minimum (keystone's default is 12).
PASSWORD_HASH_ROUNDS = 4


def keystone(layout):
    keys = layout.data_dir('keystone')
    return {
        'DEFAULT': {'debug': DEBUG},
        'database': {'connection': lay.db_url('keystone')},
        'token': {'provider': 'fernet'},
        # bcrypt's fewest rounds: every password login of a service or a
        # test checks a hash, and keystone's default (12 rounds) made its
        # one worker the busiest process on this machine while tempest
        # made its users. The cloud's passwords are the run's own.
        'identity': {'password_hash_rounds': str(PASSWORD_HASH_ROUNDS)},
        # The keys live in the work directory, not /etc/keystone.
        'fernet_tokens': {'key_repository': os.path.join(keys, 'fernet')},
        'fernet_receipts': {'key_repository': os.path.join(keys, 'fernet')},
        'credential': {'key_repository': os.path.join(keys, 'credential')},
    }


def placement(layout):
    return {
        'DEFAULT': {'debug': DEBUG},
        'placement_database': {'connection': lay.db_url('placement')},
        'api': {'auth_strategy': 'keystone'},
        'keystone_authtoken': authtoken_section('placement'),
    }


def nova(layout):
    state = layout.data_dir('nova')
    return {
        'DEFAULT': {
            **_common(layout, 'nova'),
            'transport_url': lay.transport_url(),
            # nova would take the machine's address for its own: this
            # cloud has only loopback.
            'my_ip': endpoints.HOST_ADDRESS,
            'osapi_compute_listen': endpoints.HOST_ADDRESS,
            # nova-api waits on the compute for an interface attach (an
            # RPC call, 60 s by default): under emulation the compute's
            # port binding and device attach took longer, and the API
            # answered 500 (a CI run of 2026-11-30). Within gunicorn's
            # worker timeout (services.WORKER_TIMEOUT).
            'rpc_response_timeout': str(RPC_RESPONSE_TIMEOUT),
        },
        'wsgi': {'api_paste_config': layout.conf('nova', 'api-paste.ini')},
        'api_database': {'connection': lay.db_url('nova_api')},
        # The cell the conductor and the scheduler serve (cells v2 with
        # one cell: cell0 takes the instances no host could take).
        'database': {'connection': lay.db_url('nova_cell1')},
        'scheduler': {
            'discover_hosts_in_cells_interval': str(
                lay.DISCOVER_HOSTS_INTERVAL),
            'workers': '1',
        },
        'conductor': {'workers': '1'},
        'oslo_concurrency': {'lock_path': os.path.join(state, 'lock')},
        'keystone_authtoken': authtoken_section('nova'),
        'placement': placement_client(auth_section(NOVA_CLIENT_USER)),
        'neutron': auth_section(NOVA_CLIENT_USER),
        'glance': {'region_name': lay.REGION},
        'service_user': {**auth_section('nova'),
                         'send_service_user_token': 'True'},
    }


def glance(layout):
    images = layout.data_dir('glance')
    return {
        'DEFAULT': {
            'debug': DEBUG,
            'enabled_backends': 'local:file',
            'transport_url': lay.transport_url(),
        },
        'glance_store': {'default_backend': 'local'},
        # The file store and glance's two reserved ones, all in the work
        # directory.
        'local': {'filesystem_store_datadir': os.path.join(images, 'images')},
        'os_glance_staging_store': {
            'filesystem_store_datadir': os.path.join(images, 'staging')},
        'os_glance_tasks_store': {
            'filesystem_store_datadir': os.path.join(images, 'tasks')},
        'database': {'connection': lay.db_url('glance')},
        'keystone_authtoken': authtoken_section('glance'),
        'paste_deploy': {
            'flavor': 'keystone',
            'config_file': lay.share_path('glance', 'glance-api-paste.ini'),
        },
        'oslo_concurrency': {'lock_path': os.path.join(images, 'lock')},
    }


def neutron(layout):
    state = layout.data_dir('neutron')
    return {
        'DEFAULT': {
            **_common(layout, 'neutron'),
            'transport_url': lay.transport_url(),
            'core_plugin': 'ml2',
            'service_plugins': '',
            'auth_strategy': 'keystone',
            'bind_host': endpoints.HOST_ADDRESS,
            'api_paste_config': lay.share_path('neutron', 'api-paste.ini'),
            # nova-compute waits for these events when it plugs a port.
            'notify_nova_on_port_status_changes': 'True',
            'notify_nova_on_port_data_changes': 'True',
            # One RPC worker, no separate one for the agents' state
            # reports: devstack's choice, and plenty for a few computes.
            'rpc_workers': '1',
            'rpc_state_report_workers': '0',
        },
        'database': {'connection': lay.db_url('neutron')},
        'keystone_authtoken': authtoken_section('neutron'),
        'nova': auth_section('nova'),
        'placement': auth_section('placement'),
        'oslo_concurrency': {'lock_path': os.path.join(state, 'lock')},
    }


def ml2(layout):
    """ML2: flat and VLAN provider networks on physnet1, Open vSwitch.

    Flat networks on physnet2 too, which no compute carries: a test's
    server asks for NIC locality there (layout.UNCARRIED_PHYSNET).

    No tenant network types: the lab's networks are the provider ones an
    admin creates. The OVS agents run on the lab hosts; the server only
    needs the mechanism driver to bind their ports.
    """
    return {
        'ml2': {
            'type_drivers': 'flat,vlan',
            'tenant_network_types': '',
            'mechanism_drivers': 'openvswitch',
            'extension_drivers': 'port_security',
        },
        'ml2_type_flat': {
            'flat_networks': f'{lay.PHYSNET},{lay.UNCARRIED_PHYSNET}'},
        'ml2_type_vlan': {'network_vlan_ranges': lay.PHYSNET},
    }


def files(layout):
    """{path: sections} of every file this module writes."""
    return {
        layout.conf('keystone'): keystone(layout),
        layout.conf('placement'): placement(layout),
        layout.conf('nova'): nova(layout),
        layout.conf('glance', 'glance-api.conf'): glance(layout),
        layout.conf('neutron'): neutron(layout),
        layout.conf('neutron', 'ml2_conf.ini'): ml2(layout),
    }


def copies(layout):
    """{destination: source} of the files the packages ship, used as is.

    nova-api loads its paste pipeline from the first file of its
    configuration directory's list: it must sit beside nova.conf.
    """
    return {layout.conf('nova', 'api-paste.ini'):
            lay.share_path('nova', 'api-paste.ini')}


def compute(address=endpoints.GUEST_GATEWAY):
    """What a nova-compute inside a lab host needs to join this cloud.

    ``{section: {option: value}}`` for its nova.conf. The catalog names
    127.0.0.1, which inside a lab host is the lab host itself, so every
    client section carries an ``endpoint_override`` at ``address``
    (QEMU forwards it to this machine's loopback).
    """
    def client(user, service, path=''):
        return {**auth_section(user, address),
                'endpoint_override': endpoints.url(service, address) + path}

    return {
        'DEFAULT': {'transport_url': lay.transport_url(address)},
        'placement': placement_client(client(NOVA_CLIENT_USER,
                                             'placement')),
        'neutron': client(NOVA_CLIENT_USER, 'neutron'),
        'glance': client('glance', 'glance'),
        'keystone': client('nova', 'keystone', '/v3'),
        'keystone_authtoken': auth_section('nova', address),
        'service_user': {**auth_section('nova', address),
                         'send_service_user_token': 'True'},
    }


def render(sections):
    """INI text of ``sections``; a list value gives one line per item."""
    lines = []
    for section, options in sections.items():
        lines.append(f'[{section}]')
        for option, value in options.items():
            for item in value if isinstance(value, list) else [value]:
                lines.append(f'{option} = {item}')
        lines.append('')
    return '\n'.join(lines)


def write(path, sections):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(render(sections))
