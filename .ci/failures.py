"""The failing tests of a tox run, each with the end of its traceback.

Reads the output of ``tox`` (standard input) and prints, for each test
that failed, its name and the last lines of its traceback: the check
that failed and the frames nearest it. CI keeps only the end of its log;
a name alone says that a test failed, not why, and a test that fails
once in many runs may not fail again for anyone to look.

Two runners print failures: stestr (``{0} name [...] ... FAILED``, then
``Captured traceback:``) and Django's (``FAIL: name (...)``, a rule,
then the traceback). Other captured details (logs) are left out.
"""

import re
import sys

STESTR_FAILED = re.compile(r'^\{\d+\} (\S+) .*\.\.\. FAILED$')
STESTR_NEXT_TEST = re.compile(r'^\{\d+\} ')
CAPTURED = re.compile(r'^Captured (.+):$')
UNITTEST_FAILED = re.compile(r'^(?:FAIL|ERROR): (.+)$')
RULE = re.compile(r'^(=|-|~){10,}$')

# What is printed of each traceback: its last lines, each cut to a width.
LINES_PER_FAILURE = 12
WIDTH = 400


def _stestr_traceback(lines, start):
    """The traceback captured after ``lines[start]``, a FAILED line."""
    in_traceback = False
    found = []
    for line in lines[start + 1:]:
        if STESTR_NEXT_TEST.match(line) or line.startswith('====='):
            break
        captured = CAPTURED.match(line)
        if captured:
            if in_traceback:
                break
            in_traceback = captured.group(1) == 'traceback'
            continue
        if in_traceback and not RULE.match(line):
            found.append(line)
    return found


def _unittest_traceback(lines, start):
    """The traceback after ``lines[start]``, a FAIL: or ERROR: line."""
    found = []
    rules = 0
    for line in lines[start + 1:]:
        if RULE.match(line):
            rules += 1
            if rules > 1:
                break
            continue
        found.append(line)
    return found


def failures(lines):
    """{test name: its traceback's lines}, in the order they failed."""
    lines = [line.rstrip('\n') for line in lines]
    found = {}
    for number, line in enumerate(lines):
        stestr = STESTR_FAILED.match(line)
        if stestr and stestr.group(1) not in found:
            found[stestr.group(1)] = _stestr_traceback(lines, number)
            continue
        # unittest's own: a rule of "=" above it (a log line saying
        # "ERROR: ..." has none).
        unittest = UNITTEST_FAILED.match(line)
        if (unittest and number and lines[number - 1].startswith('=====')
                and unittest.group(1) not in found):
            found[unittest.group(1)] = _unittest_traceback(lines, number)
    return found


def report(found, lines_per_failure=LINES_PER_FAILURE, width=WIDTH):
    """The text to print: each failure's name and its traceback's end."""
    out = []
    for name, traceback in found.items():
        shown = [line for line in traceback if line.strip()]
        out.append(f'FAILED {name}')
        if len(shown) > lines_per_failure:
            out.append(f'    ... ({len(shown) - lines_per_failure} lines '
                       f'of the traceback above)')
        for line in shown[-lines_per_failure:]:
            out.append(line if len(line) <= width
                       else line[:width] + f' ... ({len(line)} characters)')
    return '\n'.join(out)


if __name__ == '__main__':
    text = report(failures(sys.stdin))
    if text:
        print(text)
