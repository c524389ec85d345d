"""What the scheduler tests share: our plugins on, agents' reports in.

Each test case runs nova's own in-process scheduler with our filters and
weighers enabled and sends agent reports through a real oslo.messaging
notifier to the scheduler's own report listener.
"""

from oslo_config import cfg
import oslo_messaging as messaging

from placement_filters import listener

CONF = cfg.CONF

OUR_FILTERS = ['NumaPolicyFilter', 'NumaNicLocalityFilter',
               'NumaNodeLoadFilter']


class ReportsToTheScheduler:
    """A nova functional test case mixin: a notifier agents report with.

    The listener of an earlier test is stopped first; this test's is
    stopped before nova's own check for leaked pollers, which runs later.
    """

    def setUp(self):
        listener.RUNTIME.stop()
        super().setUp()
        self.addCleanup(listener.RUNTIME.stop)
        self.notifier = messaging.Notifier(
            messaging.get_notification_transport(CONF),
            publisher_id='numa-policy-agent', driver='messagingv2',
            topics=[CONF.numa_policy_reports.topic])


def enable_our_plugins(test, enabled_filters,
                       weighers='placement_filters.all_weighers'):
    """``test``'s scheduler: ``enabled_filters``, nova's weighers and ours.

    ``weighers`` is the loader of ours (all_weighers, combined_weighers).
    """
    test.flags(available_filters=['nova.scheduler.filters.all_filters',
                                  'placement_filters.all_filters'],
               enabled_filters=enabled_filters,
               weight_classes=['nova.scheduler.weights.all_weighers',
                               weighers],
               group='filter_scheduler')
