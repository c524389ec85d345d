"""DESIGN principle 5, per guest: no loop makes any guest > 2 % slower.

Table-driven over every scenario (but the 100-guest benchmark) and every
loop alone and all together, seeds 0-4, 40 periods (a scenario with a
reboot runs until its measured half follows the reboot), on perfect
counters, on the kernel's hinting faults, on memory bandwidth and on
hardware samples: one test per signal, scenario and loop set, so that
the test runner spreads them over its workers.
KNOWN_GAPS are the cases
where the target is not met yet, each with its reason in
doc/source/loops.rst, "Known gaps": they assert the floor reached today,
a little below it, so a regression is still caught.
"""

from nova_numa_policy.contracts import locality
from numa_policy_lab.sim import experiment
from numa_policy_lab.sim import scenarios
from tests import base as test_base

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
# On hinting faults the guard has no progress for a memory-bound guest.
KNOWN_GAPS_SAMPLED = {
    # The network-bound guests vNUIOA brings to the NIC's node crowd the
    # one already there.
    ('io-mix', ('vnuioa',)): 0.95,
    ('io-mix', ALL): 0.95,
    ('io-mix-reboot', ('vnuioa',)): 0.78,
    ('io-mix-reboot', ALL): 0.78,
}

# On memory bandwidth: on more than two nodes where remote bytes went is
# inferred from where memory lies, which lags the hot pages Carrefour's
# interleave moves; and the reboot draw.
KNOWN_GAPS_BANDWIDTH = {
    ('io-mix-reboot', ('vnuioa',)): 0.76,
    ('io-mix-reboot', ALL): 0.76,
    ('auto-mix', ('auto',)): 0.90,
    ('auto-mix', ALL): 0.90,
}

# On hardware samples: at one sample per million accesses the low guest
# of auto-mix gives 800 to 1,000 samples a period, so the guard reads its
# progress to about 3 %, too coarse for its 1 % tolerance; and the
# reboot draw.
KNOWN_GAPS_SAMPLES = {
    ('io-mix-reboot', ('brm',)): 0.85,
    ('io-mix-reboot', ('vnuioa',)): 0.79,
    ('io-mix-reboot', ALL): 0.79,
    ('auto-mix', ('auto',)): 0.88,
    ('auto-mix', ALL): 0.88,
}


# Each signal's test, its known gaps: test_<name>__<scenario>__<loops>.
SIGNAL_TESTS = (
    ('no_guest_loses_more_than_2_percent', locality.SIGNAL_COUNTERS,
     KNOWN_GAPS),
    ('nor_on_the_kernels_hinting_faults', locality.SIGNAL_HINTING_FAULTS,
     KNOWN_GAPS_SAMPLED),
    ('nor_on_memory_bandwidth', locality.SIGNAL_BANDWIDTH,
     KNOWN_GAPS_BANDWIDTH),
    ('nor_on_hardware_samples', locality.SIGNAL_SAMPLES,
     KNOWN_GAPS_SAMPLES),
)


def _cases():
    for name in scenarios.SCENARIOS:
        if name == 'dense':
            continue
        for loops in experiment.LOOP_SETS:
            yield name, tuple(loops)


def _case_name(name, loops):
    """``io_mix_reboot__vnuioa``; every loop together is ``all_loops``."""
    which = 'all_loops' if loops == ALL else '_'.join(loops)
    return f'{name}__{which}'.replace('-', '_')


class NoHarmPerGuestTest(test_base.TestCase):
    """A test per signal, scenario and loop set; see _add_case_tests."""

    def _check(self, signal, known_gaps, name, loops):
        row = experiment.compare(name, loops, periods=40, seeds=SEEDS,
                                 signal=signal)
        floor = known_gaps.get((name, loops), TARGET)
        what = (f'{signal}: {name} {"+".join(loops)}: {row.worst_name} '
                f'at {row.worst_guest:.3f}x')
        self.assertGreaterEqual(row.worst_guest, floor, what)
        if floor < TARGET:
            # A gap that closed must leave KNOWN_GAPS and loops.rst.
            self.assertLess(row.worst_guest, TARGET, what)


def _add_case_tests(cls):
    """One test method on ``cls`` per signal, scenario and loop set."""
    for test, signal, known_gaps in SIGNAL_TESTS:
        for name, loops in _cases():
            def check(self, signal=signal, known_gaps=known_gaps, name=name,
                      loops=loops):
                self._check(signal, known_gaps, name, loops)
            check.__name__ = f'test_{test}__{_case_name(name, loops)}'
            check.__doc__ = (f'{signal}: {"+".join(loops)} costs no guest '
                             f'of {name} more than 2 %, or its known gap.')
            setattr(cls, check.__name__, check)


_add_case_tests(NoHarmPerGuestTest)
