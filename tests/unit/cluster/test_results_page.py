import testtools

from nova_numa_policy.lab.cluster import evidence
from tests.bench import cluster as bench


def _cell(scenario, strategy, means, optimum=1.0):
    return evidence.Cell(scenario, strategy, (0, 1), tuple(means), optimum,
                         0, 0, 0)


def _cells(ours_low=(0.97, 0.97)):
    cells = []
    for name, ours in (('netperf', (0.99, 0.99)), ('low', ours_low)):
        cells.append(_cell(name, 'ours', ours))
        cells += [_cell(name, s, (0.5, 0.5)) for s in evidence.STRATEGIES
                  if s != 'ours']
        # The ceiling is no baseline: far above ours, it misses nothing.
        cells.append(_cell(name, evidence.CEILING, (1.1, 1.1)))
        # Nor is ours on another signal, far below ours.
        cells.append(_cell(name, evidence.BANDWIDTH, (0.2, 0.3)))
        cells.append(_cell(name, evidence.SAMPLES, (0.2, 0.3)))
    return cells


class TargetsTest(testtools.TestCase):

    def _section(self, cells, repeated=True, flavors=None):
        found = evidence.findings(cells)
        flavors = flavors or {'netperf': True, 'low': True}
        return '\n'.join(bench.targets(cells, [0, 1], found, flavors,
                                       repeated))

    def test_targets_that_hold_say_so_with_their_extreme(self):
        text = self._section(_cells())
        self.assertEqual(3, text.count(': holds;'))
        self.assertIn('the lowest is 0.970 (low)', text)
        self.assertIn('the smallest lead is +0.470', text)
        self.assertIn('the same hosts, moves and throughput', text)

    def test_misses_are_listed_under_their_target(self):
        text = self._section(_cells(ours_low=(0.5, 0.9)))
        # Still ahead of every baseline: only that target holds.
        self.assertEqual(1, text.count(': holds;'))
        fraction = text.index('**Ours reaches')
        self.assertIn('missed (1):\n\n* low: ours reaches 0.700',
                      text[fraction:])
        spread = text.index('**RSD of ours')
        self.assertIn('* low: RSD of ours over seeds', text[spread:])
        self.assertIn('missed (1)', text[spread:])

    def test_ours_against_the_ceiling_per_scenario(self):
        text = self._section(_cells())
        self.assertIn('per scenario: netperf 0.900, low 0.882.', text)
        for signal in ('memory bandwidth', 'hardware samples'):
            self.assertIn(f'**On {signal}**: ours as a fraction of the '
                          'optimum, per scenario: netperf 0.250, low 0.250.',
                          text)

    def test_a_run_that_repeats_differently_is_on_the_page(self):
        self.assertIn('DIFFERENT', self._section(_cells(), repeated=False))

    def test_a_guest_mix_that_changes_with_the_seed_is_on_the_page(self):
        text = self._section(_cells(), flavors={'netperf': True,
                                                'low': False})
        self.assertIn('differ between seeds in low', text)

    def test_the_table_has_every_heading(self):
        lines = bench.table(_cells()).splitlines()
        for head in ('Guard refusals', 'Rejected', 'RSD %'):
            self.assertIn(head, lines[1])
