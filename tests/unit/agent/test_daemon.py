"""The agent as oslo.service runs it: started, stopped in order."""

import threading
from unittest import mock

from agent.service import daemon
from tests import base as test_base


class FakeAgent:
    """Runs periods until stopped, as manager.Agent.daemon_loop does."""

    def __init__(self):
        self.stopped = threading.Event()
        self.looping = threading.Event()
        self.closed = False

    def stop(self, *_args):
        self.stopped.set()

    def close(self):
        self.closed = self.stopped.is_set()

    def daemon_loop(self):
        self.looping.set()
        self.stopped.wait()


class AgentServiceTest(test_base.TestCase):

    def service(self, build):
        self.sender, self.lock = mock.Mock(), mock.Mock()
        self.starting = mock.Mock()
        return daemon.AgentService(build=build, starting=self.starting,
                                   sender=self.sender, lock=self.lock)

    def assert_ended_in_order(self):
        self.sender.stop.assert_called_once_with()
        self.lock.close.assert_called_once_with()

    def test_stop_ends_the_periods_then_the_sender_then_the_lock(self):
        agent = FakeAgent()
        service = self.service(lambda stopped: agent)
        service.start()
        self.assertTrue(agent.looping.wait(10))
        self.starting.assert_called_once_with(agent)
        service.stop()
        self.assertTrue(agent.stopped.is_set())
        service.wait()  # returns: the periods' thread has ended
        self.assert_ended_in_order()
        # What the backend started for it (DAMON's kdamonds) went, after
        # the last period.
        self.assertTrue(agent.closed)

    def test_a_stop_while_waiting_for_libvirt_ends_the_wait(self):
        waiting = threading.Event()

        def build(stopped):
            waiting.set()
            stopped.wait()  # what the connection's backoff waits on
            return None

        service = self.service(build)
        service.start()
        self.assertTrue(waiting.wait(10))
        service.stop()
        service.wait()
        self.starting.assert_not_called()
        self.assert_ended_in_order()

    def test_a_stop_while_the_agent_is_built_stops_it_at_once(self):
        agent = FakeAgent()
        release = threading.Event()

        def build(stopped):
            release.wait(10)  # the stop comes while libvirt answers
            return agent

        service = self.service(build)
        service.start()
        stopper = threading.Thread(target=service.stop)
        stopper.start()
        release.set()
        stopper.join(10)
        self.assertFalse(stopper.is_alive())
        self.assertTrue(agent.stopped.is_set())
        self.assert_ended_in_order()

    def test_a_dry_run_holds_no_lock(self):
        agent = FakeAgent()
        service = daemon.AgentService(build=lambda stopped: agent,
                                      starting=mock.Mock(),
                                      sender=mock.Mock(), lock=None)
        service.start()
        self.assertTrue(agent.looping.wait(10))
        service.stop()
        self.assertTrue(agent.stopped.is_set())
