"""Request rates from bytes and packets, and rate windows: pure."""

from agent.sensors import guestio
from tests import base as test_base


def rate(previous, current):
    return guestio.request_rate(previous, current)


class TrafficTest(test_base.TestCase):

    def test_bytes_and_packets_are_both_directions_added(self):
        # virDomainInterfaceStats: rx bytes, rx packets, rx errs, rx drop,
        # tx bytes, tx packets, tx errs, tx drop.
        self.assertEqual((5000, 70),
                         guestio.traffic((3000, 30, 1, 2, 2000, 40, 3, 4)))

    def test_interfaces_add_up(self):
        self.assertEqual((7, 11), guestio.add([(3, 5), (4, 6)]))
        self.assertEqual((0, 0), guestio.add([]))


class RequestRateTest(test_base.TestCase):

    def test_small_requests_count_as_packets(self):
        # 300 packets of 100 bytes in 2 s: request/response traffic.
        self.assertEqual(150.0, rate((10.0, (0, 1000)),
                                     (12.0, (30000, 1300))))

    def test_bulk_segments_count_as_the_frames_they_carry(self):
        # 100 segments of 64 KiB in 2 s, as segmentation offload shows a
        # bulk transfer: 4369 full frames, not 100 requests.
        segments = 100 * 65536
        self.assertAlmostEqual(segments / guestio.FRAME_BYTES / 2,
                               rate((10.0, (0, 0)), (12.0, (segments, 100))))

    def test_no_previous_sample_has_no_rate_yet(self):
        self.assertEqual(0.0, rate(None, (12.0, (0, 1300))))

    def test_counters_that_went_down_mean_a_restart_not_a_negative_rate(self):
        self.assertEqual(0.0, rate((10.0, (500, 1300)), (12.0, (900, 5))))
        self.assertEqual(0.0, rate((10.0, (500, 1300)), (12.0, (5, 1400))))

    def test_a_clock_that_did_not_move_gives_no_rate(self):
        self.assertEqual(0.0, rate((10.0, (0, 1000)), (10.0, (0, 1300))))


def packet_rate(previous, current):
    return 0.0 if previous is None else \
        (current[1] - previous[1]) / (current[0] - previous[0])


class WindowedTest(test_base.TestCase):

    def test_the_first_sample_starts_the_window(self):
        self.assertEqual(((10.0, 1000), 0.0),
                         guestio.windowed(None, (10.0, 1000), packet_rate,
                                          1.0))

    def test_a_sample_past_the_window_measures_and_starts_the_next(self):
        window = ((10.0, 1000), 0.0)
        self.assertEqual(((15.0, 2000), 200.0),
                         guestio.windowed(window, (15.0, 2000), packet_rate,
                                          1.0))

    def test_a_sample_inside_the_window_keeps_baseline_and_rate(self):
        window = ((15.0, 2000), 200.0)
        self.assertIs(window,
                      guestio.windowed(window, (15.004, 2900), packet_rate,
                                       1.0))
