import io
import json


from numa_policy_lab import cli
from tests import base as test_base


class CliTest(test_base.TestCase):

    def _run(self, argv):
        out = io.StringIO()
        rc = cli.main(argv, out)
        return rc, out.getvalue()

    def test_list_scenarios(self):
        rc, text = self._run(['simulate', 'host', '--list-scenarios'])
        self.assertEqual(0, rc)
        for name in ('master-slave', 'low', 'io-mix', 'shared-contention'):
            self.assertIn(name + ':', text)

    def test_json_report_compares_baseline_and_loops(self):
        rc, text = self._run(['simulate', 'host', '--scenario',
                              'master-slave', '--loops', 'carrefour',
                              '--periods', '20', '--seed', '1', '--json'])
        self.assertEqual(0, rc)
        report = json.loads(text)
        self.assertEqual(['carrefour'], report['loops'])
        self.assertGreater(report['mean']['with_loops'],
                           report['mean']['baseline'])
        vm = report['vms']['master-slave-0']
        self.assertGreater(vm['pages_moved'], 0)

    def test_auto_policy_is_reported(self):
        rc, text = self._run(['simulate', 'host', '--scenario', 'auto-mix',
                              '--loops', 'auto', '--periods', '8', '--json'])
        report = json.loads(text)
        self.assertEqual('interleave+carrefour',
                         report['vms']['master-slave-auto']['auto_policy'])

    def test_dry_run_moves_nothing(self):
        rc, text = self._run(['simulate', 'host', '--scenario',
                              'master-slave', '--loops', 'carrefour',
                              '--periods', '5', '--dry-run', '--json'])
        report = json.loads(text)
        self.assertEqual(0, report['actions_applied'])
        self.assertEqual(report['mean']['baseline'],
                         report['mean']['with_loops'])

    def test_unknown_loop_is_a_usage_error(self):
        self.assertRaises(SystemExit, self._run,
                          ['simulate', 'host', '--scenario', 'low',
                           '--loops', 'nope'])

    def test_text_table(self):
        rc, text = self._run(['simulate', 'host', '--scenario', 'low',
                              '--periods', '2'])
        self.assertIn('mean', text)
