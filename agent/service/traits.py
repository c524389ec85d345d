"""Placement traits saying what this host can enforce.

The names are decided here (pure: :func:`trait_names`, :func:`merge`);
:class:`PlacementTraits` puts them on the compute node resource provider
through the placement API. The provider is nova-compute's: it carries
nova's own traits and any an operator or another service added, so the
agent only ever adds its own and removes its own stale ones, under the
provider generation placement hands out, re-reading on a conflict.
"""

from urllib import parse

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
import os_traits
from oslo_log import log as logging
import tenacity

from nova_numa_policy.contracts import backend
from nova_numa_policy.decisions import reporting

LOG = logging.getLogger(__name__)
PREFIX = 'NUMA_POLICY_'
# Every trait of ours starts with this; any other trait is not ours.
OURS = os_traits.normalize_name(PREFIX)
PLACEMENT_GROUP = 'placement'
# GET /resource_providers/{uuid}/traits with the generation and
# PUT /traits/{name}: microversion 1.6.
MICROVERSION = '1.6'
MAX_CONFLICTS = 4


def trait_names(enforceable_policies, capabilities):
    """CUSTOM_ trait names for the policies and live capabilities."""
    names = [PREFIX + value for value in enforceable_policies]
    if backend.CAP_LIVE_NODESET in capabilities:
        names.append(PREFIX + 'LIVE_NODESET')
    return sorted(os_traits.normalize_name(name) for name in names)


def merge(existing, ours):
    """The provider's traits with ours: others' kept, our stale removed."""
    kept = {t for t in existing if not t.startswith(OURS)}
    return kept | set(ours)


class PlacementError(Exception):
    pass


class _ProviderChanged(Exception):
    """Placement refused our write: the provider changed since our read."""


class PlacementTraits:
    """Keeps this host's traits on its compute node resource provider."""

    def __init__(self, adapter, max_conflicts=MAX_CONFLICTS):
        self._adapter = adapter
        self._max_conflicts = max_conflicts
        # What placement last confirmed, per provider name: unchanged
        # capabilities cost no request per period.
        self._synced = {}

    def sync(self, hypervisor_hostname, capabilities):
        """Bring the provider's traits up to date; True if they are.

        Never raises for placement's sake: the next period tries again.
        """
        ours = trait_names(reporting.enforceable_policies(capabilities),
                           capabilities)
        if self._synced.get(hypervisor_hostname) == ours:
            return True
        try:
            self._sync(hypervisor_hostname, ours)
        except (PlacementError, ks_exc.ClientException) as exc:
            LOG.warning('Placement traits of %s not synced: %s',
                        hypervisor_hostname, exc)
            return False
        self._synced[hypervisor_hostname] = ours
        return True

    def _request(self, method, url, expected, **kwargs):
        response = self._adapter.request(
            url, method, microversion=MICROVERSION, raise_exc=False,
            **kwargs)
        if response.status_code not in expected:
            raise PlacementError(f'{method} {url}: {response.status_code} '
                                 f'{response.text[:200]}')
        return response

    def provider_uuid(self, name):
        found = self._request(
            'GET', f'/resource_providers?name={parse.quote(name)}',
            (200,)).json()['resource_providers']
        if not found:
            # nova-compute registers it; until then there is nothing to do.
            raise PlacementError(f'no resource provider named {name}')
        return found[0]['uuid']

    def _sync(self, name, ours):
        uuid = self.provider_uuid(name)
        for trait in ours:
            # 201 created, 204 already there: idempotent.
            self._request('PUT', f'/traits/{trait}', (201, 204))
        url = f'/resource_providers/{uuid}/traits'
        # No pause between attempts: a conflict means our read is stale,
        # and reading again is what resolves it.
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_ProviderChanged),
            stop=tenacity.stop_after_attempt(self._max_conflicts))
        try:
            retrying(self._merge_traits, name, url, ours)
        except tenacity.RetryError:
            raise PlacementError(f'provider {name} kept changing: '
                                 f'{self._max_conflicts} conflicts in a row')

    def _merge_traits(self, name, url, ours):
        """Add ours to the provider's traits as read now, keeping theirs.

        :raises _ProviderChanged: placement's answer 409, someone
            (nova-compute) changed the provider since our read; reading it
            again is better than overwriting their change.
        """
        current = self._request('GET', url, (200,)).json()
        wanted = merge(current['traits'], ours)
        if wanted == set(current['traits']):
            return
        response = self._request('PUT', url, (200, 409), json={
            'traits': sorted(wanted),
            'resource_provider_generation':
                current['resource_provider_generation']})
        if response.status_code != 200:
            LOG.debug('Provider %s changed concurrently; retrying', name)
            raise _ProviderChanged(name)
        LOG.info('Placement traits of %s: %s', name, ', '.join(
            sorted(t for t in wanted if t.startswith(OURS))))


def register_placement_opts(conf):
    """keystoneauth's [placement] options, the ones nova.conf has."""
    ks_loading.register_session_conf_options(conf, PLACEMENT_GROUP)
    ks_loading.register_auth_conf_options(conf, PLACEMENT_GROUP)
    ks_loading.register_adapter_conf_options(conf, PLACEMENT_GROUP,
                                             include_deprecated=False)
    conf.set_default('service_type', 'placement', group=PLACEMENT_GROUP)


def adapter_from_conf(conf):
    register_placement_opts(conf)
    auth = ks_loading.load_auth_from_conf_options(conf, PLACEMENT_GROUP)
    if auth is None:
        raise ValueError('[numa_policy_agent] manage_traits needs '
                         'credentials in [placement] (auth_type and its '
                         'options, as in nova.conf)')
    session = ks_loading.load_session_from_conf_options(
        conf, PLACEMENT_GROUP, auth=auth)
    return ks_loading.load_adapter_from_conf_options(
        conf, PLACEMENT_GROUP, session=session, auth=auth)


def from_conf(conf):
    if not conf.numa_policy_agent.manage_traits:
        return None
    return PlacementTraits(adapter_from_conf(conf))
