"""The agent's wait for libvirtd at start, through tenacity."""

import threading
from unittest import mock

import fixtures

from agent.service import cmd
from nova_numa_policy.contracts import errors
from tests import base as test_base


class StopWhileWaitingTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger())
        self.conf = mock.Mock()
        self.conf.numa_policy_agent.libvirt_uri = 'qemu:///system'
        self.stopped = threading.Event()
        self.attempts = 0
        self.waits = []

    def build(self, conf, sender=None):
        self.attempts += 1
        raise errors.ConnectionLost('lost', reason='no socket',
                                    retry_in=7.5)

    def wait(self, seconds):
        # SIGTERM arrives during the first wait.
        self.waits.append(seconds)
        self.stopped.set()
        return True

    def test_a_stop_during_the_wait_ends_it_without_another_attempt(self):
        with mock.patch.object(cmd, 'build_agent', self.build), \
                mock.patch.object(self.stopped, 'wait', self.wait):
            self.assertIsNone(cmd.build_when_connected(
                self.conf, None, False, self.stopped))
        self.assertEqual((1, [7.5]), (self.attempts, self.waits))
        self.assertEqual(1, self.log.output.count('Waiting for it.'))

    def test_the_wait_is_at_least_a_second(self):
        def build(conf, sender=None):
            raise errors.ConnectionLost('lost', reason='x', retry_in=0.0)

        with mock.patch.object(cmd, 'build_agent', build), \
                mock.patch.object(self.stopped, 'wait', self.wait):
            cmd.build_when_connected(self.conf, None, False, self.stopped)
        self.assertEqual([1.0], self.waits)

    def test_an_unforeseen_error_is_not_retried(self):
        with mock.patch.object(cmd, 'build_agent',
                               side_effect=ValueError('bad')) as build:
            self.assertRaises(ValueError, cmd.build_when_connected,
                              self.conf, None, False, self.stopped)
        self.assertEqual(1, build.call_count)
