"""The report listener stops and restarts with nova's scheduler service."""

import fixtures

from placement_filters import lifecycle
from placement_filters import listener
from tests import base as test_base


class _Listener:
    """Stands in for the oslo.messaging listener; records its life."""

    def __init__(self, made, fail_stop=False):
        self.running = False
        self.fail_stop = fail_stop
        made.append(self)

    def start(self):
        self.running = True

    def stop(self):
        if self.fail_stop:
            raise RuntimeError('broker gone')
        self.running = False


class LifecycleTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.made = []
        self.fail_stop = False
        self.runtime = listener.Runtime()
        self.useFixture(fixtures.MockPatchObject(listener, 'RUNTIME',
                                                 self.runtime))
        self.useFixture(fixtures.MockPatchObject(
            listener.ReportListener, 'from_conf',
            lambda conf, cache: _Listener(self.made, self.fail_stop)))

        class SchedulerManager:
            """nova's hooks, as the service calls them."""

            def __init__(self):
                self.calls = []

            def set_shutdown_in_progress(self):
                self.calls.append('set_shutdown_in_progress')

            def reset(self):
                self.calls.append('reset')

        self.manager_class = SchedulerManager
        lifecycle.install(SchedulerManager)
        self.addCleanup(self.runtime.stop)

    def listening(self):
        cache = self.runtime.get_cache()
        self.runtime.listener.start()  # the thread's job, done here
        return cache

    def test_the_service_stop_stops_the_listener(self):
        self.listening()
        manager = self.manager_class()
        manager.set_shutdown_in_progress()
        self.assertEqual([False], [each.running for each in self.made])
        self.assertIsNone(self.runtime.listener)
        self.assertEqual(['set_shutdown_in_progress'], manager.calls)

    def test_sighup_listens_anew_on_the_same_cache(self):
        cache = self.listening()
        manager = self.manager_class()
        manager.reset()
        self.assertEqual(2, len(self.made))
        self.assertFalse(self.made[0].running)
        self.assertIs(self.made[1], self.runtime.listener)
        self.assertIs(cache, self.runtime.get_cache())
        self.assertEqual(['reset'], manager.calls)

    def test_sighup_before_any_request_starts_nothing(self):
        self.manager_class().reset()
        self.assertEqual([], self.made)

    def test_installing_twice_wraps_once(self):
        lifecycle.install(self.manager_class)
        for name in ('set_shutdown_in_progress', 'reset'):
            wrapped = getattr(self.manager_class, name)
            self.assertTrue(wrapped.numa_policy_wrapped)
            self.assertFalse(hasattr(wrapped.__wrapped__,
                                     'numa_policy_wrapped'), name)

    def test_a_failing_stop_does_not_stop_novas_shutdown(self):
        self.fail_stop = True
        self.listening()
        manager = self.manager_class()
        manager.set_shutdown_in_progress()
        self.assertEqual(['set_shutdown_in_progress'], manager.calls)
        self.made[0].fail_stop = False  # let the test's cleanup stop it
