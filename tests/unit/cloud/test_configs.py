"""The cloud's control-plane files: what the scheduler is told."""

from tests import base as test_base
from tests.cloud import configs
from tests.cloud import layout as lay
from tests.cloud import services


class SchedulerDefaultsTest(test_base.TestCase):

    def test_the_cloud_s_scheduler_runs_at_our_defaults(self):
        # The load threshold was once forced to 1.0 here; the cloud now
        # schedules as an operator's does after installing the plugin.
        sections = configs.nova(lay.Layout('/nonexistent'))
        self.assertNotIn('numa_policy_scheduler', sections)
        self.assertFalse(hasattr(configs, 'scheduler_overrides'))


class RpcTimeoutTest(test_base.TestCase):

    def test_nova_api_waits_on_the_compute_longer_than_novas_default(self):
        # An interface attach is nova-api's RPC call to the compute; the
        # gunicorn worker serving it must outlast the wait.
        default = configs.nova(lay.Layout('/nonexistent'))['DEFAULT']
        timeout = int(default['rpc_response_timeout'])
        self.assertGreater(timeout, 60)
        self.assertLess(timeout, services.WORKER_TIMEOUT)


class PlacementRetriesTest(test_base.TestCase):

    def test_every_novas_placement_client_retries_a_failed_connection(self):
        # The controller's services and each compute's nova-compute.
        sections = [configs.nova(lay.Layout('/nonexistent'))['placement'],
                    configs.compute()['placement']]
        for section in sections:
            self.assertGreater(int(section['connect_retries']), 0, section)
