"""The scheduler's memory of assessments: memo per report, priming.

Through the memos, an assessment is what the pure assessor computes; it
is computed once per host report and request shape, whichever plugin
asks first, and ahead of the request for the shapes in use.
"""

import dataclasses
from unittest import mock

import fixtures

from nova_numa_policy.scheduling import assess
from nova_numa_policy.scheduling import scoring
from placement_filters import assessors
from tests import base as test_base
from tests.unit.scheduler import test_scoring as tables

NOW = tables.NOW


def _assess(assessor, summary, now):
    [found] = assessors.assess_many(assessor, [summary], now)
    return found


class ThroughTheMemoTest(test_base.TestCase):

    def test_assess_many_is_assess_of_each(self):
        assessor = assess.Assessor(tables.request(tables.IO_HEAVY),
                                   tables.SETTINGS)
        hosts = [tables.host(), None, tables.host(age=181),
                 tables.host(nodes=(tables.BUSY, tables.BUSY))]
        self.assertEqual([assessor.assess(h, NOW) for h in hosts],
                         assessors.assess_many(assessor, hosts, NOW))


class MemoTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        # Spy on the real computation, to count it.
        self.compute = self.useFixture(fixtures.MockPatchObject(
            assess.Assessor, 'compute', autospec=True,
            side_effect=assess.Assessor.compute)).mock
        self.useFixture(fixtures.MockPatchObject(assessors, '_assessors', {}))

    def test_a_host_is_computed_once_per_request_shape(self):
        host = tables.host()
        first = assessors.assessor_for(tables.request(tables.IO_HEAVY),
                                       tables.SETTINGS)
        again = assessors.assessor_for(tables.request(tables.IO_HEAVY),
                                       tables.SETTINGS)
        self.assertIs(first, again)
        for assessor in (first, again, first):
            _assess(assessor, host, NOW)
        self.assertEqual(1, self.compute.call_count)

    def test_a_new_report_is_computed_afresh(self):
        host = tables.host()
        assessor = assess.Assessor(tables.request(), tables.SETTINGS)
        _assess(assessor, host, NOW)
        _assess(assessor, dataclasses.replace(host), NOW)
        self.assertEqual(2, self.compute.call_count)

    def test_shapes_and_settings_are_assessed_apart(self):
        host = tables.host()
        for request, settings in (
                (tables.request(), tables.SETTINGS),
                (tables.request(vcpus=4), tables.SETTINGS),
                (tables.request(), tables.PERMISSIVE)):
            _assess(assessors.assessor_for(request, settings), host, NOW)
        self.assertEqual(3, self.compute.call_count)

    def test_the_memo_of_a_host_is_bounded(self):
        host = tables.host()
        for vcpus in range(1, 2 * assessors.MAX_SHAPES_PER_HOST + 2):
            assessor = assess.Assessor(tables.request(vcpus=vcpus),
                                       tables.SETTINGS)
            _assess(assessor, host, NOW)
        self.assertLessEqual(len(host.memo), assessors.MAX_SHAPES_PER_HOST)
        self.assertGreater(len(host.memo), 0)

    def test_the_assessors_kept_are_bounded(self):
        self.useFixture(fixtures.MockPatchObject(assessors, 'MAX_ASSESSORS',
                                                 3))
        for vcpus in range(1, 8):
            assessors.assessor_for(tables.request(vcpus=vcpus),
                                   tables.SETTINGS)
        self.assertLessEqual(len(assessors._assessors), 3)

    def test_freshness_is_judged_at_every_lookup(self):
        # Memoised while fresh, the same summary still goes stale.
        host = tables.host(age=10)
        assessor = assess.Assessor(tables.request(tables.POLICY),
                                   tables.SETTINGS)
        self.assertTrue(_assess(assessor, host, NOW).policy)
        self.assertFalse(_assess(assessor, host, NOW + 171).policy)

    def test_the_instance_does_not_change_the_shape(self):
        one = scoring.make_request(tables.IO_HEAVY, 2, 2048,
                                   instance_uuid='a')
        other = scoring.make_request(tables.IO_HEAVY, 2, 2048,
                                     instance_uuid='b')
        self.assertIs(assessors.assessor_for(one, tables.SETTINGS),
                      assessors.assessor_for(other, tables.SETTINGS))

    def test_the_memo_is_not_part_of_the_summary_s_value(self):
        host = tables.host()
        copy = dataclasses.replace(host)
        _assess(assess.Assessor(tables.request(), tables.SETTINGS), host, NOW)
        self.assertEqual(host, copy)
        self.assertEqual({}, copy.memo)


class PrimingTest(test_base.TestCase):
    """Shapes requested recently are assessed when a report arrives."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatchObject(assessors, '_assessors',
                                                 {}))
        self.use_recent_shapes(assessors.PRIMED_SHAPES)
        self.useFixture(fixtures.MockPatchObject(assessors, '_last_used',
                                                 None))

    def use_recent_shapes(self, size):
        self.useFixture(fixtures.MockPatchObject(
            assessors, '_recent', assessors._recent_shapes(size)))

    def request_shapes(self, *vcpus):
        return [assessors.assessor_for(tables.request(vcpus=n),
                                       tables.SETTINGS)
                for n in vcpus]

    def test_recent_shapes_are_listed_oldest_first(self):
        one, two = self.request_shapes(1, 2)
        self.assertEqual((one, two), assessors.recent_assessors())
        self.request_shapes(1)
        self.assertEqual((two, one), assessors.recent_assessors())

    def test_only_the_most_recent_shapes_are_primed(self):
        self.use_recent_shapes(2)
        _, two, three = self.request_shapes(1, 2, 3)
        self.assertEqual((two, three), assessors.recent_assessors())

    def test_a_primed_summary_answers_from_its_memo(self):
        two, four = self.request_shapes(2, 4)
        host = tables.host()
        assessors.prime(host, assessors.recent_assessors())
        self.assertEqual({two: two.compute(host), four: four.compute(host)},
                         host.memo)
        with mock.patch.object(assess.Assessor, 'compute') as compute:
            self.assertEqual(host.memo[four], _assess(four, host, NOW))
        compute.assert_not_called()

    def test_a_refused_flavor_is_not_primed(self):
        refused = assessors.assessor_for(
            tables.request({'hw:numa_policy': 'bogus'}), tables.SETTINGS)
        host = tables.host()
        assessors.prime(host, [refused])
        self.assertEqual({}, host.memo)
