"""``openstack numa explain`` end to end against the in-process API."""

import datetime

from tests.unit.collector import fakes
from tests.unit.osc import base
from tests.unit.osc import compute

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
        # 0.8 - (0.25 + 2 vCPUs * 0.25 / 8 CPUs), to three places.
        self.assertIn('NumaNodeLoadWeigher: 0.488', out)

    def test_an_unknown_policy_is_the_api_error(self):
        code, _out, err = self.run_cli(*BASE, '--property',
                                       'hw:numa_policy=spread')
        self.assertEqual(1, code)
        self.assertIn("numa-policy API error 400: Invalid value 'spread' "
                      "for 'hw:numa_policy'; allowed values are:", err)


class ExplainFlavorTest(base.CliTestCase):
    """``--flavor``: nova's flavor through the compute client, then options."""

    def setUp(self):
        super().setUp()
        now = datetime.datetime.now(datetime.timezone.utc)
        self.api.storage.store_report(
            fakes.make_report(generated_at=now), now)
        self.compute = compute.FakeCompute()
        self.compute.add_flavor('f-1', 'm1.numa', 4, 8192,
                                {'hw:numa_policy': 'home'})
        self.compute.add_flavor('f-2', 'm1.plain', 2, 2048)
        self.services['compute'] = self.compute

    def explain(self, *argv):
        """compute-1's verdicts by filter name, with --long."""
        row, = self.json_cli('numa', 'explain', '--long', *argv)
        return {f['name']: f for f in row['Filters']}

    def size(self, filters):
        numbers = filters['NumaNodeLoadFilter']['numbers']
        return numbers['vcpus'], numbers['memory_mb']

    def test_flavor_by_name_brings_size_and_extra_specs(self):
        filters = self.explain('--flavor', 'm1.numa')
        self.assertEqual((4, 8192), self.size(filters))
        self.assertEqual('agent cannot enforce home',
                         filters['NumaPolicyFilter']['reason'])

    def test_flavor_by_id(self):
        filters = self.explain('--flavor', 'f-2')
        self.assertEqual((2, 2048), self.size(filters))
        self.assertEqual('the request does not ask for this',
                         filters['NumaPolicyFilter']['reason'])

    def test_options_override_and_add_to_the_flavor(self):
        filters = self.explain('--flavor', 'm1.numa', '--memory-mb', '4096',
                               '--property', 'hw:numa_nic_locality=required',
                               '--physnet', 'other')
        self.assertEqual((4, 4096), self.size(filters))
        self.assertEqual('agent cannot enforce home',
                         filters['NumaPolicyFilter']['reason'])
        self.assertEqual('no NUMA node is local to the uplink',
                         filters['NumaNicLocalityFilter']['reason'])

    def test_a_property_replaces_the_flavors_extra_spec(self):
        filters = self.explain('--flavor', 'm1.numa', '--vcpus', '6',
                               '--property', 'hw:numa_policy=interleave')
        self.assertEqual((6, 8192), self.size(filters))
        self.assertEqual('agent enforces interleave',
                         filters['NumaPolicyFilter']['reason'])

    def test_an_unknown_flavor_is_named(self):
        code, out, err = self.run_cli('numa', 'explain', '--flavor',
                                      'm9.nowhere')
        self.assertEqual(1, code)
        self.assertEqual('', out)
        self.assertIn("no flavor with the name or ID 'm9.nowhere'", err)

    def test_an_ambiguous_name_asks_for_the_id(self):
        self.compute.add_flavor('f-3', 'm1.plain', 8, 16384)
        code, _out, err = self.run_cli('numa', 'explain', '--flavor',
                                       'm1.plain')
        self.assertEqual(1, code)
        self.assertIn("more than one flavor is named 'm1.plain'; give its "
                      "ID", err)

    def test_without_flavor_the_size_is_required(self):
        for argv in (('--vcpus', '2'), ('--memory-mb', '1024'), ()):
            code, out, err = self.run_cli('numa', 'explain', *argv)
            self.assertEqual(1, code, argv)
            self.assertIn('give --flavor, or both --vcpus and --memory-mb',
                          err)
