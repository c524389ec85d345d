"""The history series, pure: API dicts in, chart dicts out."""

import unittest

from nova_numa_policy.dashboard.numa import charts


def _report(minute, delay):
    return {'seq': minute, 'generated_at': f'2025-01-31T12:{minute:02d}:00'
            '+00:00', 'received_at': f'2025-01-31T12:{minute:02d}:'
            f'{delay:02d}+00:00'}


class ChartsTest(unittest.TestCase):

    def test_delay_points_are_oldest_first(self):
        # The API lists reports newest first.
        chart = charts.report_delay([_report(10, 3), _report(5, 1)])
        self.assertEqual([1.0, 3.0], [v for _t, v in chart['points']])
        self.assertLess(chart['points'][0][0], chart['points'][1][0])

    def test_interval_shows_a_gap(self):
        chart = charts.report_interval(
            [_report(m, 0) for m in (0, 5, 10, 30)])
        self.assertEqual([300.0, 300.0, 1200.0],
                         [v for _t, v in chart['points']])

    def test_actions_are_counted_by_outcome_in_their_bucket(self):
        actions = [{'generated_at': '2025-01-31T12:00:00+00:00',
                    'outcome': 'failed'},
                   {'generated_at': '2025-01-31T12:59:00+00:00',
                    'outcome': 'applied'},
                   {'generated_at': '2025-01-31T12:58:00+00:00',
                    'outcome': 'applied'}]
        chart = charts.action_counts(actions, count=4)
        counts = [b['counts'] for b in chart['buckets']]
        self.assertEqual(1, counts[0]['failed'])
        self.assertEqual(2, counts[-1]['applied'])
        self.assertEqual(3, sum(sum(c.values()) for c in counts))

    def test_no_action_gives_no_bucket(self):
        self.assertEqual([], charts.action_counts([])['buckets'])
