"""The panel's tables; rows are the API's JSON dicts as they come."""

from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from horizon import tables

from nova_numa_policy.dashboard.numa import bars

DETAIL = 'horizon:admin:numa_policy:detail'


def _host_link(datum):
    return reverse(DETAIL, args=[datum['host']])


class DictTable(tables.DataTable):
    """Rows are dicts; ``id_key`` names the field that identifies one."""

    id_key = 'id'

    def get_object_id(self, datum):
        return str(datum[self.id_key])

    def get_object_display(self, datum):
        return str(datum[self.id_key])


class HostsTable(DictTable):
    id_key = 'host'
    host = tables.Column('host', verbose_name=_('Host'), link=_host_link)
    nodes = tables.Column(bars.nodes_cell,
                          verbose_name=_('NUMA nodes: CPU load, memory, '
                                         'NICs'),
                          classes=('numa-nodes-cell',))
    nics = tables.Column(bars.nics_cell, verbose_name=_('NIC locality'))
    instances = tables.Column('instance_count', verbose_name=_('Instances'))
    agent = tables.Column('agent_version', verbose_name=_('Agent'))
    reported = tables.Column('generated_at', verbose_name=_('Reported at'))

    class Meta:
        name = 'hosts'
        # One marker parameter per table: the index pages three tables.
        pagination_param = 'hosts_marker'
        verbose_name = _('Hosts')


class InstancesTable(DictTable):
    id_key = 'uuid'
    uuid = tables.Column('uuid', verbose_name=_('Instance'),
                         link='horizon:admin:instances:detail')
    host = tables.Column('host', verbose_name=_('Host'), link=_host_link)
    requested = tables.Column('requested_policy', empty_value='-',
                              verbose_name=_('Requested policy'))
    applied = tables.Column('applied_policy',
                            verbose_name=_('Applied policy'))
    status = tables.Column(bars.policy_status_cell, verbose_name=_('Status'),
                           classes=('numa-policy-status',))
    memory = tables.Column(bars.memory_cell,
                           verbose_name=_('Memory per node'))
    access = tables.Column('access_class', empty_value='-',
                           verbose_name=_('Access class'))

    class Meta:
        name = 'instances'
        # One marker parameter per table: the index pages three tables.
        pagination_param = 'instances_marker'
        verbose_name = _('Instances')


class ActionsTable(DictTable):
    time = tables.Column('generated_at', verbose_name=_('Time'))
    host = tables.Column('host', verbose_name=_('Host'), link=_host_link)
    instance = tables.Column('instance_uuid', empty_value='-',
                             verbose_name=_('Instance'))
    kind = tables.Column('kind', verbose_name=_('Action'))
    outcome = tables.Column(bars.outcome_cell, verbose_name=_('Outcome'),
                            classes=('numa-outcome',))
    reason = tables.Column('reason', verbose_name=_('Reason'))

    class Meta:
        name = 'actions'
        # One marker parameter per table: the index pages three tables.
        pagination_param = 'actions_marker'
        verbose_name = _('Recent agent actions')


class NodesTable(DictTable):
    node = tables.Column('id', verbose_name=_('Node'))
    # Dropped by the view on a host that says no lower tier.
    tier = tables.Column(bars.tier_text, verbose_name=_('Memory tier'))
    load = tables.Column(bars.node_line,
                         verbose_name=_('CPU load, memory, NICs'))
    cpus = tables.Column(lambda d: ', '.join(map(str, d['cpus'])),
                         verbose_name=_('CPUs'))
    free = tables.Column(lambda d: (f"{d['memory_free_mb']} / "
                                    f"{d['memory_total_mb']} MiB"),
                         verbose_name=_('Free memory'))
    instance_mb = tables.Column('instance_memory_mb',
                                verbose_name=_('Instance memory (MiB)'))
    distances = tables.Column(lambda d: ' '.join(map(str, d['distances'])),
                              verbose_name=_('Distances'))

    class Meta:
        name = 'nodes'
        verbose_name = _('NUMA nodes')


class HostInstancesTable(InstancesTable):
    class Meta:
        name = 'host_instances'
        verbose_name = _('Instances on this host')


class HostActionsTable(ActionsTable):
    class Meta:
        name = 'host_actions'
        verbose_name = _('Recent actions on this host')
