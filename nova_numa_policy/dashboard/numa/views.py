"""Index (hosts, instances, actions) and host detail with charts."""

from django.conf import settings
from django.urls import reverse_lazy
from django.utils.translation import gettext_lazy as _
from horizon import exceptions
from horizon import tables as horizon_tables

from nova_numa_policy.dashboard import api
from nova_numa_policy.dashboard.numa import bars
from nova_numa_policy.dashboard.numa import charts
from nova_numa_policy.dashboard.numa import tables

INDEX = reverse_lazy('horizon:admin:numa_policy:index')


def _page_size():
    return getattr(settings, 'API_RESULT_PAGE_SIZE', 20)


class IndexView(horizon_tables.MultiTableView):
    table_classes = (tables.HostsTable, tables.InstancesTable,
                     tables.ActionsTable)
    template_name = 'numa_policy/index.html'
    page_title = _('NUMA')

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._more = {}

    def has_more_data(self, table):
        return self._more.get(table.name, False)

    def _page(self, table_class, fetch):
        """One page of a table, from its marker in the query string."""
        meta = table_class._meta
        marker = self.request.GET.get(meta.pagination_param)
        try:
            page = fetch(limit=_page_size(), marker=marker)
        except Exception:
            exceptions.handle(self.request,
                              _('Unable to read %s from the NUMA policy '
                                'API.') % meta.verbose_name)
            return []
        self._more[meta.name] = page.next_marker is not None
        return page.items

    def get_hosts_data(self):
        return self._page(tables.HostsTable, lambda **page: (
            api.hosts_with_nodes(self.request, **page)))

    def get_instances_data(self):
        return self._page(tables.InstancesTable, lambda **page: (
            api.client(self.request).list_instances(**page)))

    def get_actions_data(self):
        return self._page(tables.ActionsTable, lambda **page: (
            api.client(self.request).list_actions(**page)))


class HostDetailView(horizon_tables.MultiTableView):
    table_classes = (tables.NodesTable, tables.HostInstancesTable,
                     tables.HostActionsTable)
    template_name = 'numa_policy/detail.html'
    page_title = _('NUMA host {{ host.host }}')

    def _history(self):
        if not hasattr(self, '_cached'):
            try:
                self._cached = api.host_history(self.request,
                                                self.kwargs['host'])
            except Exception:
                exceptions.handle(self.request,
                                  _('Unable to read host %s from the NUMA '
                                    'policy API.') % self.kwargs['host'],
                                  redirect=INDEX)
        return self._cached

    def get_nodes_data(self):
        return self._history()[0]['numa_nodes']

    def get_host_instances_data(self):
        return self._history()[0]['instances']

    def get_host_actions_data(self):
        return self._history()[2]

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        host, reports, actions = self._history()
        context['host'] = host
        if bars.tiered(host['numa_nodes']):
            context['demotion'] = bars.demotion_text(host)
        else:
            del context['nodes_table'].columns['tier']
        context['charts'] = charts.host_charts(reports, actions)
        return context
