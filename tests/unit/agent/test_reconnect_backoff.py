"""The libvirt reconnect backoff: 1 s, doubling, capped; never blocking."""

import libvirt

from agent.backend import connection
from nova_numa_policy.contracts import errors
from tests import base as test_base
from tests.unit.agent import base


def never_opens(uri):
    raise libvirt.libvirtError('libvirtd is down')


class ReconnectBackoffTest(test_base.TestCase):

    def waits(self, conn, clock, attempts):
        """The wait each failed attempt announces, trying when due."""
        found = []
        for _ in range(attempts):
            exc = self.assertRaises(errors.ConnectionLost, conn.get)
            found.append(exc.retry_in)
            clock.now += exc.retry_in
        return found

    def test_the_wait_doubles_from_one_second_up_to_the_cap(self):
        clock = base.FakeClock()
        conn = connection.Connection('test:///default', clock=clock,
                                     opener=never_opens, max_delay=30)
        self.assertEqual([1, 2, 4, 8, 16, 30, 30, 30],
                         self.waits(conn, clock, 8))

    def test_a_connection_made_starts_the_next_outage_at_one_second(self):
        clock = base.FakeClock()
        down = [True]

        def opener(uri):
            if down[0]:
                never_opens(uri)
            return libvirt.open(uri)

        conn = connection.Connection('test:///default', clock=clock,
                                     opener=opener, max_delay=60)
        self.addCleanup(conn.close)
        self.assertEqual([1, 2, 4], self.waits(conn, clock, 3))
        down[0] = False
        conn.get().close()
        down[0] = True
        self.assertEqual([1, 2], self.waits(conn, clock, 2))

    def test_an_attempt_before_the_wait_is_over_does_not_count(self):
        clock = base.FakeClock()
        conn = connection.Connection('test:///default', clock=clock,
                                     opener=never_opens, max_delay=60)
        self.assertEqual([1, 2], self.waits(conn, clock, 2))
        exc = self.assertRaises(errors.ConnectionLost, conn.get)
        self.assertEqual(4, exc.retry_in)
        clock.now += 1
        self.assertRaises(errors.ConnectionLost, conn.get)  # waiting
        self.assertEqual(3.0, conn.retry_in)
