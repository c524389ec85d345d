"""Functional tests: nova's own in-process services with real placement.

nova 34's ConfFixture looks for ``etc/nova/api-paste.ini`` under nova's
state path (the site-packages directory), while pip installs that file as
package data under ``<prefix>/etc/nova/``. Point the fixture at the
installed copy so nova's in-process API loads in a virtualenv.
"""

import os
import sys
import sysconfig

# First, before anything imports oslo.db: nova's functional test package
# patches eventlet when imported, and oslo.db keeps a request context's
# database transaction per thread. Imported after oslo.db, every
# greenthread would share one transaction per context, and nova would
# lose writes made in one of them (its network info cache, PCI claims):
# nova's own move operations would then fail at random.
import nova.tests.functional  # noqa: F401
from nova.tests.fixtures import conf as nova_conf_fixture  # noqa: H306


def _installed_api_paste():
    for prefix in (sys.prefix, sysconfig.get_path('data')):
        path = os.path.join(prefix, 'etc', 'nova', 'api-paste.ini')
        if os.path.exists(path):
            return path
    raise RuntimeError(
        "nova's api-paste.ini was not found under %s; is nova installed in "
        "this environment?" % sys.prefix)


_API_PASTE = _installed_api_paste()
_nova_conf_setup = nova_conf_fixture.ConfFixture.setUp


def _conf_setup_with_installed_paste(self):
    _nova_conf_setup(self)
    self.conf.set_default('api_paste_config', _API_PASTE, group='wsgi')


nova_conf_fixture.ConfFixture.setUp = _conf_setup_with_installed_paste
