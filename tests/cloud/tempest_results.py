"""What a ``tempest run`` did, read from its subunit stream (pure).

The cloud tier asks more of a run than tempest's exit code does: a skip
is a failure too (a test of ours that skips proved nothing), and each
skip and failure is shown with its reason.
"""

import dataclasses
import io

import subunit
import testtools

PASSED = ('success', 'xfail')
FAILED = ('fail', 'uxsuccess')
SKIPPED = ('skip',)
# The exit code of a run stopped at its deadline (as coreutils'
# timeout(1) says it): its tests' outcomes are only in its output.
STOPPED = 124


@dataclasses.dataclass(frozen=True)
class Result:
    test_id: str
    status: str
    reason: str = ''


def _detail_text(details, *names):
    for name in names:
        content = details.get(name)
        if content is not None:
            return content.as_text().strip()
    return ''


def parse(stream_bytes):
    """The final outcome of every test in a subunit v2 stream.

    A test listed but never run (``exists``) or still ``inprogress`` at
    the end of the stream is kept under that status: it did not pass.
    """
    results = []

    def on_test(test):
        details = test['details']
        if test['status'] in SKIPPED:
            reason = _detail_text(details, 'reason')
        elif test['status'] in FAILED:
            reason = _detail_text(details, 'traceback', 'reason')
        else:
            reason = ''
        results.append(Result(test['id'], test['status'], reason))

    case = subunit.ByteStreamToStreamResult(
        io.BytesIO(stream_bytes), non_subunit_name='stdout')
    sink = testtools.StreamToDict(on_test)
    sink.startTestRun()
    try:
        case.run(sink)
    finally:
        sink.stopTestRun()
    final = {}
    for result in results:
        if result.status != 'exists' or result.test_id not in final:
            final[result.test_id] = result
    return list(final.values())


def by_status(results):
    """{'passed'|'failed'|'skipped'|'other': [Result]}."""
    groups = {'passed': [], 'failed': [], 'skipped': [], 'other': []}
    for result in results:
        if result.status in PASSED:
            groups['passed'].append(result)
        elif result.status in FAILED:
            groups['failed'].append(result)
        elif result.status in SKIPPED:
            groups['skipped'].append(result)
        else:
            groups['other'].append(result)
    return groups


def verdict(results, tempest_returncode):
    """``(ok, why)`` of a run.

    ok only if tempest passed, something ran, and nothing failed,
    skipped or was left unfinished.
    """
    if tempest_returncode == STOPPED:
        return False, ('stopped at its deadline; what each test did is in '
                       'the output above')
    groups = by_status(results)
    reasons = []
    if tempest_returncode:
        reasons.append(f'tempest run exited {tempest_returncode}')
    if not groups['passed']:
        reasons.append('no test passed')
    for key in ('failed', 'skipped', 'other'):
        if groups[key]:
            reasons.append(f'{len(groups[key])} {key}')
    return not reasons, '; '.join(reasons) or 'every test passed'


def outcomes(results):
    """One line per test: its outcome and its id, in the run's order."""
    labels = {'success': 'PASSED', 'xfail': 'PASSED (xfail)',
              'skip': 'SKIPPED', 'fail': 'FAILED',
              'uxsuccess': 'FAILED (unexpected success)'}
    return [f'{labels.get(r.status, r.status.upper()):9} {r.test_id}'
            for r in results]


def report(results, reason_lines=3):
    """Lines naming every test that did not pass, with its reason.

    A failure's reason is the end of its traceback (its last
    ``reason_lines`` lines), where the exception is.
    """
    groups = by_status(results)
    lines = []
    for key, label in (('skipped', 'SKIPPED'), ('failed', 'FAILED'),
                       ('other', 'NOT FINISHED')):
        for result in groups[key]:
            lines.append(f'{label} {result.test_id} ({result.status})')
            text = result.reason.splitlines()
            if key == 'failed':
                text = text[-reason_lines:]
            lines.extend(f'    {line}' for line in text)
    return lines


def closing_lines(output):
    """tempest's closing summary: from its last ``Totals`` heading on."""
    lines = output.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == 'Totals']
    if not starts:
        return []
    return lines[starts[-1]:]
