"""What the scheduler tests share: our plugins on, agents' reports in.

Each test case runs nova's own in-process scheduler with our filters and
weighers enabled and sends agent reports through a real oslo.messaging
notifier to the scheduler's own report listener.
"""

import time

from oslo_config import cfg
import oslo_messaging as messaging

from nova_numa_policy.objects import report as report_obj
from nova_numa_policy.objects import wire as report_wire
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
        self._report_seq = 0

    def send_reports(self, reports, target_version=None):
        """Send agents' reports; return once the scheduler holds each.

        Each report goes out with a sequence number higher than any this
        test sent before, and the wait is for that number in the
        scheduler's cache: a host's earlier report, already there, is
        not the one just sent (a test that reported twice once booted
        on the first).
        """
        sent = {}
        for report in reports:
            self._report_seq += 1
            report.seq = self._report_seq
            sent[(report.host, report.hypervisor_hostname)] = report.seq
            self.notifier.info({}, report_obj.EVENT_TYPE,
                               report_wire.dump_report(
                                   report, target_version=target_version))
        cache = listener.RUNTIME.get_cache()
        deadline = time.monotonic() + 10
        while not all(getattr(cache.get(key), 'seq', None) == seq
                      for key, seq in sent.items()):
            self.assertLess(time.monotonic(), deadline,
                            'reports did not reach the scheduler cache')
            time.sleep(0.05)


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
