"""nova's longer functional modules, as shipped, with our plugins enabled.

They run in ``tox -e nova-suites``, which sets ``NUMA_POLICY_NOVA_SUITES``;
without it this package holds no test, so the functional tier, which
discovers every package under tests/functional, neither imports nor runs
them (nova's NUMA and PCI modules run there: ``tests/functional/nova``).

Each module here is one our filters and weighers take part in when
enabled the way an operator does (:mod:`tests.functional.nova.shipped`):
nova's move operations, rebuilds and reschedules, ports with resource
requests, aggregates, NUMA live migration, evacuation and PCI devices in
placement. Not here: modules that replace the whole filter and weigher
lists, where our plugins never run (``test_server_group`` reads nova's
filters when it is imported and sets no weigher; ``test_scheduler``
names its one filter).
"""

import os

from tests.functional.nova import shipped

SUITES_SWITCH = 'NUMA_POLICY_NOVA_SUITES'

NOVA_SUITES = (
    # Cold and live migration, resize, evacuation, shelve, rebuild and
    # reschedule of plain guests; traits in placement.
    'nova.tests.functional.test_servers',
    # Ports with QoS resource requests and SR-IOV ports across every move.
    'nova.tests.functional.test_servers_resource_request',
    # Aggregate-scoped filters and weight multipliers, which our weighers
    # read from aggregate metadata too.
    'nova.tests.functional.test_aggregates',
    'nova.tests.functional.test_cold_migrate',
    'nova.tests.functional.libvirt.test_evacuate',
    'nova.tests.functional.libvirt.test_live_migration',
    'nova.tests.functional.libvirt.test_numa_live_migration',
    'nova.tests.functional.libvirt.test_pci_in_placement',
)


def requested():
    return bool(os.environ.get(SUITES_SWITCH))


def load_tests(loader, standard_tests, pattern):
    if requested():
        standard_tests.addTests(
            shipped.load_nova_modules(loader, NOVA_SUITES, pattern))
    return standard_tests
