"""The scheduler's view of the cloud, rebuilt from the collector database.

The scheduler caches a summary of each host's latest report; the collector
keeps that report's wire primitive in its history. Reading it back through
``load_report_data`` and ``summarize`` gives the explain call the very
summary the scheduler would hold, not an approximation from API rows.
"""

from oslo_log import log as logging
import sqlalchemy as sa

from nova_numa_policy.collector import models
from nova_numa_policy.conf import scheduler as scheduler_conf
from nova_numa_policy.contracts import exception
from nova_numa_policy.objects import wire as report_wire
from nova_numa_policy.scheduling import scoring
from nova_numa_policy.scheduling import summary as summary_mod

LOG = logging.getLogger(__name__)

# The history row of each host's latest report: the collector keeps the
# host row and the history row of one report on the same key.
_LATEST = sa.select(models.Report.host, models.Report.payload).join(
    models.Host, sa.and_(models.Host.host == models.Report.host,
                         models.Host.seq == models.Report.seq,
                         models.Host.generated_at ==
                         models.Report.generated_at)).order_by(
    models.Report.host)


def latest_payloads(storage):
    """``[(host, wire primitive)]`` of every host's latest report."""
    with storage.engine.connect() as connection:
        return [(row.host, row.payload)
                for row in connection.execute(_LATEST)]


def summaries(payloads, io_rate):
    """``{(host, nodename): HostSummary}``, as the scheduler's cache.

    A payload that no longer reads (say, from an agent newer than this
    code) is left out, as the scheduler drops it, rather than fail the call.
    """
    snapshot = {}
    for host, payload in payloads:
        try:
            data = report_wire.load_report_data(payload)
        except exception.MalformedReport as exc:
            LOG.warning('Leaving host %s out of explain: %s', host, exc)
            continue
        summary = summary_mod.summarize(data, io_rate)
        snapshot[summary.key] = summary
    return snapshot


def settings(group):
    """The scoring settings from the ``[numa_policy_scheduler]`` group."""
    return scoring.Settings(
        ttl=float(group.report_ttl),
        strict=group.no_report_mode == scheduler_conf.STRICT,
        threshold=group.node_load_threshold,
        weigh_plain_flavors=group.weigh_plain_flavors,
        vcpu_load=group.expected_vcpu_load,
        filter_plain_flavors=group.filter_plain_flavors)
