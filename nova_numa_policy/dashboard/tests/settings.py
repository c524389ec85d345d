"""Django settings of the panel's tests: Horizon's test settings plus ours.

Run with ``DJANGO_SETTINGS_MODULE=nova_numa_policy.dashboard.tests.settings``
(tests/horizon/run.sh does).
"""

import tempfile

from openstack_dashboard.test.settings import *  # noqa: F403,H303

from nova_numa_policy.dashboard import plugging  # noqa: E402

INSTALLED_APPS = plugging.add_our_panel(HORIZON_CONFIG,  # noqa: F405
                                        INSTALLED_APPS)  # noqa: F405

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
