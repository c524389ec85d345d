"""``openstack numa action list``."""

from cliff import columns
from osc_lib.command import command

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


class ListAction(command.Lister):
    """List what the agents did (or would do in dry-run) and why."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--host', metavar='<host>',
                            help='Only actions of this compute host.')
        parser.add_argument('--instance', metavar='<uuid>',
                            help='Only actions on this instance.')
        common.add_paging(parser, 'action ID')
        return parser

    @common.api_errors
    def take_action(self, parsed_args):
        client = self.app.client_manager.numa_policy
        actions = common.fetch(client.list_actions, parsed_args,
                               host=parsed_args.host,
                               instance_uuid=parsed_args.instance)
        fields = LONG_FIELDS if parsed_args.long else LIST_FIELDS
        return (tuple(HEADERS[f] for f in fields),
                common.rows(actions, fields, {'details': DetailsColumn}))
