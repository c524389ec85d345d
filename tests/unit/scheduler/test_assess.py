"""The shared assessment: the verdicts' answers, computed once per host.

Every case of the verdict and weight tables is replayed through an
:class:`~assess.Assessor`: its booleans and weights must be what the
verdict and weight functions say, which is what explain() shows.
"""

import dataclasses
from unittest import mock

import fixtures
import testtools

from nova_numa_policy.scheduling import assess
from nova_numa_policy.scheduling import scoring
from tests.unit.scheduler import test_scoring as tables

NOW = tables.NOW
CASES = tables.POLICY_CASES + tables.NIC_CASES + tables.LOAD_CASES


def _weight(fn, case_request, summary, settings):
    if not scoring.applies(fn, case_request, settings):
        return None
    fresh = scoring.fresh(summary, NOW, settings)
    return None if fresh is None else fn(case_request, fresh, settings)


def add_agreement_cases(cls):
    for case in CASES:
        def test(self, case=case):
            assessment = assess.Assessor(case.request, case.settings).assess(
                case.host, NOW)
            verdicts = [fn(case.request, case.host, case.settings, NOW)
                        for fn in (scoring.policy_verdict,
                                   scoring.nic_verdict, scoring.load_verdict)]
            self.assertEqual(
                [v.passed for v in verdicts],
                [assessment.policy, assessment.nic, assessment.load])
            self.assertEqual(all(v.passed for v in verdicts),
                             assessment.passed)
            self.assertEqual(
                _weight(scoring.nic_weight, case.request, case.host,
                        case.settings), assessment.nic_weight)
            self.assertEqual(
                _weight(scoring.load_weight, case.request, case.host,
                        case.settings), assessment.load_weight)
        setattr(cls, 'test_agrees_with_verdicts_' + case.name, test)
    return cls


@add_agreement_cases
class AgreementTest(testtools.TestCase):

    def test_weighing_plain_flavors_agrees_with_load_weight(self):
        settings = dataclasses.replace(tables.SETTINGS,
                                       weigh_plain_flavors=True)
        host = tables.host(nodes=(tables.BUSY, tables.IDLE))
        assessment = assess.Assessor(tables.request(), settings).assess(
            host, NOW)
        self.assertEqual(scoring.load_weight(tables.request(), host,
                                             settings),
                         assessment.load_weight)
        self.assertIsNotNone(assessment.load_weight)

    def test_io_neighbours_agree_with_nic_weight(self):
        host = tables.host(instances=[tables.reports.make_instance(
            '7b0c6bb4-9c58-4e0c-8f0a-3a1f6f8a8f01', {'0': 1024},
            io_rate=800.0)])
        request = tables.request(tables.IO_HEAVY)
        assessment = assess.Assessor(request, tables.SETTINGS).assess(
            host, NOW)
        self.assertEqual(scoring.nic_weight(request, host, tables.SETTINGS),
                         assessment.nic_weight)

    def test_assess_many_is_assess_of_each(self):
        assessor = assess.Assessor(tables.request(tables.IO_HEAVY),
                                   tables.SETTINGS)
        hosts = [tables.host(), None, tables.host(age=181),
                 tables.host(nodes=(tables.BUSY, tables.BUSY))]
        self.assertEqual([assessor.assess(h, NOW) for h in hosts],
                         assessor.assess_many(hosts, NOW))


class MemoTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # Spy on the real computation, to count it.
        self.compute = self.useFixture(fixtures.MockPatchObject(
            assess.Assessor, 'compute', autospec=True,
            side_effect=assess.Assessor.compute)).mock
        self.useFixture(fixtures.MockPatchObject(assess, '_assessors', {}))

    def test_a_host_is_computed_once_per_request_shape(self):
        host = tables.host()
        first = assess.assessor_for(tables.request(tables.IO_HEAVY),
                                    tables.SETTINGS)
        again = assess.assessor_for(tables.request(tables.IO_HEAVY),
                                    tables.SETTINGS)
        self.assertIs(first, again)
        for assessor in (first, again, first):
            assessor.assess(host, NOW)
        self.assertEqual(1, self.compute.call_count)

    def test_a_new_report_is_computed_afresh(self):
        host = tables.host()
        assessor = assess.Assessor(tables.request(), tables.SETTINGS)
        assessor.assess(host, NOW)
        assessor.assess(dataclasses.replace(host), NOW)
        self.assertEqual(2, self.compute.call_count)

    def test_shapes_and_settings_are_assessed_apart(self):
        host = tables.host()
        for request, settings in (
                (tables.request(), tables.SETTINGS),
                (tables.request(vcpus=4), tables.SETTINGS),
                (tables.request(), tables.PERMISSIVE)):
            assess.assessor_for(request, settings).assess(host, NOW)
        self.assertEqual(3, self.compute.call_count)

    def test_the_memo_of_a_host_is_bounded(self):
        host = tables.host()
        for vcpus in range(1, 2 * assess.MAX_SHAPES_PER_HOST + 2):
            assess.Assessor(tables.request(vcpus=vcpus),
                            tables.SETTINGS).assess(host, NOW)
        self.assertLessEqual(len(host.memo), assess.MAX_SHAPES_PER_HOST)
        self.assertGreater(len(host.memo), 0)

    def test_the_assessors_kept_are_bounded(self):
        self.useFixture(fixtures.MockPatchObject(assess, 'MAX_ASSESSORS', 3))
        for vcpus in range(1, 8):
            assess.assessor_for(tables.request(vcpus=vcpus),
                                tables.SETTINGS)
        self.assertLessEqual(len(assess._assessors), 3)

    def test_freshness_is_judged_at_every_lookup(self):
        # Memoised while fresh, the same summary still goes stale.
        host = tables.host(age=10)
        assessor = assess.Assessor(tables.request(tables.POLICY),
                                   tables.SETTINGS)
        self.assertTrue(assessor.assess(host, NOW).policy)
        self.assertFalse(assessor.assess(host, NOW + 171).policy)

    def test_the_instance_does_not_change_the_shape(self):
        one = scoring.make_request(tables.IO_HEAVY, 2, 2048,
                                   instance_uuid='a')
        other = scoring.make_request(tables.IO_HEAVY, 2, 2048,
                                     instance_uuid='b')
        self.assertIs(assess.assessor_for(one, tables.SETTINGS),
                      assess.assessor_for(other, tables.SETTINGS))

    def test_the_memo_is_not_part_of_the_summary_s_value(self):
        host = tables.host()
        copy = dataclasses.replace(host)
        assess.Assessor(tables.request(), tables.SETTINGS).assess(host, NOW)
        self.assertEqual(host, copy)
        self.assertEqual({}, copy.memo)


class PrimingTest(testtools.TestCase):
    """Shapes requested recently are assessed when a report arrives."""

    def setUp(self):
        super().setUp()
        for name in ('_assessors', '_recent'):
            self.useFixture(fixtures.MockPatchObject(assess, name, {}))
        self.useFixture(fixtures.MockPatchObject(assess, '_last_used',
                                                 None))

    def request_shapes(self, *vcpus):
        return [assess.assessor_for(tables.request(vcpus=n), tables.SETTINGS)
                for n in vcpus]

    def test_recent_shapes_are_listed_oldest_first(self):
        one, two = self.request_shapes(1, 2)
        self.assertEqual((one, two), assess.recent_assessors())
        self.request_shapes(1)
        self.assertEqual((two, one), assess.recent_assessors())

    def test_only_the_most_recent_shapes_are_primed(self):
        self.useFixture(fixtures.MockPatchObject(assess, 'PRIMED_SHAPES', 2))
        _, two, three = self.request_shapes(1, 2, 3)
        self.assertEqual((two, three), assess.recent_assessors())

    def test_a_primed_summary_answers_from_its_memo(self):
        two, four = self.request_shapes(2, 4)
        host = tables.host()
        assess.prime(host, assess.recent_assessors())
        self.assertEqual({two: two.compute(host), four: four.compute(host)},
                         host.memo)
        with mock.patch.object(assess.Assessor, 'compute') as compute:
            self.assertEqual(host.memo[four], four.assess(host, NOW))
        compute.assert_not_called()

    def test_a_refused_flavor_is_not_primed(self):
        refused = assess.assessor_for(
            tables.request({'hw:numa_policy': 'bogus'}), tables.SETTINGS)
        host = tables.host()
        assess.prime(host, [refused])
        self.assertEqual({}, host.memo)


class NoReportTest(testtools.TestCase):
    """What a missing report gets, per mode, without computing anything."""

    @mock.patch.object(assess.Assessor, 'compute')
    def test_strict_fails_only_what_needs_proof(self, compute):
        assessment = assess.Assessor(tables.request(tables.IO_HEAVY),
                                     tables.SETTINGS).assess(None, NOW)
        self.assertEqual((False, False, False, True, None, None),
                         tuple(assessment))
        compute.assert_not_called()

    def test_permissive_passes(self):
        assessment = assess.Assessor(tables.request(tables.IO_HEAVY),
                                     tables.PERMISSIVE).assess(None, NOW)
        self.assertTrue(assessment.passed)

    def test_a_refused_flavor_fails_every_host_whatever_the_mode(self):
        refused = tables.request({'hw:numa_policy': 'bogus'})
        for settings in (tables.SETTINGS, tables.PERMISSIVE):
            assessor = assess.Assessor(refused, settings)
            self.assertFalse(assessor.assess(tables.host(), NOW).passed)
            self.assertFalse(assessor.assess(None, NOW).passed)
