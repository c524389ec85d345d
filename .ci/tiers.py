"""Where a tox run's time went: a table of tier, tests and seconds.

Reads the output of ``tox`` (standard input): each tier's test counts
from its runner's closing lines (stestr's "- Passed: N", Django's "Ran N
tests"), attributed to the tier whose commands printed them, and each
tier's seconds from tox's own closing summary. Used by .ci/run, so every
CI log shows where the time went.
"""

import re
import sys

# "unit: commands[0]> stestr ..." starts a tier's output.
TIER_STEP = re.compile(r'^([\w.-]+): (?:commands|commands_pre|install_deps'
                       r'|install_package|install_package_deps)[\[>]')
# "  unit: OK (123.45=setup[6.7]+cmd[116.7] seconds)" closes it.
TIER_DONE = re.compile(r'^  ([\w.-]+): (OK|FAIL|SKIP)[^(]*\(([\d.]+)')
STESTR = re.compile(r'^ - (Passed|Failed|Skipped): (\d+)')
DJANGO_RAN = re.compile(r'^Ran (\d+) tests? in')


def tally(lines):
    """{tier: {'tests': n or None, 'seconds': s, 'status': text}}."""
    tiers = {}
    current = None
    for line in lines:
        line = line.rstrip('\n')
        step = TIER_STEP.match(line)
        if step:
            current = tiers.setdefault(step.group(1), {'tests': None})
            continue
        done = TIER_DONE.match(line)
        if done:
            entry = tiers.setdefault(done.group(1), {'tests': None})
            entry['status'] = done.group(2)
            entry['seconds'] = float(done.group(3))
            continue
        count = STESTR.match(line) or DJANGO_RAN.match(line)
        if count and current is not None:
            current['tests'] = ((current['tests'] or 0)
                                + int(count.groups()[-1]))
    return tiers


def table(tiers, whole_seconds=None):
    rows = [f'{"tier":<12} {"status":<6} {"tests":>6} {"seconds":>8}']
    for name, entry in tiers.items():
        if 'seconds' not in entry:
            continue
        tests = '-' if entry['tests'] is None else str(entry['tests'])
        rows.append(f'{name:<12} {entry["status"]:<6} {tests:>6} '
                    f'{entry["seconds"]:>8.0f}')
    if whole_seconds is not None:
        rows.append(f'{"whole run":<12} {"":<6} {"":>6} '
                    f'{float(whole_seconds):>8.0f}')
    return '\n'.join(rows)


if __name__ == '__main__':
    print(table(tally(sys.stdin), *sys.argv[1:2]))
