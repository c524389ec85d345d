"""``openstack numa instance list|show``."""

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


class ListInstance(common.ListCommand):
    """List instances with their requested and applied NUMA policy."""

    fields, long_fields, headers = LIST_FIELDS, LONG_FIELDS, HEADERS
    formatters = FORMATTERS
    marker_help = 'instance UUID'

    def add_filters(self, parser):
        parser.add_argument('--host', metavar='<host>',
                            help='Only instances on this compute host.')

    def query(self, client, parsed_args):
        return client.list_instances, {'host': parsed_args.host}


class ShowInstance(common.ShowCommand):
    """Show an instance's NUMA policy, memory per node and vCPU CPUs."""

    key, key_help = 'uuid', 'Instance UUID.'
    show_method = 'show_instance'
    formatters = FORMATTERS
