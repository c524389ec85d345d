from numa_policy_lab.cluster import bound
from numa_policy_lab.cluster import evidence
from numa_policy_lab.sim import experiment
from tests import base as test_base
from tests.bench import cluster as bench


def _cell(scenario, strategy, means, best_static=1.0, bounds=(1.2, 1.2),
          pages=0):
    return evidence.Cell(scenario, strategy, (0, 1), tuple(means),
                         best_static, pages, 0, 0, bounds=bounds)


def _cells(ours_low=(0.97, 0.97)):
    cells = []
    for name, ours in (('netperf', (0.99, 0.99)), ('low', ours_low)):
        cells.append(_cell(name, 'ours', ours))
        cells += [_cell(name, s, (0.5, 0.5)) for s in evidence.STRATEGIES
                  if s != 'ours']
        # Perfect counters are no baseline: far above ours, it misses
        # nothing.
        cells.append(_cell(name, evidence.COUNTERS, (1.1, 1.1)))
        # Nor is ours on another signal, far below ours.
        cells.append(_cell(name, evidence.BANDWIDTH, (0.2, 0.3)))
        cells.append(_cell(name, evidence.SAMPLES, (0.2, 0.3)))
    return cells


class TargetsTest(test_base.TestCase):

    def _section(self, cells, repeated=True, flavors=None):
        found = evidence.findings(cells)
        flavors = flavors or {'netperf': True, 'low': True}
        return '\n'.join(bench.targets(cells, [0, 1], found, flavors,
                                       repeated))

    def test_targets_that_hold_say_so_with_their_extreme(self):
        text = self._section(_cells())
        self.assertEqual(4, text.count(': holds;'))
        self.assertIn('the closest are ours, perfect counters on netperf '
                      '(0.917)', text)
        self.assertIn('the lowest is 0.970 (low)', text)
        self.assertIn('the smallest lead is +0.470', text)
        self.assertIn('the same hosts, moves and throughput', text)

    def test_misses_are_listed_under_their_target(self):
        text = self._section(_cells(ours_low=(0.5, 0.9)))
        # Still ahead of every baseline and below the bound: only those
        # targets hold.
        self.assertEqual(2, text.count(': holds;'))
        fraction = text.index('**Ours reaches')
        self.assertIn('missed (1):\n\n* low: ours reaches 0.700',
                      text[fraction:])
        spread = text.index('**RSD of ours')
        self.assertIn('* low: RSD of ours over seeds', text[spread:])
        self.assertIn('missed (1)', text[spread:])

    def test_ours_against_perfect_counters_per_scenario(self):
        text = self._section(_cells())
        self.assertIn('per scenario: netperf 0.900, low 0.882.', text)
        self.assertIn('at least as well as ours on every other signal', text)
        for signal in ('memory bandwidth', 'hardware samples'):
            self.assertIn(f'**On {signal}**: ours as a fraction of the '
                          'best static placement, per scenario: netperf '
                          '0.250, low 0.250.', text)

    def test_another_signal_past_perfect_counters_is_no_ceiling(self):
        cells = _cells()
        cells.append(_cell('low', evidence.BANDWIDTH, (1.2, 1.2),
                           pages=30))
        text = self._section(cells)
        self.assertIn('**Perfect counters are no ceiling**: ours on another '
                      'signal does better on low (ours, memory bandwidth '
                      '1.2000 against 1.1000; per run 30 pages moved by our '
                      'loops, 0 by the kernel, 0.0 guard refusals, against '
                      '0 pages moved by our loops, 0 by the kernel, 0.0 '
                      'guard refusals)', text)

    def test_a_row_above_its_bound_is_a_miss_naming_it(self):
        cells = _cells()
        cells.append(_cell('low', evidence.SAMPLES, (1.0, 1.3)))
        text = self._section(cells)
        head = text.index('**No row passes its bound**')
        self.assertIn('missed (1):\n\n* low: ours, hardware samples, seed '
                      '1, reaches 1.300000, above the bound of the same run '
                      '(1.200000)', text[head:])

    def test_the_page_states_each_bound_and_why_it_passes_one(self):
        cells = _cells()
        text = bench.page(cells, [0, 1], evidence.findings(cells),
                          {'netperf': True, 'low': True}, True,
                          {'netperf': [], 'low': [bound.LONE_VCPU]})
        self.assertIn('Bound per scenario (of every run; a range where '
                      'seeds differ): netperf 1.200, low 1.200.', text)
        self.assertIn('Best static placement per scenario: netperf 1.000, '
                      'low 1.000.', text)
        self.assertIn(f'Above 1.0 on low: {bound.LONE_VCPU}.', text)
        self.assertNotIn('Above 1.0 on netperf', text)
        self.assertIn('Of bound', text)

    def test_a_run_that_repeats_differently_is_on_the_page(self):
        self.assertIn('DIFFERENT', self._section(_cells(), repeated=False))

    def test_a_guest_mix_that_changes_with_the_seed_is_on_the_page(self):
        text = self._section(_cells(), flavors={'netperf': True,
                                                'low': False})
        self.assertIn('differ between seeds in low', text)

    def test_the_table_has_every_heading(self):
        lines = bench.table(_cells()).splitlines()
        for head in ('Guard refusals', 'Rejected', 'RSD %', 'Of best static',
                     'Of bound'):
            self.assertIn(head, lines[1])

    def test_the_table_gives_every_row_its_fraction_of_the_bound(self):
        lines = bench.table([_cell('low', 'ours', (0.6, 0.6),
                                   bounds=(1.2, 1.2))]).splitlines()
        self.assertEqual(['low', 'ours', '0.600', '0.600', '0.500'],
                         lines[3].split()[:5])


def _io_row(loops, netperf):
    return experiment.IoPathRow(loops=loops, mean_tput=netperf,
                                netperf=netperf, memcached=0.9,
                                gain=netperf / 0.7, actions=len(loops))


class IoPathSectionTest(test_base.TestCase):
    """The host simulator's I/O path rows: with and without steering."""

    def setUp(self):
        super().setUp()
        self.rows = [_io_row((), 0.7), _io_row(('vnuioa',), 0.7),
                     _io_row(('vnuioa', 'iopath'), 0.96)]
        self.text = '\n'.join(bench.io_path(self.rows, [0, 9]))

    def test_every_row_is_labelled_simulated(self):
        lines = self.text.splitlines()
        first = lines.index(next(line for line in lines
                                 if line.startswith('Numbers')))
        body = [line for line in lines[first + 2:] if line.strip()
                and not line.startswith('=')]
        self.assertEqual(3, len(body))
        for line in body:
            self.assertTrue(line.startswith('simulated  '), line)

    def test_rows_without_and_with_steering(self):
        self.assertIn('simulated  vnuioa         0.700', self.text)
        self.assertIn('simulated  vnuioa+iopath  0.960', self.text)
        self.assertIn('seeds 0..9', self.text)
        # The estimate it rests on is named.
        self.assertIn('estimate derived from :ref:`seed 002 <seed-002>` '
                      'Fig. 5', self.text)

    def test_no_rows_no_section(self):
        self.assertEqual([], bench.io_path([], [0]))
