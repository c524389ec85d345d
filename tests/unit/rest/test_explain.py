"""GET /v1/explain end to end: real app, real policy, SQLite via Storage."""

import datetime
import json
import urllib.parse

from tests import base as test_base
from tests.unit.collector import fakes
from tests.unit.rest import base

FILTERS = ['NumaPolicyFilter', 'NumaNicLocalityFilter', 'NumaNodeLoadFilter']
# Both nodes' CPUs free for floating guests, 10 % busy.
QUIET_FLOATING = {0: (list(range(8)), 0.1), 1: (list(range(8, 16)), 0.1)}


def _recent(seconds_ago):
    return (datetime.datetime.now(datetime.timezone.utc)
            - datetime.timedelta(seconds=seconds_ago))


def _path(vcpus=2, memory_mb=1024, specs=None, physnets=(), **raw):
    params = [('vcpus', vcpus), ('memory_mb', memory_mb)]
    if specs is not None:
        params.append(('extra_specs', json.dumps(specs)))
    params += [('physnet', name) for name in physnets]
    params += list(raw.items())
    return '/v1/explain?' + urllib.parse.urlencode(params)


class ExplainTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.api = self.useFixture(base.ApiFixture())
        storage = self.api.storage
        # compute-1 reports now; compute-2's latest report is from 2025,
        # long past report_ttl; compute-3 sent two, the second is latest.
        storage.store_report(fakes.make_report(generated_at=_recent(5)),
                             _recent(4))
        storage.store_report(fakes.make_report(host='compute-2'),
                             fakes.at(2))
        storage.store_report(fakes.make_report(
            host='compute-3', seq=1, generated_at=_recent(30)), _recent(29))
        storage.store_report(fakes.make_report(
            host='compute-3', seq=2, generated_at=_recent(10),
            free_mb=(100, 100)), _recent(9))

    def _json(self, path, status=200, headers=base.ADMIN):
        response = self.api.get(path, headers=headers)
        self.assertEqual(status, response.status_int, response.text)
        return response.json

    def _override(self, name, value):
        # conf.scheduler's OptGroup is shared by every ConfigOpts that
        # registers it, so an override outlives this test's private conf.
        self.api.conf.set_override(name, value, 'numa_policy_scheduler')
        self.addCleanup(self.api.conf.clear_override, name,
                        'numa_policy_scheduler')

    def _hosts(self, path):
        return {h['host']: h for h in self._json(path)['hosts']}

    @staticmethod
    def _filter(host, name):
        return next(f for f in host['filters'] if f['name'] == name)

    def test_every_reporting_host_is_explained_once_from_its_latest(self):
        hosts = self._json(_path(specs={'hw:numa_policy': 'interleave'}))[
            'hosts']
        self.assertEqual(['compute-1', 'compute-2', 'compute-3'],
                         [h['host'] for h in hosts])
        for host in hosts:
            self.assertEqual(FILTERS, [f['name'] for f in host['filters']])
        compute_3 = hosts[2]
        # The latest report (100 MiB free) is the one judged.
        self.assertEqual('no node has the free memory',
                         self._filter(compute_3,
                                      'NumaNodeLoadFilter')['reason'])
        self.assertFalse(compute_3['passed'])
        self.assertLess(compute_3['report_age'], 60)

    def test_load_verdict_carries_node_and_numbers(self):
        host = self._hosts(_path(vcpus=4, memory_mb=2048, specs={
            'hw:numa_policy': 'interleave'}))['compute-1']
        load = self._filter(host, 'NumaNodeLoadFilter')
        self.assertTrue(load['passed'])
        self.assertEqual(0, load['node'])
        # headroom: 0.8 - (0.25 + 4 vCPUs * 0.25 / 8 CPUs)
        self.assertEqual({'vcpus': 4, 'memory_mb': 2048, 'threshold': 0.8,
                          'vcpu_load': 0.25, 'load': 0.25, 'cpus': 8,
                          'free_mb': 30000, 'headroom': 0.425},
                         load['numbers'])

    def test_a_busy_host_fails_the_load_filter_beside_a_quiet_one(self):
        self.api.storage.store_report(fakes.make_report(
            host='compute-4', generated_at=_recent(5),
            floating=QUIET_FLOATING), _recent(4))
        self._override('node_load_threshold', 0.2)
        hosts = self._hosts(_path(specs={'hw:numa_policy': 'interleave'}))
        load = self._filter(hosts['compute-1'], 'NumaNodeLoadFilter')
        self.assertFalse(load['passed'])
        self.assertEqual('every node that holds the instance is measured '
                         'over the load threshold', load['reason'])
        self.assertEqual((0, 0.25), (load['node'], load['numbers']['load']))
        self.assertFalse(hosts['compute-1']['passed'])
        self.assertTrue(hosts['compute-4']['passed'])

    def test_with_no_quiet_host_load_is_set_aside_saying_why(self):
        self._override('node_load_threshold', 0.2)
        hosts = self._hosts(_path(specs={'hw:numa_policy': 'interleave'}))
        load = self._filter(hosts['compute-1'], 'NumaNodeLoadFilter')
        self.assertTrue(load['passed'])
        self.assertIn('no host has a node measured under the load '
                      'threshold', load['reason'])
        self.assertEqual((0.2, 0.25), (load['numbers']['threshold'],
                                       load['numbers']['load']))
        self.assertTrue(hosts['compute-1']['passed'])

    def test_a_plain_flavor_is_not_filtered_on_load_by_default(self):
        self._override('node_load_threshold', 0.2)
        self.api.storage.store_report(fakes.make_report(
            host='compute-4', generated_at=_recent(5),
            floating=QUIET_FLOATING), _recent(4))
        host = self._hosts(_path())['compute-1']
        load = self._filter(host, 'NumaNodeLoadFilter')
        self.assertTrue(load['passed'])
        self.assertIn('plain flavors are not filtered', load['reason'])
        self._override('filter_plain_flavors', True)
        body = self._json(_path())
        self.assertTrue(body['settings']['filter_plain_flavors'])
        host = {h['host']: h for h in body['hosts']}['compute-1']
        self.assertFalse(self._filter(host, 'NumaNodeLoadFilter')['passed'])

    def test_a_policy_the_agent_cannot_enforce_fails_with_its_list(self):
        hosts = self._hosts(_path(specs={'hw:numa_policy': 'home'}))
        verdict = self._filter(hosts['compute-1'], 'NumaPolicyFilter')
        self.assertEqual(
            {'name': 'NumaPolicyFilter', 'passed': False, 'node': None,
             'reason': 'agent cannot enforce home',
             'numbers': {'enforceable': ['first-touch', 'interleave']}},
            verdict)

    def test_carrefour_needs_a_host_that_measures_locality(self):
        self.api.storage.store_report(fakes.make_report(
            host='compute-4', generated_at=_recent(5),
            enforceable=('first-touch', 'interleave', 'home',
                         'first-touch+carrefour', 'interleave+carrefour',
                         'auto'),
            locality_signal='hinting-faults'), _recent(4))
        hosts = self._hosts(_path(
            specs={'hw:numa_policy': 'first-touch+carrefour'}))
        blind = self._filter(hosts['compute-1'], 'NumaPolicyFilter')
        self.assertFalse(blind['passed'])
        self.assertIsNone(blind['numbers']['locality_signal'])
        self.assertIn('the host measures no memory locality',
                      blind['reason'])
        self.assertIn('kernel.numa_balancing=1', blind['reason'])
        self.assertTrue(self._filter(hosts['compute-4'],
                                     'NumaPolicyFilter')['passed'])
        # Each host says which signal it has, refused or not.
        self.assertEqual({'compute-1': None, 'compute-2': None,
                          'compute-3': None,
                          'compute-4': 'hinting-faults'},
                         {name: host['locality_signal']
                          for name, host in hosts.items()})

    def test_a_stale_host_fails_in_strict_mode_and_passes_permissive(self):
        path = _path(specs={'hw:numa_policy': 'interleave'})
        stale = self._hosts(path)['compute-2']
        self.assertGreater(stale['report_age'], 180)
        self.assertEqual(
            'no fresh report; strict mode',
            self._filter(stale, 'NumaPolicyFilter')['reason'])
        self.assertTrue(self._filter(
            self._hosts(path)['compute-1'], 'NumaPolicyFilter')['passed'])
        self._override('no_report_mode', 'permissive')
        body = self._json(path)
        self.assertEqual('permissive', body['settings']['no_report_mode'])
        stale = {h['host']: h for h in body['hosts']}['compute-2']
        self.assertTrue(stale['passed'])

    def test_scheduler_options_are_the_ones_applied(self):
        self._override('node_load_threshold', 0.5)
        self._override('expected_vcpu_load', 0.5)
        body = self._json(_path(vcpus=1))
        self.assertEqual(0.5, body['settings']['node_load_threshold'])
        self.assertEqual(0.5, body['settings']['expected_vcpu_load'])
        load = self._filter(body['hosts'][0], 'NumaNodeLoadFilter')
        self.assertEqual((0.5, 0.5), (load['numbers']['threshold'],
                                      load['numbers']['vcpu_load']))
        # 0.5 - (0.25 + 1 vCPU * 0.5 / 8 CPUs)
        self.assertEqual(0.188, load['numbers']['headroom'])

    def test_required_nic_locality_follows_the_physnet(self):
        specs = {'hw:numa_policy': 'interleave',
                 'hw:numa_nic_locality': 'required'}
        local = self._hosts(_path(specs=specs, physnets=['physnet1']))
        nic = self._filter(local['compute-1'], 'NumaNicLocalityFilter')
        self.assertEqual((True, 1), (nic['passed'], nic['node']))
        other = self._hosts(_path(specs=specs, physnets=['physnet2']))
        nic = self._filter(other['compute-1'], 'NumaNicLocalityFilter')
        self.assertEqual('no NUMA node is local to the uplink',
                         nic['reason'])
        self.assertEqual({'physnets': ['physnet2']}, nic['numbers'])

    def test_weights_are_raw_and_stale_hosts_get_the_median(self):
        hosts = self._hosts(_path(specs={'hw:numa_policy': 'interleave'}))
        weights = {name: h['weights']['NumaNodeLoadWeigher']
                   for name, h in hosts.items()}
        # compute-1: node 0 headroom 0.8 - (0.25 + 2 * 0.25 / 8);
        # compute-3 holds nothing (the floor); compute-2 has no fresh
        # report (the median).
        self.assertAlmostEqual(0.4875, weights['compute-1'])
        self.assertEqual(-1.0, weights['compute-3'])
        self.assertAlmostEqual(-0.25625, weights['compute-2'])
        self.assertIsNone(hosts['compute-1']['weights'][
            'NumaNicLocalityWeigher'])

    def test_plain_flavors_are_not_weighed_by_default(self):
        host = self._hosts(_path())['compute-1']
        self.assertEqual({'NumaNicLocalityWeigher': None,
                          'NumaNodeLoadWeigher': None}, host['weights'])

    def test_a_conflict_with_nova_topology_fails_every_host(self):
        body = self._json(_path(specs={'hw:numa_policy': 'interleave',
                                       'hw:cpu_policy': 'dedicated'}))
        for host in body['hosts']:
            verdict = self._filter(host, 'NumaPolicyFilter')
            self.assertFalse(verdict['passed'])
            self.assertIn('cannot be combined with hw:cpu_policy=dedicated',
                          verdict['reason'])

    def test_the_request_is_echoed(self):
        body = self._json(_path(vcpus=3, memory_mb=4096,
                                specs={'hw:numa_policy': 'auto'},
                                physnets=['b', 'a', 'b']))
        self.assertEqual({'vcpus': 3, 'memory_mb': 4096,
                          'extra_specs': {'hw:numa_policy': 'auto'},
                          'physnets': ['a', 'b']}, body['request'])

    def test_a_semicolon_is_part_of_a_physnet_name(self):
        # Only '&' separates parameters; a raw ';' is an ordinary
        # character of a query, as clients such as werkzeug send it.
        path = '/v1/explain?vcpus=1&memory_mb=64&physnet=a;b&physnet=c%3Bd'
        body = self._json(path)
        self.assertEqual(['a;b', 'c;d'], body['request']['physnets'])

    def test_an_unknown_policy_value_names_the_allowed_ones(self):
        message = self._json(_path(specs={'hw:numa_policy': 'spread'}),
                             400)['error']['message']
        self.assertEqual(
            "Invalid value 'spread' for 'hw:numa_policy'; allowed values "
            "are: first-touch, interleave, home, first-touch+carrefour, "
            "interleave+carrefour, auto.", message)

    def test_bad_input_is_refused_with_400(self):
        cases = {
            '/v1/explain?vcpus=2': 'missing query parameter memory_mb',
            '/v1/explain?memory_mb=2': 'missing query parameter vcpus',
            _path(vcpus=0): 'vcpus must be an integer from 1 to 4096',
            _path(memory_mb='x'): 'memory_mb must be an integer',
            _path(extra_specs='{'): 'extra_specs must be a JSON object',
            _path(extra_specs='[1]'): 'must be a JSON object of strings',
            _path(extra_specs='{"a": 1}'): 'JSON object of strings',
            _path(extra_specs='[' * 100000): 'at most 65535 characters',
            _path(limit=1): "unknown query parameter 'limit'",
            _path() + '&vcpus=3': 'query parameter vcpus is repeated',
            _path(physnet='\x01'): 'physnet must be 1 to 255 characters',
        }
        for path, expected in cases.items():
            with self.subTest(path[:80]):
                self.assertIn(expected,
                              self._json(path, 400)['error']['message'])

    def test_deeply_nested_json_is_a_400_not_a_500(self):
        self._json(_path(extra_specs='[' * 60000), 400)

    def test_non_admins_are_refused_before_validation(self):
        body = self._json('/v1/explain?vcpus=banana', 403,
                          headers=base.MEMBER)
        self.assertIn('numa_policy:explain', body['error']['message'])

    def test_no_host_no_explanation(self):
        api = self.useFixture(base.ApiFixture())
        response = api.get(_path())
        self.assertEqual(200, response.status_int)
        self.assertEqual([], response.json['hosts'])
