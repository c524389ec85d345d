"""``openstack numa explain`` end to end against the in-process API."""

import datetime

from tests.unit.collector import fakes
from tests.unit.osc import base

BASE = ('numa', 'explain', '--vcpus', '2', '--memory-mb', '1024')


class ExplainCommandTest(base.CliTestCase):

    def setUp(self):
        super().setUp()
        now = datetime.datetime.now(datetime.timezone.utc)
        self.api.storage.store_report(
            fakes.make_report(generated_at=now), now)
        # Reported in 2025: long stale.
        self.api.storage.store_report(fakes.make_report('compute-2'),
                                      fakes.at(100))

    def test_each_host_with_its_failed_filters(self):
        rows = self.json_cli(*BASE, '--property', 'hw:numa_policy=home')
        self.assertEqual(['compute-1', 'compute-2'],
                         [r['Host'] for r in rows])
        self.assertEqual([False, False], [r['Passed'] for r in rows])
        self.assertEqual(
            [['agent cannot enforce home'], ['no fresh report; strict mode']],
            [[f['reason'] for f in r['Failed Filters']] for r in rows])
        self.assertNotIn('Filters', rows[0])

    def test_properties_and_physnets_reach_the_api(self):
        rows = self.json_cli(*BASE, '--long',
                             '--property', 'hw:numa_policy=interleave',
                             '--property', 'hw:numa_nic_locality=required',
                             '--physnet', 'physnet2', '--physnet', 'other')
        nic = rows[0]['Filters'][1]
        self.assertEqual('no NUMA node is local to the uplink', nic['reason'])
        self.assertEqual({'physnets': ['other', 'physnet2']}, nic['numbers'])

    def test_table_shows_reasons_numbers_and_weights(self):
        out = self.table_cli(*BASE, '--property', 'hw:numa_policy=home')
        self.assertIn('NumaPolicyFilter: agent cannot enforce home '
                      "(enforceable=['first-touch', 'interleave'])", out)
        self.assertIn('NumaNicLocalityWeigher: -', out)
        self.assertIn('NumaNodeLoadWeigher: 0.3', out)

    def test_an_unknown_policy_is_the_api_error(self):
        code, _out, err = self.run_cli(*BASE, '--property',
                                       'hw:numa_policy=spread')
        self.assertEqual(1, code)
        self.assertIn("numa-policy API error 400: Invalid value 'spread' "
                      "for 'hw:numa_policy'; allowed values are:", err)
