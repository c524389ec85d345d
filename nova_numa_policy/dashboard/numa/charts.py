"""Time series of a host's history, as JSON-ready dicts for numa.js.

Pure: API dicts in, ``{'title', 'kind', 'unit', 'points'|'buckets'}``
out, so the series are tested without a browser and the script only
draws. Times are epoch seconds (UTC) in the output.
"""

import datetime

OUTCOMES = ('applied', 'dry_run', 'failed')
BUCKETS = 24


def _epoch(text):
    return datetime.datetime.fromisoformat(text).timestamp()


def report_delay(reports):
    """Seconds from a report's generation to its arrival, oldest first."""
    points = sorted((_epoch(r['generated_at']),
                     _epoch(r['received_at']) - _epoch(r['generated_at']))
                    for r in reports)
    return {'title': 'Report delivery delay', 'kind': 'line', 'unit': 's',
            'points': [[t, round(v, 3)] for t, v in points]}


def report_interval(reports):
    """Seconds between consecutive reports: gaps show a silent agent."""
    times = sorted(_epoch(r['generated_at']) for r in reports)
    return {'title': 'Interval between reports', 'kind': 'line', 'unit': 's',
            'points': [[later, round(later - earlier, 3)]
                       for earlier, later in zip(times, times[1:])]}


def _bucket_edges(times, count):
    start, end = min(times), max(times)
    width = max((end - start) / count, 1.0)
    return start, width


def action_counts(actions, count=BUCKETS):
    """Actions per time bucket, split by outcome, oldest bucket first."""
    times = [_epoch(a['generated_at']) for a in actions]
    if not times:
        return {'title': 'Agent actions', 'kind': 'bars', 'unit': '',
                'outcomes': list(OUTCOMES), 'buckets': []}
    start, width = _bucket_edges(times, count)
    buckets = [{'t': start + i * width, 'counts': dict.fromkeys(OUTCOMES, 0)}
               for i in range(count)]
    for moment, action in zip(times, actions):
        index = min(int((moment - start) / width), count - 1)
        counts = buckets[index]['counts']
        counts[action['outcome']] = counts.get(action['outcome'], 0) + 1
    return {'title': 'Agent actions', 'kind': 'bars', 'unit': '',
            'outcomes': list(OUTCOMES), 'buckets': buckets}


def host_charts(reports, actions):
    return [report_delay(reports), report_interval(reports),
            action_counts(actions)]
