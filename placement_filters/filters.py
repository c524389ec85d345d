"""Scheduler filters on agent reports: policy, NIC locality, node load.

Each filter resolves the request once, then reads one field of the host's
shared :class:`~nova_numa_policy.scheduling.assess.Assessment` per host: a
host is assessed once per request shape and report, whichever of our
filters and weighers asks first. A rejection is logged at DEBUG with the
host, node and numbers, rebuilt by the pure verdict function only when
DEBUG is on. ``NumaFilter`` runs all three checks as one filter, which
saves nova's per-filter overhead on large clouds.

Load is a preference, never a reason for "No valid host": when no host
has a node measured under the load threshold, the load filter keeps
them all (``NumaFilter``: all that pass its other checks) and says why
at INFO (:func:`nova_numa_policy.scheduling.scoring.keep`).
"""

import itertools

from oslo_log import log as logging

from nova import exception as nova_exception
from nova.scheduler import filters
from nova.scheduler import utils as scheduler_utils

from nova_numa_policy.scheduling import assess
from nova_numa_policy.scheduling import scoring
from placement_filters import assessors
from placement_filters import base

LOG = logging.getLogger(__name__)

POLICY_CHECK = ('NumaPolicyFilter', assess.POLICY, scoring.policy_verdict)
NIC_CHECK = ('NumaNicLocalityFilter', assess.NIC, scoring.nic_verdict)
LOAD_CHECK = ('NumaNodeLoadFilter', assess.LOAD, scoring.load_verdict)


class _ReportFilter(filters.BaseHostFilter):
    """A filter whose per-host answer is one field of an assessment."""

    RUN_ON_REBUILD = False
    field = None  # the assess.Assessment field that decides
    checks = ()  # (name, field, verdict function) of what is logged

    def __init__(self):
        super().__init__()
        base.start_listening()

    def asks(self, assessor):
        """Whether the filter has anything to check for this request."""
        raise NotImplementedError()

    def filter_all(self, host_states, spec_obj):
        return self._filter(host_states, spec_obj, whole_list=True)

    def _filter(self, host_states, spec_obj, whole_list):
        """The hosts that pass; ``whole_list``: all nova has left to judge.

        Only a whole list can say that silent agents left no host.
        """
        if scheduler_utils.request_is_rebuild(spec_obj):
            return host_states
        request, assessor = base.assessor_for(spec_obj)
        if not self.asks(assessor):
            return host_states
        self._refuse(request)
        get, now = base.cache().get, base.now()
        summaries = list(map(get, map(base.HOST_KEY, host_states)))
        assessments = assessors.assess_many(assessor, summaries, now)
        field = self.field
        kept, load_set_aside = assess.kept(assessments, field)
        passed = [host for host, keep in zip(host_states, kept) if keep]
        if whole_list and not passed and host_states:
            _refuse_for_want_of_reports(request, assessor, host_states,
                                        assessments, field)
            _refuse_for_want_of_top_tier(request, assessor, summaries, now,
                                         field)
        if whole_list and passed and field != assess.LOAD:
            _say_passed_without_reports(type(self).__name__, request,
                                        assessor, host_states, assessments)
        if load_set_aside:
            _log_load_set_aside(type(self).__name__, request,
                                assessor.settings, len(passed))
        # Reasons cost more than the decision: build them only when seen.
        if len(passed) < len(assessments) and LOG.isEnabledFor(
                logging.DEBUG):
            for host, summary, assessment, keep in zip(
                    host_states, summaries, assessments, kept):
                if not keep:
                    self._log_failure(host, request, assessor.settings,
                                      summary, now, assessment)
        return passed

    def host_passes(self, host_state, spec_obj):
        return bool(self._filter([host_state], spec_obj, whole_list=False))

    def _log_failure(self, host_state, request, settings, summary, now,
                     assessment):
        name = type(self).__name__
        for check, field, verdict_fn in self.checks:
            if assessment[field]:
                continue
            verdict = verdict_fn(request, summary, settings, now)
            LOG.debug('%(host)s, %(node)s fails %(filter)s: %(reason)s '
                      '(NUMA node %(numa_node)s, %(numbers)s)',
                      {'host': host_state.host, 'node': host_state.nodename,
                       'filter': name if check == name
                       else f'{name} ({check})',
                       'reason': verdict.reason, 'numa_node': verdict.node,
                       'numbers': verdict.numbers},
                      instance_uuid=request.instance_uuid)

    def _refuse(self, request):
        pass


