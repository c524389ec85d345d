"""A small client of the read-only REST API, on a keystoneauth adapter.

The CLI and the Horizon panel both read the API through this class, so
they page, quote and report errors the same way. It depends only on
keystoneauth1: the caller brings the adapter (a token session from the
CLI's ClientManager or from the Horizon user's token).
"""

import collections
import json
from urllib import parse

SERVICE_TYPE = 'numa-policy'

Page = collections.namedtuple('Page', ['items', 'next_marker'])


class ApiError(Exception):
    """The API answered with an error; ``message`` is the API's own."""

    def __init__(self, status, message):
        super().__init__(f'{status}: {message}')
        self.status = status
        self.message = message

    @classmethod
    def from_response(cls, response):
        try:
            error = response.json()['error']
            message = error['message']
        except (ValueError, KeyError, TypeError):
            # Not the API's JSON error (a proxy, a wrong endpoint): the
            # start of the body is the best clue the user gets.
            message = (response.text or response.reason or '')[:200]
        return cls(response.status_code, message)


def _quote(value):
    return parse.quote(value, safe='')


def _next_marker(body):
    """The marker of the next page from the ``next`` link, or None.

    Only the marker is taken from the link: the link's host is what the
    API saw, which behind a proxy is not always what the caller reaches.
    """
    for link in body.get('links', ()):
        if link.get('rel') == 'next':
            query = parse.parse_qs(parse.urlsplit(link['href']).query)
            return query.get('marker', [None])[0]
    return None


def walk(list_method, **query):
    """Every item of a listing, following its pages."""
    while True:
        page = list_method(**query)
        yield from page.items
        if page.next_marker is None:
            return
        query['marker'] = page.next_marker


class Client:
    """One method per API call; listings return a :class:`Page`."""

    def __init__(self, adapter):
        self._adapter = adapter

    def _get(self, path, params=None):
        response = self._adapter.get(
            path, params={k: v for k, v in (params or {}).items()
                          if v is not None},
            headers={'Accept': 'application/json'}, raise_exc=False)
        if response.status_code != 200:
            raise ApiError.from_response(response)
        return response.json()

    def _page(self, path, key, **params):
        body = self._get(path, params)
        return Page(body[key], _next_marker(body))

    def list_hosts(self, limit=None, marker=None):
        return self._page('v1/hosts', 'hosts', limit=limit, marker=marker)

    def show_host(self, host):
        return self._get('v1/hosts/' + _quote(host))['host']

    def host_reports(self, host, limit=None):
        """A host's report history, newest first."""
        return self._get('v1/hosts/%s/reports' % _quote(host),
                         {'limit': limit})['reports']

    def list_instances(self, limit=None, marker=None, host=None):
        return self._page('v1/instances', 'instances', limit=limit,
                          marker=marker, host=host)

    def show_instance(self, uuid):
        return self._get('v1/instances/' + _quote(uuid))['instance']

    def list_actions(self, limit=None, marker=None, host=None,
                     instance_uuid=None):
        return self._page('v1/actions', 'actions', limit=limit,
                          marker=marker, host=host,
                          instance_uuid=instance_uuid)

    def explain(self, vcpus, memory_mb, extra_specs=None, physnets=()):
        """Why each reporting host passes or fails the scheduler filters."""
        params = {'vcpus': vcpus, 'memory_mb': memory_mb,
                  # requests repeats a list-valued parameter, as the API
                  # expects of physnet.
                  'physnet': list(physnets) or None}
        if extra_specs:
            params['extra_specs'] = json.dumps(extra_specs)
        return self._get('v1/explain', params)
