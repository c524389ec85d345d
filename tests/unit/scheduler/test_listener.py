"""The scheduler's report endpoint: which notifications reach the cache."""

from nova_numa_policy.objects import report as report_mod
from placement_filters import cache as cache_mod
from placement_filters import listener
from tests import base as test_base
from tests.unit.scheduler import reports


def _matches(event_type):
    rule = listener.ReportEndpoint.filter_rule
    return rule.match({}, 'numa-policy-agent.compute1', event_type, {}, {})


class ReportEndpointTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.cache = cache_mod.ReportCache(
            max_hosts=10, max_report_bytes=1 << 20, io_rate=500, ttl=3600)
        self.endpoint = listener.ReportEndpoint(self.cache)

    def test_only_host_reports_pass_the_filter(self):
        self.assertTrue(_matches(report_mod.EVENT_TYPE))
        self.assertFalse(_matches('numa_policy.action'))
        self.assertFalse(_matches(report_mod.EVENT_TYPE + '.extra'))

    def test_a_report_reaches_the_cache(self):
        self.endpoint.info({}, 'agent', report_mod.EVENT_TYPE,
                           reports.make_payload(), {})
        self.assertEqual(1, self.cache.accepted)

    def test_a_bad_report_is_counted_not_raised(self):
        self.endpoint.info({}, 'agent', report_mod.EVENT_TYPE,
                           {'not': 'a report'}, {})
        self.assertEqual(0, self.cache.accepted)
        self.assertEqual(1, sum(self.cache.dropped.values()))
