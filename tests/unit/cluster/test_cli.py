import io
import json


from numa_policy_lab import cli
from tests import base as test_base


class ClusterCliTest(test_base.TestCase):

    def _run(self, argv):
        out = io.StringIO()
        return cli.main(argv, out), out.getvalue()

    def test_list_scenarios(self):
        rc, text = self._run(['simulate', 'cluster', '--list-scenarios'])
        self.assertEqual(0, rc)
        for name in ('netperf', 'io-mixed', 'consolidation',
                     'hostile-bursty'):
            self.assertIn(name + ':', text)

    def test_json_with_seeds_and_both_references(self):
        rc, text = self._run(['simulate', 'cluster', '--scenario', 'high',
                              '--strategy', 'nova-default', '--seed', '1',
                              '--seeds', '2', '--json'])
        self.assertEqual(0, rc)
        report = json.loads(text)
        self.assertEqual([1, 2], report['seeds'])
        self.assertEqual(6, len(report['vms']))
        self.assertAlmostEqual(report['mean'] / report['best_static'],
                               report['of_best_static'], places=3)
        self.assertAlmostEqual(report['mean'] / report['bound'],
                               report['of_bound'], places=3)
        self.assertLessEqual(report['of_bound'], 1.0)
        self.assertIn('rsd', report)
        # Baselines run no loops: their agents' guard refuses nothing.
        self.assertEqual(0, report['guard_refusals'])

    def test_text_output_counts_guard_refusals(self):
        rc, text = self._run(['simulate', 'cluster', '--scenario', 'low',
                              '--strategy', 'ours', '--no-best-static'])
        self.assertEqual(0, rc)
        self.assertIn('guard refusals', text.splitlines()[-1])
        self.assertIn('best static -', text.splitlines()[-1])
        self.assertIn('bound 1.0', text.splitlines()[-1])

    def test_scenario_is_required(self):
        rc, text = self._run(['simulate', 'cluster'])
        self.assertEqual(2, rc)
