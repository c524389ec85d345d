"""``openstack numa host list|show``."""

from cliff import columns

from nova_numa_policy.osc.v1 import common

LIST_FIELDS = ('host', 'node_count', 'instance_count', 'agent_version',
               'generated_at', 'report_fresh')
LONG_FIELDS = LIST_FIELDS + ('hypervisor_hostname', 'seq', 'received_at',
                             'period', 'enforceable_policies')
HEADERS = {'host': 'Host', 'node_count': 'NUMA Nodes',
           'instance_count': 'Instances', 'agent_version': 'Agent Version',
           'generated_at': 'Reported At',
           # Whether the scheduler heeds the report (report_ttl).
           'report_fresh': 'Fresh', 'hypervisor_hostname':
           'Hypervisor Hostname', 'seq': 'Seq', 'received_at': 'Received At',
           'period': 'Period (s)', 'enforceable_policies':
           'Enforceable Policies'}


def _percent(fraction):
    return f'{round(fraction * 100)} %'


def describe_node(node):
    """One line per node: load, free memory, instance memory, NICs.

    Where nova dedicates some of the node's CPUs to pinned guests, the
    load is followed by what the scheduler judges unpinned guests by;
    where the host says, the free memory by its memory tier.
    """
    nics = ', '.join(node['nics']) or 'no NIC'
    return (f"node {node['id']}: load {_percent(node['cpu_load'])}"
            f"{_unpinned(node)}, "
            f"{node['memory_free_mb']}/{node['memory_total_mb']} MiB free"
            f"{_tier(node)}, "
            f"instances {node['instance_memory_mb']} MiB, {nics}")


def _tier(node):
    """The rank of the node's memory tier, when the host says one.

    Nothing where it does not (a kernel without memory tiers, an agent
    or API older than the field): the line reads as it always did.
    """
    tier = node.get('memory_tier')
    return '' if tier is None else f' (memory tier {tier})'


def _unpinned(node):
    """The node's CPUs for unpinned guests and their load, when not all.

    Nothing to say when every CPU is theirs, or the API is older than
    the field.
    """
    cpus = node.get('floating_cpus')
    if cpus is None or len(cpus) == len(node['cpus']):
        return ''
    if not cpus:
        return ' (no CPU for unpinned guests)'
    return (f" (unpinned guests: {len(cpus)} of {len(node['cpus'])} CPUs"
            f" at {_percent(node['floating_load'])})")


def describe_nic(nic):
    where = ('no NUMA node' if nic['numa_node'] is None
             else f"node {nic['numa_node']}")
    speed = ('' if nic['speed_mbps'] is None
             else f", {nic['speed_mbps']} Mb/s")
    physnet = '' if nic['physnet'] is None else f", {nic['physnet']}"
    return f"{nic['name']} ({where}{speed}{physnet}){_irqs(nic)}"


def _irqs(nic):
    """Its vectors, the CPUs they go to and why, when the API says."""
    irqs = nic.get('irqs')
    if not irqs:
        return ''
    verdict = nic.get('irq_steering')
    why = f': {verdict}' if verdict else ''
    return (f"; {len(irqs)} interrupt vector(s) on CPUs "
            f"{_cpus(nic.get('irq_cpus') or [])}{why}")


def _cpus(cpus):
    return ','.join(str(cpu) for cpu in cpus) or 'unknown'


class LinesColumn(columns.FormattableColumn):
    """Dicts described one per line for people, raw for -f json/yaml."""

    describe = None

    def human_readable(self):
        return '\n'.join(self.describe(item) for item in self._value)

    def machine_readable(self):
        return list(self._value)


class NodesColumn(LinesColumn):
    describe = staticmethod(describe_node)


class NicsColumn(LinesColumn):
    describe = staticmethod(describe_nic)


class InstanceUuidsColumn(common.ListColumn):
    def human_readable(self):
        return '\n'.join(i['uuid'] for i in self._value)

    def machine_readable(self):
        return [i['uuid'] for i in self._value]


SHOW_FORMATTERS = {'numa_nodes': NodesColumn, 'nics': NicsColumn,
                   'instances': InstanceUuidsColumn,
                   'enforceable_policies': common.ListColumn}


class ListHost(common.ListCommand):
    """List compute hosts with their latest NUMA report."""

    fields, long_fields, headers = LIST_FIELDS, LONG_FIELDS, HEADERS
    formatters = SHOW_FORMATTERS
    marker_help = 'host name'

    def query(self, client, parsed_args):
        return client.list_hosts, {}


class ShowHost(common.ShowCommand):
    """Show a host's NUMA nodes (load, memory, NICs) and instances."""

    key, key_help = 'host', 'Compute host name, as nova knows it.'
    show_method = 'show_host'
    formatters = SHOW_FORMATTERS
