"""Reading a tempest run's subunit stream: a skip fails the run as a
failure does, and each is named with its reason."""

import io

import subunit

from tests import base as test_base
from tests.cloud import tempest_results as results

TOTALS = """\
{0} tempest.api.compute.servers.test_create_server.ServersTestJSON ... ok

======
Totals
======
Ran: 2 tests in 12.0000 sec.
 - Passed: 1
 - Skipped: 1
 - Failed: 0
Sum of execute time for each test: 3.1 sec.
"""


def stream(*tests):
    """A subunit v2 stream of ``(test_id, status, reason)`` tuples."""
    out = io.BytesIO()
    writer = subunit.StreamResultToBytes(out)
    writer.startTestRun()
    for test_id, status, reason in tests:
        writer.status(test_id=test_id, test_status='exists')
        writer.status(test_id=test_id, test_status='inprogress')
        if reason:
            name = 'reason' if status == 'skip' else 'traceback'
            writer.status(test_id=test_id, file_name=name,
                          file_bytes=reason.encode(),
                          mime_type='text/plain;charset=utf8', eof=True)
        writer.status(test_id=test_id, test_status=status)
    writer.stopTestRun()
    return out.getvalue()


class ParseTest(test_base.TestCase):

    def test_outcomes_and_reasons(self):
        parsed = results.parse(stream(
            ('t.ok', 'success', ''),
            ('t.skip', 'skip', 'SSH is not configured'),
            ('t.fail', 'fail', 'Traceback\nBuildErrorException: boom')))
        self.assertEqual(
            [results.Result('t.ok', 'success'),
             results.Result('t.skip', 'skip', 'SSH is not configured'),
             results.Result('t.fail', 'fail',
                            'Traceback\nBuildErrorException: boom')],
            parsed)

    def test_a_listed_test_that_never_ran_is_not_a_pass(self):
        out = io.BytesIO()
        writer = subunit.StreamResultToBytes(out)
        writer.status(test_id='t.listed', test_status='exists')
        parsed = results.parse(out.getvalue())
        self.assertEqual(['exists'], [r.status for r in parsed])
        ok, why = results.verdict(parsed, 0)
        self.assertFalse(ok)
        self.assertIn('1 other', why)

    def test_empty_stream(self):
        self.assertEqual([], results.parse(b''))


class VerdictTest(test_base.TestCase):

    def test_all_passed(self):
        self.assertEqual(
            (True, 'every test passed'),
            results.verdict([results.Result('a', 'success')], 0))

    def test_a_skip_fails_the_run(self):
        ok, why = results.verdict([results.Result('a', 'success'),
                                   results.Result('b', 'skip', 'why')], 0)
        self.assertFalse(ok)
        self.assertEqual('1 skipped', why)

    def test_nothing_ran(self):
        self.assertEqual((False, 'no test passed'), results.verdict([], 0))

    def test_tempest_exit_code_counts(self):
        ok, why = results.verdict([results.Result('a', 'success')], 1)
        self.assertFalse(ok)
        self.assertIn('exited 1', why)


class ReportTest(test_base.TestCase):

    def test_names_each_test_that_did_not_pass_with_its_reason(self):
        lines = results.report([
            results.Result('a', 'success'),
            results.Result('b', 'skip', 'no SSH'),
            results.Result('c', 'fail', '1\n2\n3\nNoValidHost: none')])
        self.assertEqual(['SKIPPED b (skip)', '    no SSH',
                          'FAILED c (fail)', '    2', '    3',
                          '    NoValidHost: none'], lines)

    def test_one_line_per_test(self):
        self.assertEqual(
            ['PASSED    a', 'SKIPPED   b', 'FAILED    c'],
            results.outcomes([results.Result('a', 'success'),
                              results.Result('b', 'skip', 'no SSH'),
                              results.Result('c', 'fail', 'boom')]))

    def test_closing_lines_from_the_last_totals(self):
        lines = results.closing_lines(TOTALS)
        self.assertEqual('Totals', lines[0])
        self.assertIn(' - Skipped: 1', lines)
        self.assertEqual([], results.closing_lines('no summary'))
