"""The assessment: a host's booleans and weights, read off the checks.

Every case of the verdict and weight tables is replayed through an
:class:`~assess.Assessor`: its booleans and weights must be what the
verdict and weight functions say, which is what explain() shows.
"""

import dataclasses
from unittest import mock

from nova_numa_policy.scheduling import assess
from nova_numa_policy.scheduling import scoring
from tests import base as test_base
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
class AgreementTest(test_base.TestCase):

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


class NoReportTest(test_base.TestCase):
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
