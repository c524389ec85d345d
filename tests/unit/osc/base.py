"""The CLI against the real REST API app, served in-process.

wsgi-intercept routes the ``requests`` connections keystoneauth opens to
``http://numa-api.test`` into the WSGI app of ``nova_numa_policy.rest``
(noauth, real policy, SQLite filled through the collector's storage), so
every command goes through parsing, HTTP, the API and formatting.
"""

import io
import json
import types

from cliff import app
from cliff import commandmanager
import fixtures
from keystoneauth1 import adapter
from keystoneauth1 import session
from oslo_utils import importutils
from wsgi_intercept import interceptor

from nova_numa_policy import restclient
from tests import base as test_base
from tests.unit.rest import base as rest_base

API_HOST = 'numa-api.test'
API_URL = f'http://{API_HOST}/'
PROXY_VARIABLES = ('http_proxy', 'HTTP_PROXY', 'all_proxy', 'ALL_PROXY')

# The entry points to add to setup.cfg under openstack.numa_policy.v1; until
# they are there, the tests load them from this list the way cliff would.
ENTRY_POINTS = (
    'numa_host_list = nova_numa_policy.osc.v1.hosts:ListHost',
    'numa_host_show = nova_numa_policy.osc.v1.hosts:ShowHost',
    'numa_instance_list = nova_numa_policy.osc.v1.instances:ListInstance',
    'numa_instance_show = nova_numa_policy.osc.v1.instances:ShowInstance',
    'numa_action_list = nova_numa_policy.osc.v1.actions:ListAction',
    'numa_explain = nova_numa_policy.osc.v1.explain:Explain',
)


def load_commands(manager):
    for line in ENTRY_POINTS:
        name, target = (part.strip() for part in line.split('='))
        module, cls = target.split(':')
        manager.add_command(name.replace('_', ' '),
                            importutils.import_class(f'{module}.{cls}'))


def as_identity(wsgi_app, roles):
    """Put the identity headers keystonemiddleware would set on a token.

    The API runs with ``auth_strategy = noauth``, which trusts these
    headers; the CLI sends a token, never roles.
    """
    def middleware(environ, start_response):
        environ.update({'HTTP_X_ROLES': roles,
                        'HTTP_X_PROJECT_ID': 'admin-project',
                        'HTTP_X_USER_ID': 'admin-user'})
        return wsgi_app(environ, start_response)
    return middleware


class InterceptedApi(fixtures.Fixture):
    """The API app reachable at :data:`API_URL` through ``requests``."""

    def __init__(self, roles='admin,member', **api_overrides):
        super().__init__()
        self.roles = roles
        self._overrides = api_overrides

    def _setUp(self):
        api = self.useFixture(rest_base.ApiFixture(**self._overrides))
        self.storage = api.storage
        wsgi_app = as_identity(api.app, self.roles)
        # A proxy from the environment would send requests elsewhere.
        for name in PROXY_VARIABLES:
            self.useFixture(fixtures.EnvironmentVariable(name))
        intercept = interceptor.RequestsInterceptor(lambda: wsgi_app,
                                                    url=API_URL)
        intercept.__enter__()
        self.addCleanup(intercept.__exit__, None, None, None)


def make_client():
    return restclient.Client(adapter.Adapter(
        session=session.Session(), service_type=restclient.SERVICE_TYPE,
        endpoint_override=API_URL))


class CliApp(app.App):
    """A cliff app holding only the ``numa`` commands, like OSC would.

    ``services`` are the ClientManager's other clients (``compute=...``).
    """

    def __init__(self, numa_client, **services):
        manager = commandmanager.CommandManager('nova_numa_policy.tests')
        load_commands(manager)
        self.out, self.err = io.StringIO(), io.StringIO()
        super().__init__('test', '1', manager, stdout=self.out,
                         stderr=self.err)
        self.client_manager = types.SimpleNamespace(numa_policy=numa_client,
                                                    **services)


class CliTestCase(test_base.TestCase):

    roles = 'admin,member'
    api_overrides = {}

    def setUp(self):
        super().setUp()
        self.api = self.useFixture(InterceptedApi(self.roles,
                                                  **self.api_overrides))
        # Other services' clients the commands may use, by ClientManager
        # attribute name; a command reaching for a missing one fails.
        self.services = {}

    def run_cli(self, *argv):
        """Run ``openstack <argv>``; return (exit code, stdout, stderr)."""
        cli = CliApp(make_client(), **self.services)
        code = cli.run(list(argv))
        return code, cli.out.getvalue(), cli.err.getvalue()

    def table_cli(self, *argv):
        """The table people read: columns rendered human-readable."""
        code, out, err = self.run_cli(*argv, '-f', 'table')
        self.assertEqual(0, code, err)
        return out

    def json_cli(self, *argv):
        code, out, err = self.run_cli(*argv, '-f', 'json')
        self.assertEqual(0, code, err)
        return json.loads(out)
