"""``openstack numa explain``: why the scheduler would (not) pick a host."""

from cliff import columns
from osc_lib.cli import parseractions
from osc_lib.command import command

from nova_numa_policy.osc.v1 import common

FIELDS = ('host', 'passed', 'failures', 'weights', 'report_age')
LONG_FIELDS = FIELDS + ('filters',)
HEADERS = {'host': 'Host', 'passed': 'Passed', 'failures': 'Failed Filters',
           'weights': 'Weights', 'report_age': 'Report Age (s)',
           'filters': 'Filters'}


def _verdict_text(verdict):
    numbers = ', '.join(f'{k}={v}' for k, v in
                        sorted(verdict['numbers'].items()))
    text = f"{verdict['name']}: {verdict['reason']}"
    return f'{text} ({numbers})' if numbers else text


class VerdictsColumn(columns.FormattableColumn):
    """Filter verdicts, one per line, each with its reason and numbers."""

    def human_readable(self):
        return '\n'.join(_verdict_text(v) for v in self._value)

    def machine_readable(self):
        return list(self._value)


class WeightsColumn(columns.FormattableColumn):
    def human_readable(self):
        return '\n'.join(
            f'{name}: {"-" if w is None else round(w, 3)}'
            for name, w in sorted(self._value.items()))

    def machine_readable(self):
        return dict(self._value)


def _row(host, fields):
    item = dict(host, failures=[f for f in host['filters']
                                if not f['passed']])
    if item['report_age'] is not None:
        item['report_age'] = round(item['report_age'], 1)
    return common.rows([item], fields, {
        'failures': VerdictsColumn, 'filters': VerdictsColumn,
        'weights': WeightsColumn})[0]


class Explain(command.Lister):
    """Explain, for a flavor, each host's scheduler filters and weights."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--vcpus', metavar='<n>', type=int,
                            required=True, help="The flavor's vCPUs.")
        parser.add_argument('--memory-mb', metavar='<mb>', type=int,
                            required=True,
                            help="The flavor's memory in MiB.")
        parser.add_argument(
            '--property', metavar='<key=value>', dest='properties',
            action=parseractions.KeyValueAction, default={},
            help='A flavor extra spec, e.g. hw:numa_policy=interleave; '
                 'repeat for several.')
        parser.add_argument(
            '--physnet', metavar='<physnet>', dest='physnets',
            action='append', default=[],
            help='A physical network the instance has a port on; repeat '
                 'for several.')
        parser.add_argument('--long', action='store_true', default=False,
                            help='Show every filter, passed or not.')
        return parser

    @common.api_errors
    def take_action(self, parsed_args):
        client = self.app.client_manager.numa_policy
        body = client.explain(parsed_args.vcpus, parsed_args.memory_mb,
                              extra_specs=parsed_args.properties,
                              physnets=parsed_args.physnets)
        fields = LONG_FIELDS if parsed_args.long else FIELDS
        return (tuple(HEADERS[f] for f in fields),
                [_row(host, fields) for host in body['hosts']])
