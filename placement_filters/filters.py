"""Scheduler filters on agent reports: policy, NIC locality, node load.

Each filter resolves the request once, then asks one pure verdict function
per host (nova_numa_policy.scheduling.scoring) and logs every rejection at
DEBUG with the host, node and numbers.
"""

from oslo_log import log as logging

from nova.scheduler import filters
from nova.scheduler import utils as scheduler_utils

from nova_numa_policy.scheduling import scoring
from placement_filters import base

LOG = logging.getLogger(__name__)


class _ReportFilter(filters.BaseHostFilter):
    """A filter whose per-host answer is one pure verdict function."""

    RUN_ON_REBUILD = False
    verdict = None  # a scoring.*_verdict function

    def __init__(self):
        super().__init__()
        base.cache()  # start listening before the first request

    def asks(self, request):
        """Whether the filter has anything to check for this request."""
        raise NotImplementedError()

    def filter_all(self, host_states, spec_obj):
        if scheduler_utils.request_is_rebuild(spec_obj):
            return host_states
        request = base.request_for(spec_obj)
        if not self.asks(request):
            return host_states
        self._log_refusal(request)
        settings, now, cache = base.settings(), base.now(), base.cache()
        verdict = type(self).verdict
        return [host for host in host_states
                if self._passes(host, request, verdict(
                    request, cache.get(base.host_key(host)), settings,
                    now))]

    def host_passes(self, host_state, spec_obj):
        return bool(self.filter_all([host_state], spec_obj))

    def _passes(self, host_state, request, verdict):
        if not verdict.passed:
            LOG.debug('%(host)s, %(node)s fails %(filter)s: %(reason)s '
                      '(NUMA node %(numa_node)s, %(numbers)s)',
                      {'host': host_state.host, 'node': host_state.nodename,
                       'filter': type(self).__name__,
                       'reason': verdict.reason, 'numa_node': verdict.node,
                       'numbers': verdict.numbers},
                      instance_uuid=request.instance_uuid)
        return verdict.passed

    def _log_refusal(self, request):
        pass


class NumaPolicyFilter(_ReportFilter):
    """Pass hosts whose agent can enforce the flavor's hw:numa_policy.

    A flavor whose policy contradicts nova's own NUMA topology fails every
    host: this is where such a flavor is refused.
    """

    verdict = scoring.policy_verdict

    def asks(self, request):
        return request.error is not None or (
            request.policy_explicit and not request.nova_topology)

    def _log_refusal(self, request):
        if request.error is not None:
            LOG.info('Refusing the request on every host: %s',
                     request.error, instance_uuid=request.instance_uuid)


class NumaNicLocalityFilter(_ReportFilter):
    """For hw:numa_nic_locality=required: a NIC-local node must fit."""

    verdict = scoring.nic_verdict

    def asks(self, request):
        return (request.error is None and request.nic_required
                and not request.nova_topology)


class NumaNodeLoadFilter(_ReportFilter):
    """Fail hosts where every node would be over the load threshold."""

    verdict = scoring.load_verdict

    def asks(self, request):
        return request.error is None and not request.nova_topology
