"""Handlers of the ``/v1`` resources: authorize, validate, read, render.

Every handler checks the policy first, so a caller without the right gets
403 whatever it sent, then validates its input (400), then reads.
"""

import functools
import time
import types

from oslo_db import exception as db_exc
from oslo_policy import policy as oslo_policy

from nova_numa_policy.scheduling import explain as explain_mod

from nova_numa_policy.rest import errors
from nova_numa_policy.rest import policies
from nova_numa_policy.rest import snapshot
from nova_numa_policy.rest import validation
from nova_numa_policy.rest import views

HISTORY_MAX = 1000


def _query_pairs(request):
    return validation.query_pairs(request.query_string)


def _storage_errors(method):
    """Turn database failures the caller can act on into HTTP errors."""
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except db_exc.DBConnectionError:
            raise errors.ServiceUnavailable(
                'the collector database is unavailable; retry later')
    return wrapper


class Controllers:

    def __init__(self, storage, enforcer, default_limit, max_limit,
                 scheduler_group=None, clock=None):
        self._storage = storage
        # [numa_policy_scheduler], read per explain call so the answer
        # follows the options the scheduler reads.
        self._scheduler = scheduler_group
        # Looked up per call, never bound at import: a clock patched while
        # this module was first imported must not stick.
        self._clock = clock or (lambda: time.time())
        self._enforcer = enforcer
        self._default_limit = min(default_limit, max_limit)
        self._max_limit = max_limit

    def _authorize(self, context, rule):
        try:
            self._enforcer.authorize(rule, {}, context, do_raise=True)
        except (oslo_policy.PolicyNotAuthorized,
                oslo_policy.InvalidScope):
            raise errors.Forbidden(f'policy does not allow {rule} to be '
                                   f'performed')

    def _query(self, request, parsers, max_limit=None):
        return validation.query(
            _query_pairs(request), parsers, max_limit or self._max_limit,
            min(self._default_limit, max_limit or self._max_limit))

    @_storage_errors
    def list_hosts(self, request, context):
        self._authorize(context, policies.HOSTS_LIST)
        query = self._query(request, {'marker': validation.name})
        rows = self._storage.list_hosts(query['limit'], query.get('marker'))
        now, ttl = self._clock(), self._scheduler.report_ttl
        return views.page('hosts',
                          [views.host_summary(r, now, ttl) for r in rows],
                          query['limit'], request.path_url, {},
                          lambda item: item['host'])

    def _check_show(self, request, context, rule):
        """A single item's checks: the caller may read it, and no query."""
        self._authorize(context, rule)
        validation.no_query(_query_pairs(request))

    def _host_row(self, host):
        row = self._storage.get_host(host)
        if row is None:
            raise errors.NotFound(f'no report from host {host!r}')
        return row

    @_storage_errors
    def show_host(self, request, context, host):
        self._check_show(request, context, policies.HOSTS_SHOW)
        row = self._host_row(validation.name('host', host))
        return {'host': views.host_detail(row, self._clock(),
                                          self._scheduler.report_ttl)}

    @_storage_errors
    def list_host_reports(self, request, context, host):
        self._authorize(context, policies.HOSTS_SHOW)
        query = self._query(request, {}, max_limit=HISTORY_MAX)
        host = validation.name('host', host)
        rows = self._storage.list_reports(host, query['limit'])
        if not rows:
            self._host_row(host)  # an unknown host is a 404, not []
        return {'reports': [views.report_summary(r) for r in rows]}

    @_storage_errors
    def list_instances(self, request, context):
        self._authorize(context, policies.INSTANCES_LIST)
        query = self._query(request, {'marker': validation.instance_uuid,
                                      'host': validation.name})
        rows = self._storage.list_instances(
            query['limit'], query.get('marker'), host=query.get('host'))
        filters = {k: query[k] for k in ('host',) if k in query}
        return views.page('instances', [views.instance(r) for r in rows],
                          query['limit'], request.path_url, filters,
                          lambda item: item['uuid'])

    def _instance_row(self, uuid):
        row = self._storage.get_instance(uuid)
        if row is None:
            raise errors.NotFound(f'no report describes instance {uuid}')
        return row

    @_storage_errors
    def show_instance(self, request, context, uuid):
        self._check_show(request, context, policies.INSTANCES_SHOW)
        row = self._instance_row(validation.instance_uuid('uuid', uuid))
        return {'instance': views.instance(row)}

    @_storage_errors
    def list_actions(self, request, context):
        self._authorize(context, policies.ACTIONS_LIST)
        query = self._query(request, {
            'marker': validation.positive_int, 'host': validation.name,
            'instance_uuid': validation.instance_uuid})
        rows = self._storage.list_actions(
            query['limit'], query.get('marker'), host=query.get('host'),
            instance_uuid=query.get('instance_uuid'))
        filters = {k: query[k] for k in ('host', 'instance_uuid')
                   if k in query}
        return views.page('actions', [views.action(r) for r in rows],
                          query['limit'], request.path_url, filters,
                          lambda item: item['id'])

    @_storage_errors
    def explain(self, request, context):
        self._authorize(context, policies.EXPLAIN)
        query = validation.explain_query(_query_pairs(request))
        flavor = types.SimpleNamespace(
            vcpus=query['vcpus'], memory_mb=query['memory_mb'],
            extra_specs=query['extra_specs'])
        settings = snapshot.settings(self._scheduler)
        hosts = snapshot.summaries(snapshot.latest_payloads(self._storage),
                                   self._scheduler.io_intensive_rate)
        explanations = explain_mod.explain(
            flavor, hosts, settings, self._clock(),
            physnets=query['physnets'])
        return views.explanation(flavor, query['physnets'], settings,
                                 explanations)
