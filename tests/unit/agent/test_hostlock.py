"""One acting agent a host: the state directory's lock."""

import os

import fixtures

from agent.service import hostlock
from tests import base as test_base


class HostLockTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.state_dir = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'state')

    def test_the_first_holds_it_and_a_second_is_refused_naming_it(self):
        first = hostlock.acquire(self.state_dir)
        self.addCleanup(first.close)
        # flock(2) locks an open file: a second open of it conflicts,
        # in this process as in another.
        error = self.assertRaises(hostlock.HeldElsewhere, hostlock.acquire,
                                  self.state_dir)
        self.assertIn(f'(pid {os.getpid()})', str(error))
        self.assertIn(os.path.join(self.state_dir, 'agent.lock'), str(error))

    def test_it_is_free_again_once_its_holder_closed_it(self):
        hostlock.acquire(self.state_dir).close()
        again = hostlock.acquire(self.state_dir)
        self.addCleanup(again.close)
        with open(os.path.join(self.state_dir, 'agent.lock')) as f:
            self.assertEqual(str(os.getpid()), f.read())

    def test_a_state_directory_it_cannot_write_leaves_it_unguarded(self):
        blocked = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'a-file')
        with open(blocked, 'w'):
            pass
        # A directory under a file cannot be made: logged, not raised.
        logs = self.useFixture(fixtures.FakeLogger())
        self.assertIsNone(hostlock.acquire(os.path.join(blocked, 'state')))
        self.assertIn('nothing stops a second agent', logs.output)
