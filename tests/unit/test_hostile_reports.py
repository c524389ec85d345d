"""Hostile reports against both consumers: nothing escapes, all agree.

Each example is one payload as the bus could carry it: a valid report,
one spoiled at a random place with a hostile value, or one signed with
the wrong secret. The same payload goes to the scheduler's report cache
and to the collector (on a real SQLite database). Neither may raise;
every refusal is counted under a reason; and the two accept exactly the
same payloads, so the scheduler never acts on a report the collector
would not keep, or the reverse.
"""

import collections
import copy
import datetime

import hypothesis
from hypothesis import strategies as st

from nova_numa_policy.collector import listener
from nova_numa_policy.objects import report as report_obj
from nova_numa_policy.objects import signing
from nova_numa_policy.objects import wire as report_wire
from placement_filters import cache as cache_mod
from tests import base as test_base
from tests import report_factory
from tests.unit.collector import base

NOW = report_factory.make_report().generated_at
MAX_BYTES = 256 * 1024
SECRET = 'shared-secret'
EXAMPLES = 2000

HOSTILE_VALUES = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-2 ** 80, max_value=2 ** 80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    # Digits of other scripts, which str.isdigit() admits.
    st.sampled_from(['\u00b2', '\u0660', '\u0661', '\u09e7', '\uff11',
                     '1\u0301', '0x1', ' 1', '-0']),
    # Times that parse, with odd or no zones, or at the calendar's ends.
    st.sampled_from(['2026-11-22T08:00:00+01:00:30',
                     '2026-11-22T08:00:00', '9999-12-31T23:59:59-01:00',
                     '0001-01-01T00:00:00+01:00',
                     '2026-11-22T08:00:00.123456+14:00',
                     '2027-01-01T00:00:00+00:00', 'yesterday']),
    st.lists(st.integers(min_value=-5, max_value=5000), max_size=6),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
)


def _places(value, path=()):
    """Every place in a primitive that can be replaced, as a key path."""
    places = [path] if path else []
    if isinstance(value, dict):
        for key, child in value.items():
            places += _places(child, path + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            places += _places(child, path + (index,))
    return places


def _replace(primitive, path, value):
    target = primitive
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


@st.composite
def payloads(draw):
    """(payload, description) of a report as the bus could carry it."""
    node_count = draw(st.integers(min_value=1, max_value=4))
    instances = [report_factory.make_instance(
        uuid=f'00000000-0000-4000-8000-{i:012d}',
        memory_mb_per_node={'0': 256}, vcpu_cpus=[0])
        for i in range(draw(st.integers(min_value=0, max_value=3)))]
    report = report_factory.make_report(
        node_count=node_count, instances=instances,
        seq=draw(st.integers(min_value=0, max_value=2 ** 63 - 1)),
        generated_at=NOW - datetime.timedelta(
            seconds=draw(st.integers(min_value=-120, max_value=3600))),
        nics=[])
    primitive = report_wire.dump_report(report)
    how = draw(st.sampled_from(['valid', 'spoiled', 'spoiled', 'spoiled',
                                'removed', 'wrong secret', 'unsigned']))
    if how in ('spoiled', 'removed'):
        path = draw(st.sampled_from(_places(primitive)))
        if how == 'removed' and isinstance(path[-1], str):
            parent = primitive
            for key in path[:-1]:
                parent = parent[key]
            del parent[path[-1]]
        else:
            _replace(primitive, path, draw(HOSTILE_VALUES))
        how = f'{how} at {path}'
    if how == 'unsigned':
        return primitive, how
    secret = 'stolen' if how == 'wrong secret' else SECRET
    try:
        return signing.sign(primitive, secret), how
    except ValueError:
        # NaN or infinity is no JSON: a signer cannot sign it, an attacker
        # can still send it unsigned.
        return primitive, f'{how}, unsignable'


class ConsumersAgreeTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.storage = self.useFixture(base.SqliteStorage()).storage
        self.collector = listener.CollectorEndpoint(
            self.storage, MAX_BYTES, db_retries=0, clock=lambda: NOW,
            sleep=lambda _: None, secrets=(SECRET,), max_skew=60)

    def cache(self):
        return cache_mod.ReportCache(
            max_hosts=10, max_report_bytes=MAX_BYTES, io_rate=1000.0,
            ttl=10 ** 9, clock=NOW.timestamp, secrets=(SECRET,),
            max_skew=60)

    @hypothesis.settings(max_examples=EXAMPLES, deadline=None,
                         derandomize=True, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(payloads())
    def test_nothing_escapes_and_both_consumers_agree(self, example):
        payload, how = example
        # A cache of its own per example: examples do not order each
        # other there; the collector keeps them all (history).
        cache = self.cache()
        before = collections.Counter(self.collector.counters)
        cached = cache.ingest(copy.deepcopy(payload))
        answer = self.collector.info({}, 'numa-policy-agent.x',
                                     report_obj.EVENT_TYPE,
                                     copy.deepcopy(payload), {})
        self.assertEqual(listener.HANDLED, answer, how)
        counted = self.collector.counters - before
        self.assertEqual(1, sum(counted.values()),
                         f'{how}: one count per message, got {counted}')
        self.assertEqual(0 if cached else 1, sum(cache.dropped.values()),
                         how)
        for dropped in (counted, cache.dropped):
            self.assertNotIn(report_wire.REFUSED_UNEXPECTED, dropped, how)
        kept = {'reports_stored', 'reports_duplicate'} & set(counted)
        # Agreement: kept by one exactly when kept by the other, and
        # refused for the same reason.
        self.assertEqual(cached, bool(kept), f'{how}: {counted}')
        if not cached:
            self.assertEqual(set(cache.dropped), set(counted), how)

    def test_the_valid_and_signed_report_is_accepted_by_both(self):
        payload = signing.sign(report_wire.dump_report(
            report_factory.make_report()), SECRET)
        self.assertTrue(self.cache().ingest(copy.deepcopy(payload)))
        self.collector.info({}, 'agent', report_obj.EVENT_TYPE, payload, {})
        self.assertEqual(1, self.collector.counters['reports_stored'])
