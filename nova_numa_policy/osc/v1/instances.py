"""``openstack numa instance list|show``."""

from osc_lib.command import command

from nova_numa_policy.osc.v1 import common

LIST_FIELDS = ('uuid', 'host', 'requested_policy', 'applied_policy',
               'policy_applied', 'memory_mb_per_node')
LONG_FIELDS = LIST_FIELDS + ('vcpu_cpus', 'io_rate', 'io_intensive',
                             'access_class', 'generated_at')
HEADERS = {'uuid': 'UUID', 'host': 'Host',
           'requested_policy': 'Requested Policy',
           'applied_policy': 'Applied Policy',
           'policy_applied': 'Policy Applied',
           'memory_mb_per_node': 'Memory per Node',
           'vcpu_cpus': 'vCPU CPUs', 'io_rate': 'I/O Rate',
           'io_intensive': 'I/O Intensive', 'access_class': 'Access Class',
           'generated_at': 'Reported At'}
FORMATTERS = {'memory_mb_per_node': common.MemoryPerNodeColumn,
              'vcpu_cpus': common.ListColumn}


class ListInstance(command.Lister):
    """List instances with their requested and applied NUMA policy."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--host', metavar='<host>',
                            help='Only instances on this compute host.')
        common.add_paging(parser, 'instance UUID')
        return parser

    @common.api_errors
    def take_action(self, parsed_args):
        client = self.app.client_manager.numa_policy
        instances = common.fetch(client.list_instances, parsed_args,
                                 host=parsed_args.host)
        fields = LONG_FIELDS if parsed_args.long else LIST_FIELDS
        return (tuple(HEADERS[f] for f in fields),
                common.rows(instances, fields, FORMATTERS))


class ShowInstance(command.ShowOne):
    """Show an instance's NUMA policy, memory per node and vCPU CPUs."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='Instance UUID.')
        return parser

    @common.api_errors
    def take_action(self, parsed_args):
        client = self.app.client_manager.numa_policy
        return common.show(client.show_instance(parsed_args.uuid),
                           FORMATTERS)
