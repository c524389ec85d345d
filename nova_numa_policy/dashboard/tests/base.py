"""The REST API served in-process to the panel under test.

A real ``nova_numa_policy.rest`` WSGI app (noauth, real oslo.policy) over a
migrated SQLite file filled by the collector's storage, reachable at
``settings.NUMA_POLICY_API_URL`` through wsgi-intercept, which replaces
the connections of ``requests`` (and so of keystoneauth) to that host.
"""

import os
import shutil
import tempfile
from urllib import parse

from django.conf import settings
from oslo_config import cfg
from wsgi_intercept import interceptor

from nova_numa_policy.collector import db
from nova_numa_policy.collector import migration
from nova_numa_policy.conf import opts
from nova_numa_policy.dashboard.tests import data
from nova_numa_policy.rest import app


def _conf():
    conf = cfg.ConfigOpts()
    for module in opts.GROUP_MODULES:
        module.register_opts(conf)
    conf([], project='nova-numa-policy', default_config_files=[],
         default_config_dirs=[])
    conf.set_override('auth_strategy', 'noauth', 'numa_policy_api')
    return conf


def _identity(wsgi_app, roles):
    """What keystonemiddleware adds once it has validated the token."""
    def middleware(environ, start_response):
        if environ.get('HTTP_X_AUTH_TOKEN'):
            environ.update({'HTTP_X_ROLES': roles,
                            'HTTP_X_PROJECT_ID': 'admin-project',
                            'HTTP_X_USER_ID': 'admin-user'})
        return wsgi_app(environ, start_response)
    return middleware


class ServedApi:
    """Start with :meth:`start`, undo with :meth:`stop`."""

    def __init__(self, roles='admin'):
        self.roles = roles

    def start(self):
        self._dir = tempfile.mkdtemp(prefix='numa-horizon-db-')
        self.storage = db.Storage(
            'sqlite:///' + os.path.join(self._dir, 'collector.sqlite'))
        migration.upgrade(self.storage.engine)
        wsgi_app = _identity(app.build_app(_conf(), self.storage),
                             self.roles)
        url = parse.urlsplit(settings.NUMA_POLICY_API_URL)
        self._intercept = interceptor.RequestsInterceptor(
            lambda: wsgi_app, host=url.hostname, port=url.port or 80)
        self._intercept.__enter__()
        return self

    def fill(self):
        data.fill(self.storage)
        return self

    def stop(self):
        self._intercept.__exit__(None, None, None)
        self.storage.dispose()
        shutil.rmtree(self._dir, ignore_errors=True)
