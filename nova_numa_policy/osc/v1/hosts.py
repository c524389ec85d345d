"""``openstack numa host list|show``."""

from cliff import columns
from osc_lib.command import command

from nova_numa_policy.osc.v1 import common

LIST_FIELDS = ('host', 'node_count', 'instance_count', 'agent_version',
               'generated_at')
LONG_FIELDS = LIST_FIELDS + ('hypervisor_hostname', 'seq', 'received_at',
                             'period', 'enforceable_policies')
HEADERS = {'host': 'Host', 'node_count': 'NUMA Nodes',
           'instance_count': 'Instances', 'agent_version': 'Agent Version',
           'generated_at': 'Reported At', 'hypervisor_hostname':
           'Hypervisor Hostname', 'seq': 'Seq', 'received_at': 'Received At',
           'period': 'Period (s)', 'enforceable_policies':
           'Enforceable Policies'}


def _percent(fraction):
    return f'{round(fraction * 100)} %'


def describe_node(node):
    """One line per node: load, free memory, instance memory, NICs."""
    nics = ', '.join(node['nics']) or 'no NIC'
    return (f"node {node['id']}: load {_percent(node['cpu_load'])}, "
            f"{node['memory_free_mb']}/{node['memory_total_mb']} MiB free, "
            f"instances {node['instance_memory_mb']} MiB, {nics}")


def describe_nic(nic):
    where = ('no NUMA node' if nic['numa_node'] is None
             else f"node {nic['numa_node']}")
    speed = ('' if nic['speed_mbps'] is None
             else f", {nic['speed_mbps']} Mb/s")
    physnet = '' if nic['physnet'] is None else f", {nic['physnet']}"
    return f"{nic['name']} ({where}{speed}{physnet})"


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


class ListHost(command.Lister):
    """List compute hosts with their latest NUMA report."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        common.add_paging(parser, 'host name')
        return parser

    @common.api_errors
    def take_action(self, parsed_args):
        client = self.app.client_manager.numa_policy
        hosts = common.fetch(client.list_hosts, parsed_args)
        fields = LONG_FIELDS if parsed_args.long else LIST_FIELDS
        return (tuple(HEADERS[f] for f in fields),
                common.rows(hosts, fields, SHOW_FORMATTERS))


class ShowHost(command.ShowOne):
    """Show a host's NUMA nodes (load, memory, NICs) and instances."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('host', metavar='<host>',
                            help='Compute host name, as nova knows it.')
        return parser

    @common.api_errors
    def take_action(self, parsed_args):
        client = self.app.client_manager.numa_policy
        return common.show(client.show_host(parsed_args.host),
                           SHOW_FORMATTERS)
