"""Hosts without a fresh report: which refusals are theirs, and the words."""

from tests import base as test_base

from nova_numa_policy.scheduling import assess
from nova_numa_policy.scheduling import scoring
from tests.unit.scheduler import reports
from tests.unit.scheduler import test_scoring as tables

NOW_SUMMARY = reports.make_summary()


def _assessor(specs, settings=tables.SETTINGS):
    return assess.Assessor(tables.request(specs), settings)


class WithoutReportTest(test_base.TestCase):

    def test_strict_counts_the_unheard_hosts_a_policy_filter_refuses(self):
        assessor = _assessor({'hw:numa_policy': 'interleave'})
        heard = assessor.compute(NOW_SUMMARY)
        assessments = [assessor.no_report, heard, assessor.no_report]
        for field in (assess.POLICY, assess.PASSED):
            self.assertEqual(
                2, assess.without_report(assessor, assessments, field))

    def test_the_load_filter_refuses_no_host_for_silence(self):
        assessor = _assessor({'hw:numa_policy': 'interleave'})
        self.assertEqual(0, assess.without_report(
            assessor, [assessor.no_report] * 3, assess.LOAD))

    def test_permissive_refuses_no_host_for_silence(self):
        assessor = _assessor({'hw:numa_policy': 'interleave'},
                             tables.PERMISSIVE)
        self.assertEqual(0, assess.without_report(
            assessor, [assessor.no_report] * 3, assess.POLICY))

    def test_an_equal_assessment_of_a_heard_host_is_not_silence(self):
        # Identity, not equality: a heard host may be answered alike.
        assessor = _assessor({'hw:numa_policy': 'interleave'})
        lookalike = assess.Assessment(*assessor.no_report)
        self.assertEqual(0, assess.without_report(
            assessor, [lookalike], assess.POLICY))


class WordsTest(test_base.TestCase):

    def test_the_keys_are_those_the_request_asks_a_report(self):
        request = tables.request({'hw:numa_policy': 'home',
                                  'hw:numa_nic_locality': 'required'})
        self.assertEqual(
            ['hw:numa_policy=home', 'hw:numa_nic_locality=required'],
            scoring.report_questions(request, True, True))
        self.assertEqual(['hw:numa_nic_locality=required'],
                         scoring.report_questions(request, False, True))

    def test_the_fault_names_cause_keys_and_mode_but_no_host_count(self):
        reason = scoring.no_report_refusal(
            ['hw:numa_policy=home', 'hw:numa_nic_locality=required'], 180)
        self.assertIn('No host has a NUMA report from its nova-numa-policy '
                      'agent in the last 180 s', reason)
        self.assertIn('hw:numa_policy=home with '
                      'hw:numa_nic_locality=required', reason)
        self.assertIn('no_report_mode = strict', reason)
        self.assertNotRegex(reason, r'\d+ (of|host)')
