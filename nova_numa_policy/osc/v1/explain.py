"""``openstack numa explain``: why the scheduler would (not) pick a host."""

from cliff import columns
from openstack import exceptions as sdk_exceptions
from osc_lib.cli import parseractions
from osc_lib.command import command
from osc_lib import exceptions

from nova_numa_policy.osc.v1 import common

FIELDS = ('host', 'passed', 'failures', 'weights', 'report_age',
          'locality_signal')
LONG_FIELDS = FIELDS + ('measurements', 'filters')
HEADERS = {'host': 'Host', 'passed': 'Passed', 'failures': 'Failed Filters',
           'weights': 'Weights', 'report_age': 'Report Age (s)',
           'locality_signal': 'Locality Signal',
           'measurements': 'Measurements', 'filters': 'Filters'}


def _verdict_text(verdict):
    numbers = ', '.join(f'{k}={v}' for k, v in
                        sorted(verdict['numbers'].items()))
    text = f"{verdict['name']}: {verdict['reason']}"
    return f'{text} ({numbers})' if numbers else text


class VerdictsColumn(common.ListColumn):
    """Filter verdicts, one per line, each with its reason and numbers."""

    def human_readable(self):
        return '\n'.join(_verdict_text(v) for v in self._value)


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
    # An API from before measurements were reported says nothing of them.
    item.setdefault('measurements', [])
    if item['report_age'] is not None:
        item['report_age'] = round(item['report_age'], 1)
    return common.rows([item], fields, {
        'failures': VerdictsColumn, 'filters': VerdictsColumn,
        'weights': WeightsColumn, 'measurements': common.ListColumn})[0]


class Explain(command.Lister):
    """Explain, for a flavor, each host's scheduler filters and weights."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--flavor', metavar='<flavor>',
            help="A nova flavor (name or ID): its vCPUs, memory and extra "
                 "specs, which --vcpus, --memory-mb and --property "
                 "override.")
        parser.add_argument('--vcpus', metavar='<n>', type=int,
                            help="The flavor's vCPUs (required without "
                                 "--flavor).")
        parser.add_argument('--memory-mb', metavar='<mb>', type=int,
                            help="The flavor's memory in MiB (required "
                                 "without --flavor).")
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
        vcpus, memory_mb, extra_specs = self._flavor(parsed_args)
        client = self.app.client_manager.numa_policy
        body = client.explain(vcpus, memory_mb, extra_specs=extra_specs,
                              physnets=parsed_args.physnets)
        fields = LONG_FIELDS if parsed_args.long else FIELDS
        return (tuple(HEADERS[f] for f in fields),
                [_row(host, fields) for host in body['hosts']])

    def _flavor(self, parsed_args):
        """(vcpus, memory_mb, extra_specs): nova's flavor, then the options.

        The options win over the flavor, so one flavor can be tried with
        another size or an extra spec changed without creating a flavor.
        """
        vcpus, memory_mb, extra_specs = None, None, {}
        if parsed_args.flavor is not None:
            flavor = find_flavor(self.app.client_manager.compute,
                                 parsed_args.flavor)
            vcpus, memory_mb = flavor.vcpus, flavor.ram
            extra_specs = dict(flavor.extra_specs or {})
        extra_specs.update(parsed_args.properties)
        if parsed_args.vcpus is not None:
            vcpus = parsed_args.vcpus
        if parsed_args.memory_mb is not None:
            memory_mb = parsed_args.memory_mb
        if vcpus is None or memory_mb is None:
            raise exceptions.CommandError(
                'give --flavor, or both --vcpus and --memory-mb')
        return vcpus, memory_mb, extra_specs


def find_flavor(compute, name_or_id):
    """The flavor from openstacksdk's compute proxy, with its extra specs.

    Before compute API microversion 2.61 a flavor comes without its extra
    specs; ``get_extra_specs`` fetches them then.
    """
    try:
        return compute.find_flavor(name_or_id, ignore_missing=False,
                                   get_extra_specs=True)
    except sdk_exceptions.NotFoundException:
        raise exceptions.CommandError(
            f'no flavor with the name or ID {name_or_id!r}')
    except sdk_exceptions.DuplicateResource:
        raise exceptions.CommandError(
            f'more than one flavor is named {name_or_id!r}; give its ID')
