"""Django settings of the panel's tests: Horizon's test settings plus ours.

Run with ``DJANGO_SETTINGS_MODULE=nova_numa_policy.dashboard.tests.settings``
(tests/horizon/run.sh does).
"""

import tempfile

from openstack_dashboard.test.settings import *  # noqa: F403,H303

import openstack_dashboard.enabled  # noqa: E402
from openstack_dashboard.utils import settings as settings_utils  # noqa

from nova_numa_policy.dashboard import enabled as numa_enabled  # noqa

# Horizon's test settings already ran update_dashboards on its own enabled
# files; it must run again with ours added, so its results are reset first
# and de-duplicated after (a repeated app label is an error for Django).
HORIZON_CONFIG.pop('dashboards', None)  # noqa: F405
HORIZON_CONFIG.pop('default_dashboard', None)  # noqa: F405
INSTALLED_APPS = list(INSTALLED_APPS)  # noqa: F405
settings_utils.update_dashboards(
    [openstack_dashboard.enabled, numa_enabled], HORIZON_CONFIG,  # noqa
    INSTALLED_APPS)
INSTALLED_APPS = list(dict.fromkeys(INSTALLED_APPS))
for _key in ('angular_modules', 'js_files', 'js_spec_files', 'scss_files',
             'xstatic_modules', 'plugins'):
    HORIZON_CONFIG[_key] = list(dict.fromkeys(HORIZON_CONFIG[_key]))  # noqa

# The API the panel reads; the tests serve it in-process (wsgi-intercept).
NUMA_POLICY_API_URL = 'http://numa-api.test/'

# Pages compile Horizon's SCSS on first use; the output goes to one fixed
# directory outside the installed horizon package, reused across runs.
STATIC_ROOT = os.path.join(tempfile.gettempdir(),  # noqa: F405
                           'nova-numa-policy-horizon-static')
COMPRESS_ROOT = STATIC_ROOT
# Horizon's test settings leave the SCSS uncompiled, which leaves pages
# unstyled in a browser; the screenshot test needs them as deployed.
COMPRESS_PRECOMPILERS = (
    ('text/scss', 'horizon.utils.scss_filter.ScssFilter'),
)
# The SCSS imports the theme's files, which the theme static dirs provide
# (openstack_dashboard.settings adds them; its test settings do not).
STATICFILES_DIRS = list(theme_settings.get_theme_static_dirs(  # noqa
    AVAILABLE_THEMES, THEME_COLLECTION_DIR, ROOT_PATH)) + list(  # noqa
    STATICFILES_DIRS)  # noqa: F405
COMPRESS_FILTERS = {
    'css': ('compressor.filters.css_default.CssAbsoluteFilter',),
    'js': ('compressor.filters.jsmin.rJSMinFilter',),
}
