"""Packet rates and rate windows: pure."""

import testtools

from agent import guestio


def rate(previous, current):
    return guestio.packet_rate(previous, current)


class PacketRateTest(testtools.TestCase):

    def test_rate_is_the_packet_delta_over_the_elapsed_time(self):
        self.assertEqual(150.0, rate((10.0, 1000), (12.0, 1300)))

    def test_no_previous_sample_has_no_rate_yet(self):
        self.assertEqual(0.0, rate(None, (12.0, 1300)))

    def test_counters_that_went_down_mean_a_restart_not_a_negative_rate(self):
        self.assertEqual(0.0, rate((10.0, 1300), (12.0, 5)))

    def test_a_clock_that_did_not_move_gives_no_rate(self):
        self.assertEqual(0.0, rate((10.0, 1000), (10.0, 1300)))


class WindowedTest(testtools.TestCase):

    def test_the_first_sample_starts_the_window(self):
        self.assertEqual(((10.0, 1000), 0.0),
                         guestio.windowed(None, (10.0, 1000), rate, 1.0))

    def test_a_sample_past_the_window_measures_and_starts_the_next(self):
        window = ((10.0, 1000), 0.0)
        self.assertEqual(((15.0, 2000), 200.0),
                         guestio.windowed(window, (15.0, 2000), rate, 1.0))

    def test_a_sample_inside_the_window_keeps_baseline_and_rate(self):
        window = ((15.0, 2000), 200.0)
        self.assertIs(window,
                      guestio.windowed(window, (15.004, 2900), rate, 1.0))
