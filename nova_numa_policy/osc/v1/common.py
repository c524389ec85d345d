"""What every ``openstack numa`` command shares: paging and errors."""

import functools

from cliff import columns
from osc_lib.command import command
from osc_lib import exceptions

from nova_numa_policy import restclient


def api_errors(take_action):
    """Show the API's own error message instead of a traceback."""
    @functools.wraps(take_action)
    def wrapper(self, parsed_args):
        try:
            return take_action(self, parsed_args)
        except restclient.ApiError as exc:
            raise exceptions.CommandError(
                f'numa-policy API error {exc.status}: {exc.message}')
    return wrapper


def add_paging(parser, marker_help):
    parser.add_argument(
        '--limit', metavar='<num>', type=int,
        help='Show at most <num> items, one API page (the API refuses '
             'more than its max_limit). Default: every item, page by page.')
    parser.add_argument('--marker', metavar='<marker>',
                        help=f'Start after this {marker_help}.')
    parser.add_argument('--long', action='store_true', default=False,
                        help='List more columns.')


def fetch(list_method, parsed_args, **filters):
    """One page when ``--limit`` is given, else every page."""
    if parsed_args.limit is not None:
        if parsed_args.limit < 1:
            raise exceptions.CommandError('--limit must be at least 1')
        return list_method(limit=parsed_args.limit,
                           marker=parsed_args.marker, **filters).items
    return list(restclient.walk(list_method, marker=parsed_args.marker,
                                **filters))


def rows(items, fields, formatters=None):
    """Table rows of ``fields`` from API dicts, formatted per field."""
    formatters = formatters or {}
    return [tuple(formatters[f](item[f]) if f in formatters else item[f]
                  for f in fields) for item in items]


class ListCommand(command.Lister):
    """A list of one API collection, its table described by attributes.

    ``fields`` and ``long_fields`` (with ``--long``) name the columns,
    ``headers`` their titles, ``formatters`` their cliff column types;
    ``marker_help`` says what ``--marker`` takes. Subclasses add their
    filter options in ``add_filters`` and name the client's list method
    and its filters in ``query``.
    """

    fields = ()
    long_fields = ()
    headers = {}
    formatters = {}
    marker_help = ''

    def add_filters(self, parser):
        """Add the command's own filter options to ``parser``."""

    def query(self, client, parsed_args):
        """(the client's list method, {filter: value})."""
        raise NotImplementedError

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        self.add_filters(parser)
        add_paging(parser, self.marker_help)
        return parser

    @api_errors
    def take_action(self, parsed_args):
        list_method, filters = self.query(
            self.app.client_manager.numa_policy, parsed_args)
        items = fetch(list_method, parsed_args, **filters)
        fields = self.long_fields if parsed_args.long else self.fields
        return (tuple(self.headers[f] for f in fields),
                rows(items, fields, self.formatters))


class ShowCommand(command.ShowOne):
    """One API item by its key.

    ``key`` and ``key_help`` name the argument, ``show_method`` the
    client's method, ``formatters`` the column types.
    """

    key = ''
    key_help = ''
    show_method = ''
    formatters = {}

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(self.key, metavar=f'<{self.key}>',
                            help=self.key_help)
        return parser

    @api_errors
    def take_action(self, parsed_args):
        client = self.app.client_manager.numa_policy
        item = getattr(client, self.show_method)(getattr(parsed_args,
                                                         self.key))
        return show(item, self.formatters)


def show(item, formatters=None):
    """``(fields, values)`` of a ShowOne, fields sorted by name."""
    fields = tuple(sorted(item))
    return fields, rows([item], fields, formatters)[0]


class ListColumn(columns.FormattableColumn):
    """A list: comma-separated for people, the list itself for -f json."""

    def human_readable(self):
        return ', '.join(str(v) for v in self._value)

    def machine_readable(self):
        return list(self._value)


class MemoryPerNodeColumn(columns.FormattableColumn):
    """``{"0": 512, "1": 256}`` as ``node 0: 512 MiB, node 1: 256 MiB``."""

    def human_readable(self):
        return ', '.join(f'node {node}: {mb} MiB' for node, mb in sorted(
            self._value.items(), key=lambda kv: int(kv[0])))

    def machine_readable(self):
        return dict(self._value)
