"""Keystone's content: service users, the catalog, the admin's session.

:func:`plan` decides what keystone must hold (pure); :func:`apply`
creates it through keystone's API in one admin session, in a second or
two, where devstack's ``openstack`` commands would cost a process each.
"""

from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session

from tests.cloud import endpoints
from tests.cloud import layout as lay

# (user, extra role, service name, service type, endpoint path): the
# service users devstack's lib/ files create for this release (every one
# gets the ``service`` role; nova, placement and glance also ``admin``),
# and their catalog entries at 127.0.0.1.
OPENSTACK_SERVICES = (
    ('nova', 'admin', 'nova', 'compute', 'nova', '/v2.1'),
    ('placement', 'admin', 'placement', 'placement', 'placement', ''),
    ('glance', 'admin', 'glance', 'image', 'glance', ''),
    ('neutron', None, 'neutron', 'network', 'neutron', ''),
)


def plan(plugin_registrations):
    """(users, services, endpoints) keystone must hold.

    users: ``(name, [roles])``; services: ``(name, type, description)``;
    endpoints: ``(type, region, url)``. Our API's entries are those
    devstack/plugin.sh registers (``plugin_registrations``, read back
    from its call log by tests/cloud/plugin.py).
    """
    plugin_users, plugin_services, plugin_endpoints = plugin_registrations
    users, services, urls = [], [], []
    for user, role, name, type_, port_name, path in OPENSTACK_SERVICES:
        users.append((user, ['service'] + ([role] if role else [])))
        services.append((name, type_, f'{name} of the lab cloud'))
        urls.append((type_, lay.REGION, endpoints.url(port_name) + path))
    users += [(user, ['service']) for user in plugin_users]
    services += list(plugin_services)
    urls += list(plugin_endpoints)
    return users, services, urls


# Times a read is sent again when its connection failed.
READ_RETRIES = 3
READS = frozenset({'GET', 'HEAD'})


class ReadRetryingSession(ks_session.Session):
    """A keystoneauth session that sends a failed read again.

    gunicorn closes a keep-alive connection idle for 2 s, and a request
    sent on one it is closing fails (RemoteDisconnected): a test polling
    every 2 s meets it often (a port's status, 2026-12-01). A read is
    safe to send again; a write is not (a server created twice), and
    keeps keystoneauth's default of no retry.
    """

    def request(self, url, method, **kwargs):
        if method.upper() in READS:
            kwargs.setdefault('connect_retries', READ_RETRIES)
        return super().request(url, method, **kwargs)


def admin_session(address=endpoints.HOST_ADDRESS):
    """A keystoneauth session as keystone's bootstrap admin."""
    auth = v3.Password(
        auth_url=lay.keystone_url(address) + '/v3', username='admin',
        password=lay.ADMIN_PASSWORD, project_name='admin',
        user_domain_name=lay.DOMAIN, project_domain_name=lay.DOMAIN)
    return ReadRetryingSession(auth=auth)


def admin_env(address=endpoints.HOST_ADDRESS):
    """The OS_* variables of the ``openstack`` client, as the admin."""
    return {
        'OS_AUTH_URL': lay.keystone_url(address) + '/v3',
        'OS_AUTH_TYPE': 'password',
        'OS_IDENTITY_API_VERSION': '3',
        'OS_USERNAME': 'admin',
        'OS_PASSWORD': lay.ADMIN_PASSWORD,
        'OS_PROJECT_NAME': 'admin',
        'OS_USER_DOMAIN_NAME': lay.DOMAIN,
        'OS_PROJECT_DOMAIN_NAME': lay.DOMAIN,
        'OS_REGION_NAME': lay.REGION,
        'OS_INTERFACE': 'public',
    }


def openrc(env):
    """The text of an openrc file that exports ``env``."""
    lines = [f"export {key}='{value}'" for key, value in sorted(env.items())]
    return '\n'.join(lines) + '\n'


class _Keystone:
    """The few identity calls :func:`apply` makes."""

    def __init__(self, session):
        self.session = session
        self.base = lay.keystone_url()

    def _post(self, path, key, body):
        response = self.session.post(self.base + path, json={key: body})
        return response.json()[key]['id']

    def _find(self, path, key, **query):
        found = self.session.get(self.base + path,
                                 params=query).json()[key + 's']
        return found[0]['id'] if found else None

    def ensure(self, path, key, body, **query):
        return self._find(path, key, **query) or self._post(path, key, body)

    def grant(self, project_id, user_id, role_id):
        self.session.put(
            f'{self.base}/v3/projects/{project_id}/users/{user_id}/roles/'
            f'{role_id}')


def apply(session, planned):
    """Create what :func:`plan` returned, as the admin."""
    users, services, urls = planned
    keystone = _Keystone(session)
    project = keystone.ensure(
        '/v3/projects', 'project',
        {'name': lay.SERVICE_PROJECT, 'domain_id': 'default'},
        name=lay.SERVICE_PROJECT)
    roles = {}
    for _user, user_roles in users:
        for role in user_roles:
            if role not in roles:
                roles[role] = keystone.ensure('/v3/roles', 'role',
                                              {'name': role}, name=role)
    for name, user_roles in users:
        user = keystone.ensure(
            '/v3/users', 'user',
            {'name': name, 'password': lay.SERVICE_PASSWORD,
             'domain_id': 'default', 'default_project_id': project},
            name=name)
        for role in user_roles:
            keystone.grant(project, user, roles[role])
    service_ids = {}
    for name, type_, description in services:
        service_ids[type_] = keystone.ensure(
            '/v3/services', 'service',
            {'name': name, 'type': type_, 'description': description},
            type=type_)
    for type_, region, url in urls:
        keystone.ensure(
            '/v3/endpoints', 'endpoint',
            {'service_id': service_ids[type_], 'interface': 'public',
             'region_id': region, 'url': url},
            service_id=service_ids[type_], interface='public')
