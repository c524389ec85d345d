"""The cloud's control-plane files: what the scheduler is told."""

from tests import base as test_base
from tests.cloud import configs
from tests.cloud import layout as lay


class SchedulerDefaultsTest(test_base.TestCase):

    def test_the_cloud_s_scheduler_runs_at_our_defaults(self):
        # The load threshold was once forced to 1.0 here; the cloud now
        # schedules as an operator's does after installing the plugin.
        sections = configs.nova(lay.Layout('/nonexistent'))
        self.assertNotIn('numa_policy_scheduler', sections)
        self.assertFalse(hasattr(configs, 'scheduler_overrides'))