def _log_load_set_aside(name, request, settings, kept):
    """Say why hosts over the load threshold were kept.

    Load is a preference: when no host has a node measured under the
    threshold for this instance, refusing them all would fail a request
    nova would place, so none is refused for its load (scoring.keep).
    """
    LOG.info('%(filter)s: no host has a NUMA node measured at or under '
             'the load threshold %(threshold)s for this instance '
             '(%(vcpus)d vCPUs, %(memory_mb)d MB); load is set aside and '
             "nova's own filters and weighers choose among %(kept)d "
             'host(s)',
             {'filter': name, 'threshold': settings.threshold,
              'vcpus': request.vcpus, 'memory_mb': request.memory_mb,
              'kept': kept}, instance_uuid=request.instance_uuid)


# Requests this scheduler process refused because hosts without a fresh
# report emptied the list: the operator's count, in each such log line.
_refused_for_want_of_reports = itertools.count(1)
# Hosts named in that log line, at most.
SILENT_HOSTS_LOGGED = 10


def _refuse_for_want_of_reports(request, assessor, host_states,
                                assessments, field):
    """Fail the request saying why, when silent agents emptied the list.

    In strict mode a host without a fresh report fails a flavor that asks
    what only a report answers. When every host left is such a host, the
    server's fault names the cause instead of nova's bare "No valid host"
    (nova's conductor writes a NoValidHost reason there), and the
    operator's log names the silent hosts. Where some hosts reported and
    were refused for what they reported, silence is not the cause.
    """
    if assess.without_report(assessor, assessments, field) < len(
            host_states):
        return
    settings = assessor.settings
    keys = scoring.report_questions(request, assessor.asks_policy,
                                    assessor.asks_nic)
    silent = sorted({host.host for host in host_states})
    LOG.warning('No host for %(keys)s: none of the %(hosts)d host(s) '
                'left has a fresh NUMA report (report_ttl %(ttl)s s, '
                'no_report_mode strict); refused, %(count)d such refusal(s) '
                'by this scheduler process. Check numa-policy-agent on: '
                '%(silent)s',
                {'keys': ', '.join(keys), 'hosts': len(host_states),
                 'ttl': settings.ttl,
                 'count': next(_refused_for_want_of_reports),
                 'silent': ', '.join(silent[:SILENT_HOSTS_LOGGED])},
                instance_uuid=request.instance_uuid)
    raise nova_exception.NoValidHost(reason=scoring.no_report_refusal(
        keys, settings.ttl))


def _refuse_for_want_of_top_tier(request, assessor, summaries, now,
                                 field):
    """Fail the request saying why, when no host's top tier has room.

    A flavor that keeps its memory on the top memory tier
    (``hw:numa_memory_tiers`` ``top`` or ``tiered``) is the operator's
    policy: when every host left was refused for it, the server's fault
    says so instead of nova's bare "No valid host"; each host's numbers
    are in the DEBUG log and in explain. Only on the failure path: each
    host's policy verdict is built again for its reason.
    """
    if field not in (assess.POLICY, assess.PASSED) or not (
            request.asks_tiers and assessor.asks_policy):
        return
    settings = assessor.settings
    for summary in summaries:
        if scoring.policy_verdict(request, summary, settings,
                                  now).why != 'top-tier-full':
            return
    reason = scoring.tier_refusal(request)
    LOG.info('Refusing the request: no host left has the memory it keeps '
             'on the top memory tier: %s', reason,
             instance_uuid=request.instance_uuid)
    raise nova_exception.NoValidHost(reason=reason)


