"""DESIGN principle 5, per guest: no loop makes any guest > 2 % slower.

Table-driven over every scenario (but the 100-guest benchmark) and every
loop alone and all together, seeds 0-4, 40 periods (a scenario with a
reboot runs until its measured half follows the reboot). KNOWN_GAPS are
the cases where the target is not met yet, each with its reason in
doc/source/loops.rst, "Known gaps": they assert the floor reached today,
a little below it, so a regression is still caught.
"""

import testtools

from nova_numa_policy.lab.sim import experiment
from nova_numa_policy.lab.sim import scenarios

TARGET = 0.98
SEEDS = range(5)
ALL = ('carrefour', 'brm', 'vnuioa', 'auto')
KNOWN_GAPS = {
    # After a reboot the host scatters the guest over the CPUs idle then,
    # which the loops changed: measured against a different placement.
    ('io-mix-reboot', ('brm',)): 0.82,
    ('io-mix-reboot', ('vnuioa',)): 0.78,
    ('io-mix-reboot', ALL): 0.78,
    # Interleaving the master-slave guest loads the low guest's nodes.
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
            row = experiment.compare(name, loops, periods=40, seeds=SEEDS)
            floor = KNOWN_GAPS.get((name, loops), TARGET)
            what = (f'{name} {"+".join(loops)}: {row.worst_name} at '
                    f'{row.worst_guest:.3f}x')
            self.assertGreaterEqual(row.worst_guest, floor, what)
            if floor < TARGET:
                # A gap that closed must leave KNOWN_GAPS and loops.rst.
                self.assertLess(row.worst_guest, TARGET, what)
