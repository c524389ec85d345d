"""The API app, with noauth, over a migrated SQLite database."""

import fixtures
import webob

from nova_numa_policy.rest import app
from tests.unit.collector import base as collector_base
from tests.unit import conf_fixture

ADMIN = {'X-Roles': 'admin,member', 'X-Project-Id': 'admin-project',
         'X-User-Id': 'admin-user'}
MEMBER = {'X-Roles': 'member,reader', 'X-Project-Id': 'some-project',
          'X-User-Id': 'some-user'}


class NoauthConf(fixtures.Fixture):
    """``self.conf``: every group of the project, the API without auth.

    Reset when its test ends (tests/unit/conf_fixture.py).
    """

    def __init__(self, **api_overrides):
        super().__init__()
        self._overrides = api_overrides
        self.conf = None

    def _setUp(self):
        self.conf = self.useFixture(conf_fixture.ProjectConf(
            project='nova-numa-policy', default_config_files=[],
            default_config_dirs=[])).conf
        self.conf.set_override('auth_strategy', 'noauth', 'numa_policy_api')
        for name, value in self._overrides.items():
            self.conf.set_override(name, value, 'numa_policy_api')


class ApiFixture(fixtures.Fixture):
    """``self.app`` serves ``self.storage``; ``get`` sends a request."""

    def __init__(self, **api_overrides):
        super().__init__()
        self._overrides = api_overrides

    def _setUp(self):
        self.storage = self.useFixture(
            collector_base.SqliteStorage()).storage
        self.conf = self.useFixture(NoauthConf(**self._overrides)).conf
        self.app = app.build_app(self.conf, self.storage)

    def get(self, path, headers=ADMIN, method='GET'):
        request = webob.Request.blank(path, headers=headers or {},
                                      method=method)
        return request.get_response(self.app)
