"""``openstack numa action list``."""

from cliff import columns

from nova_numa_policy.osc.v1 import common

LIST_FIELDS = ('id', 'generated_at', 'host', 'instance_uuid', 'kind',
               'outcome', 'reason')
LONG_FIELDS = LIST_FIELDS + ('details', 'seq', 'received_at')
HEADERS = {'id': 'ID', 'generated_at': 'Time', 'host': 'Host',
           'instance_uuid': 'Instance UUID', 'kind': 'Kind',
           'outcome': 'Outcome', 'reason': 'Reason', 'details': 'Details',
           'seq': 'Seq', 'received_at': 'Received At'}


class DetailsColumn(columns.FormattableColumn):
    def human_readable(self):
        return ', '.join(f'{k}={v}' for k, v in sorted(self._value.items()))

    def machine_readable(self):
        return dict(self._value)


class ListAction(common.ListCommand):
    """List what the agents did (or would do in dry-run) and why."""

    fields, long_fields, headers = LIST_FIELDS, LONG_FIELDS, HEADERS
    formatters = {'details': DetailsColumn}
    marker_help = 'action ID'

    def add_filters(self, parser):
        parser.add_argument('--host', metavar='<host>',
                            help='Only actions of this compute host.')
        parser.add_argument('--instance', metavar='<uuid>',
                            help='Only actions on this instance.')

    def query(self, client, parsed_args):
        return client.list_actions, {'host': parsed_args.host,
                                     'instance_uuid': parsed_args.instance}