def _say_passed_without_reports(name, request, assessor, host_states,
                                assessments):
    """Log the hosts passed unheard in permissive mode: a degraded answer.

    Such a host may take an instance whose policy its agent cannot yet
    confirm; the operator's log says which hosts and that the instance is
    left to its host's agent, which handles it as it handles every guest
    it finds when it reports again.
    """
    if assessor.settings.strict:
        return
    keys = scoring.report_questions(request, assessor.asks_policy,
                                    assessor.asks_nic)
    silent = [host.host for host, assessment
              in zip(host_states, assessments)
              if assessment is assessor.no_report]
    if not keys or not silent:
        return
    LOG.warning('%(filter)s: %(silent)d of %(hosts)d host(s) passed for '
                '%(keys)s without a fresh NUMA report (no_report_mode '
                'permissive); an instance placed there waits for its '
                "host's agent to report again. Silent: %(names)s",
                {'filter': name, 'silent': len(silent),
                 'hosts': len(host_states), 'keys': ', '.join(keys),
                 'names': ', '.join(sorted(silent)[:SILENT_HOSTS_LOGGED])},
                instance_uuid=request.instance_uuid)


def _refuse_a_contradictory_request(request):
    """Fail the request itself when its flavor contradicts nova's keys.

    nova validates a flavor's extra specs one key at a time, so a
    contradiction (hw:numa_policy=interleave with hw:cpu_policy=dedicated)
    is first seen here. Failing every host would tell the user only "No
    valid host was found"; NoValidHost raised with the reason reaches the
    instance's fault message (nova's conductor writes it there).
    """
    if request.error is not None:
        LOG.info('Refusing the request on every host: %s',
                 request.error, instance_uuid=request.instance_uuid)
        raise nova_exception.NoValidHost(reason=request.error)


class NumaPolicyFilter(_ReportFilter):
    """Pass hosts whose agent can enforce the flavor's hw:numa_policy.

    And, for hw:numa_memory_tiers top or tiered, hosts whose top memory
    tier has the memory the flavor keeps there (a host without a lower
    tier always has). A flavor whose policy contradicts nova's own NUMA
    topology fails the request with the reason: this is where such a
    flavor is refused.
    """

    field = assess.POLICY
    checks = (POLICY_CHECK,)

    def asks(self, assessor):
        return assessor.asks_policy

    def _refuse(self, request):
        _refuse_a_contradictory_request(request)


class NumaNicLocalityFilter(_ReportFilter):
    """For hw:numa_nic_locality=required: a NIC-local node must fit."""

    field = assess.NIC
    checks = (NIC_CHECK,)

    def asks(self, assessor):
        return assessor.asks_nic


class NumaNodeLoadFilter(_ReportFilter):
    """Fail hosts where every node that holds the instance is busy.

    Busy is measured: a node's floating CPUs over the load threshold.
    Flavors that name no ``hw:numa_*`` key are judged only with
    ``filter_plain_flavors``. When no host has a quiet node, none is
    refused for its load, and the reason is logged.
    """

    field = assess.LOAD
    checks = (LOAD_CHECK,)

    def asks(self, assessor):
        return assessor.asks_load


class NumaFilter(_ReportFilter):
    """NumaPolicyFilter, NumaNicLocalityFilter and NumaNodeLoadFilter in one.

    The same hosts pass as through the three filters; nova's fixed cost is
    paid once instead of three times. Enable either this or the three.
    """

    field = assess.PASSED
    checks = (POLICY_CHECK, NIC_CHECK, LOAD_CHECK)

    def asks(self, assessor):
        return assessor.asks

    def _refuse(self, request):
        _refuse_a_contradictory_request(request)
