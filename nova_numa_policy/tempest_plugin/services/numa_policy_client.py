"""Client of the read-only nova-numa-policy REST API (``/v1``, admin)."""

from urllib import parse

from oslo_serialization import jsonutils
from tempest.lib.common import rest_client


class NumaPolicyClient(rest_client.RestClient):
    """The catalog endpoint is the server root; every path starts at /v1."""

    def _show(self, path):
        resp, body = self.get(path)
        self.expected_success(200, resp.status)
        return rest_client.ResponseBody(resp, jsonutils.loads(body))

    def list_hosts(self, **params):
        return self._show('v1/hosts' + _query(params))

    def show_host(self, host):
        return self._show('v1/hosts/' + parse.quote(host, safe=''))

    def list_instances(self, **params):
        return self._show('v1/instances' + _query(params))

    def show_instance(self, uuid):
        return self._show('v1/instances/' + parse.quote(uuid, safe=''))


def _query(params):
    return '?' + parse.urlencode(params) if params else ''
