"""The REST API client for one Horizon request, with the user's token.

The endpoint is the catalog's ``numa-policy`` service; ``NUMA_POLICY_API_URL``
in local_settings overrides it (clouds without the catalog entry, tests).
"""

from django.conf import settings
from keystoneauth1 import adapter
from keystoneauth1 import session
from keystoneauth1 import token_endpoint
from openstack_dashboard.api import base

from nova_numa_policy import restclient as api_client

# Reports kept per host by default (one day at a five-minute period).
HISTORY_LIMIT = 288
ACTIONS_LIMIT = 500


def endpoint(request):
    return (getattr(settings, 'NUMA_POLICY_API_URL', None) or
            base.url_for(request, api_client.SERVICE_TYPE))


def _verify():
    if getattr(settings, 'OPENSTACK_SSL_NO_VERIFY', False):
        return False
    return getattr(settings, 'OPENSTACK_SSL_CACERT', None) or True


def client(request):
    url = endpoint(request)
    auth = token_endpoint.Token(url, request.user.token.id)
    return api_client.Client(adapter.Adapter(
        session.Session(auth=auth, verify=_verify()),
        service_type=api_client.SERVICE_TYPE, endpoint_override=url))


def hosts_with_nodes(request, limit, marker=None):
    """A page of hosts, each with its nodes (one show per host).

    The host listing carries no per-node data, so the panel reads each
    host of the page; the page size bounds the number of calls.
    """
    numa = client(request)
    page = numa.list_hosts(limit=limit, marker=marker)
    return api_client.Page([numa.show_host(h['host']) for h in page.items],
                           page.next_marker)


def host_history(request, host):
    """The host, its report history and its recent actions."""
    numa = client(request)
    return (numa.show_host(host),
            numa.host_reports(host, limit=HISTORY_LIMIT),
            numa.list_actions(limit=ACTIONS_LIMIT, host=host).items)
