# Horizon "enabled" file: devstack copies it into openstack_dashboard/
# local/enabled (devstack/lib/horizon). 2190 sorts it after the Compute
# group's own panels (2120-2180).
PANEL = 'numa_policy'
PANEL_DASHBOARD = 'admin'
PANEL_GROUP = 'compute'
ADD_PANEL = 'nova_numa_policy.dashboard.numa.panel.NumaPolicy'
# The app carries the templates and the static load-bar and chart code.
ADD_INSTALLED_APPS = ['nova_numa_policy.dashboard']

# An API error or an unreachable API is shown as a message on the page
# rather than a server error.
from keystoneauth1 import exceptions as _ksa_exceptions  # noqa: E402

from nova_numa_policy import restclient as _client  # noqa: E402

ADD_EXCEPTIONS = {
    'recoverable': (_client.ApiError, _ksa_exceptions.ClientException),
}
