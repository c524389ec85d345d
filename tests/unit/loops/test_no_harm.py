"""DESIGN principle 5, per guest: no loop makes any guest > 2 % slower.

Table-driven over every scenario (but the 100-guest benchmark) and every
loop alone and all together, seed 0, 40 periods. KNOWN_GAPS are the cases
where the target is not met yet (doc/source/loops.rst, "Known gaps"):
they assert the floor reached today so a regression is still caught.
"""

import testtools

from nova_numa_policy.sim import experiment
from nova_numa_policy.sim import scenarios

TARGET = 0.98
ALL = ('carrefour', 'brm', 'vnuioa', 'auto')
KNOWN_GAPS = {
    ('io-mix', ('vnuioa',)): 0.92,
    ('io-mix', ALL): 0.92,
    ('io-mix-reboot', ('vnuioa',)): 0.92,
    ('io-mix-reboot', ALL): 0.92,
    # Seed 0 reaches 0.985; over seeds 0-4 the worst is 0.967.
    ('auto-mix', ('auto',)): 0.96,
    ('auto-mix', ALL): 0.96,
}


def _cases():
    for name in scenarios.SCENARIOS:
        if name == 'dense':
            continue
        for loops in experiment.LOOP_SETS:
            yield name, tuple(loops)


class NoHarmPerGuestTest(testtools.TestCase):

    def test_no_guest_loses_more_than_2_percent(self):
        for name, loops in _cases():
            row = experiment.compare(name, loops, periods=40, seeds=(0,))
            floor = KNOWN_GAPS.get((name, loops), TARGET)
            self.assertGreaterEqual(
                row.worst_guest, floor,
                f'{name} {"+".join(loops)}: {row.worst_name} at '
                f'{row.worst_guest:.3f}x')
