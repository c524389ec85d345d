"""The filters and weighers as nova calls them, on a cache of reports.

The combined NumaFilter and NumaWeigher must be interchangeable with the
individual classes; every plugin of one request shares one assessment per
host; reasons are built only for failures DEBUG shows. Nodes are
``(cpus, load, free_mb)``.
"""

import datetime
import logging
from unittest import mock

import fixtures
from oslo_config import cfg
from oslo_config import fixture as config_fixture

from nova import exception as nova_exception
from nova import objects
from nova.scheduler import weights as nova_weights
from nova.tests.unit.scheduler import fakes

from nova_numa_policy import conf as numa_conf  # noqa: F401  registers opts
from nova_numa_policy.scheduling import assess
from placement_filters import cache as cache_mod
from placement_filters import filters
from placement_filters import listener
from placement_filters import weights
from tests import base as test_base
from tests.unit.scheduler import reports

IDLE = (8, 0.1, 32768)
HALF = (8, 0.4, 32768)
BUSY = (8, 0.9, 32768)
FULL = (8, 0.1, 512)
IO_HEAVY = {'hw:numa_policy': 'interleave',
            'hw:numa_nic_locality': 'required'}
FLAVORS = {
    'plain': {},
    'policy': {'hw:numa_policy': 'interleave'},
    'io_heavy': IO_HEAVY,
    'preferred_nic': {'hw:numa_nic_locality': 'preferred'},
    'refused': {'hw:numa_policy': 'interleave', 'hw:numa_nodes': '1'},
}
# host name -> report kwargs; None: the host has no agent.
HOSTS = {
    'idle': dict(nodes=(IDLE, IDLE)),
    'nic_node_busy': dict(nodes=(BUSY, IDLE)),
    'nic_node_half': dict(nodes=(HALF, BUSY)),
    'all_busy': dict(nodes=(BUSY, BUSY)),
    'no_memory': dict(nodes=(FULL, FULL)),
    'first_touch_only': dict(nodes=(IDLE, IDLE),
                             enforceable=('first-touch',)),
    'silent': None,
}
INDIVIDUAL_FILTERS = (filters.NumaPolicyFilter, filters.NumaNicLocalityFilter,
                      filters.NumaNodeLoadFilter)


def spec(extra_specs, scheduler_hints=None):
    return objects.RequestSpec(
        flavor=objects.Flavor(vcpus=2, memory_mb=2048,
                              extra_specs=dict(extra_specs)),
        image=objects.ImageMeta(properties=objects.ImageMetaProps()),
        instance_uuid='0f4ab4ba-1d64-4b4c-9e1c-1b0e2b8f6a11',
        scheduler_hints=scheduler_hints or {}, numa_topology=None,
        network_metadata=objects.NetworkMetadata(physnets=set(),
                                                 tunneled=False))


def host_state(name, aggregate_metadata=None):
    aggregates = [] if aggregate_metadata is None else [
        objects.Aggregate(id=1, name='agg', metadata=aggregate_metadata)]
    return fakes.FakeHostState(name, name, {'aggregates': aggregates})


class _PluginTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        objects.register_all()
        self.flags = self.useFixture(config_fixture.Config(cfg.CONF)).config
        self.cache = cache_mod.ReportCache(
            max_hosts=100, max_report_bytes=1 << 20, io_rate=500, ttl=180)
        listener.RUNTIME.install(self.cache)
        self.addCleanup(listener.RUNTIME.stop)
        now = datetime.datetime.now(datetime.timezone.utc)
        for name, kwargs in HOSTS.items():
            if kwargs is not None:
                self.cache.ingest(reports.make_payload(
                    host=name, generated_at=now, **kwargs))
        self.hosts = [host_state(name) for name in HOSTS]

    def passing(self, filter_classes, extra_specs):
        """The hosts that pass, or the reason the request itself fails."""
        hosts = self.hosts
        try:
            for cls in filter_classes:
                hosts = list(cls().filter_all(hosts, spec(extra_specs)))
        except nova_exception.NoValidHost as exc:
            return str(exc)
        return {host.host for host in hosts}

    def scores(self, weigher_classes, extra_specs, hosts=None):
        weighed = nova_weights.HostWeightHandler().get_weighed_objects(
            [cls() for cls in weigher_classes], hosts or self.hosts,
            spec(extra_specs))
        return {w.obj.host: w.weight for w in weighed}


class NumaFilterTest(_PluginTest):

    def test_combined_filter_passes_what_the_three_filters_pass(self):
        for flavor, extra_specs in FLAVORS.items():
            self.assertEqual(
                self.passing(INDIVIDUAL_FILTERS, extra_specs),
                self.passing([filters.NumaFilter], extra_specs), flavor)

    def test_the_hosts_of_an_io_heavy_flavor(self):
        # The comparison above is only as good as its answers.
        self.assertEqual({'idle', 'nic_node_half'},
                         self.passing([filters.NumaFilter], IO_HEAVY))

    def test_a_refused_flavor_fails_the_request_saying_why(self):
        for filter_classes in ([filters.NumaFilter],
                               [filters.NumaPolicyFilter]):
            reason = self.passing(filter_classes, FLAVORS['refused'])
            self.assertIn('No valid host was found. hw:numa_policy=', reason)
            # What nova keeps of a fault message (the user reads it).
            self.assertLessEqual(len(reason), 255)

    def test_a_rebuild_is_not_filtered(self):
        rebuild = spec(IO_HEAVY, {'_nova_check_type': ['rebuild']})
        self.assertEqual(self.hosts,
                         filters.NumaFilter().filter_all(self.hosts,
                                                         rebuild))

    def test_host_passes_answers_for_one_host(self):
        numa_filter = filters.NumaFilter()
        self.assertTrue(numa_filter.host_passes(host_state('idle'),
                                                spec(IO_HEAVY)))
        self.assertFalse(numa_filter.host_passes(
            host_state('first_touch_only'), spec(IO_HEAVY)))
        # Alone, a busy host is the only choice: load is set aside.
        self.assertTrue(numa_filter.host_passes(host_state('all_busy'),
                                                spec(IO_HEAVY)))


class LoadIsAPreferenceTest(_PluginTest):
    """The load filter never leaves a request nova would place hostless."""

    def test_a_plain_flavor_is_not_filtered_on_load_by_default(self):
        for cls in (filters.NumaNodeLoadFilter, filters.NumaFilter):
            self.assertEqual(set(HOSTS), self.passing([cls], {}), cls)

    def test_the_operator_may_filter_plain_flavors(self):
        self.flags(filter_plain_flavors=True, group='numa_policy_scheduler')
        self.assertEqual(set(HOSTS) - {'all_busy', 'no_memory'},
                         self.passing([filters.NumaNodeLoadFilter], {}))

    def test_busy_hosts_are_avoided_while_a_quiet_one_is_left(self):
        self.assertNotIn('all_busy', self.passing(
            [filters.NumaNodeLoadFilter], FLAVORS['policy']))

    def test_with_no_quiet_host_every_host_is_kept_saying_why(self):
        logged = self.useFixture(fixtures.FakeLogger(
            name='placement_filters.filters', level=logging.INFO))
        self.hosts = [host_state('all_busy'), host_state('no_memory')]
        self.assertEqual({'all_busy', 'no_memory'},
                         self.passing([filters.NumaNodeLoadFilter],
                                      FLAVORS['policy']))
        self.assertIn('NumaNodeLoadFilter: no host has a NUMA node measured '
                      'at or under the load threshold 0.8 for this instance '
                      '(2 vCPUs, 2048 MB); load is set aside', logged.output)
        # The combined filter still refuses what its other checks refuse:
        # this idle host cannot enforce the policy.
        self.hosts.append(host_state('first_touch_only'))
        self.assertEqual({'all_busy', 'no_memory'},
                         self.passing([filters.NumaFilter],
                                      FLAVORS['policy']))
        self.assertEqual(
            self.passing(INDIVIDUAL_FILTERS, FLAVORS['policy']),
            self.passing([filters.NumaFilter], FLAVORS['policy']))


class SharedAssessmentTest(_PluginTest):

    def test_every_plugin_of_a_request_shares_one_assessment_per_host(self):
        compute = self.useFixture(fixtures.MockPatchObject(
            assess.Assessor, 'compute', autospec=True,
            side_effect=assess.Assessor.compute)).mock
        # A shape no other test uses, so nothing is memoised yet.
        flavor = dict(IO_HEAVY, **{'hw:numa_io_intensity': 'high'})
        self.passing(INDIVIDUAL_FILTERS + (filters.NumaFilter,), flavor)
        self.scores([weights.NumaNicLocalityWeigher,
                     weights.NumaNodeLoadWeigher, weights.NumaWeigher],
                    flavor)
        reported = sum(kwargs is not None for kwargs in HOSTS.values())
        self.assertEqual(reported, compute.call_count)


class FailureLogTest(_PluginTest):

    def test_a_failure_is_logged_with_its_reason_and_numbers_at_debug(self):
        logged = self.useFixture(fixtures.FakeLogger(
            name='placement_filters.filters', level=logging.DEBUG))
        self.passing([filters.NumaFilter], IO_HEAVY)
        self.assertIn('nic_node_busy, nic_node_busy fails NumaFilter '
                      '(NumaNodeLoadFilter): every node that holds the '
                      'instance is measured over the load threshold (NUMA '
                      'node 0', logged.output)
        self.assertIn("'load': 0.9", logged.output)
        self.assertNotIn('idle, idle fails', logged.output)

    def test_no_reason_is_built_when_debug_is_off(self):
        self.useFixture(fixtures.FakeLogger(
            name='placement_filters.filters', level=logging.INFO))
        verdict = mock.Mock()
        with mock.patch.object(filters.NumaFilter, 'checks', (
                ('NumaNicLocalityFilter', assess.NIC, verdict),)):
            passed = self.passing([filters.NumaFilter], IO_HEAVY)
        self.assertNotIn('all_busy', passed)
        verdict.assert_not_called()


class NumaWeigherTest(_PluginTest):

    def assertSameScores(self, expected, actual):
        self.assertEqual(set(expected), set(actual))
        for host, score in expected.items():
            self.assertAlmostEqual(score, actual[host], places=9, msg=host)

    def test_combined_weigher_scores_like_the_two_weighers(self):
        self.flags(nic_locality_weight_multiplier=2.0,
                   node_load_weight_multiplier=0.5,
                   weigh_plain_flavors=True, group='numa_policy_scheduler')
        for flavor, extra_specs in FLAVORS.items():
            self.assertSameScores(
                self.scores([weights.NumaNicLocalityWeigher,
                             weights.NumaNodeLoadWeigher], extra_specs),
                self.scores([weights.NumaWeigher], extra_specs))

    def test_aggregate_overrides_each_multiplier_of_the_combined(self):
        hosts = [host_state('idle', {'node_load_weight_multiplier': '3.0'}),
                 host_state('nic_node_half',
                            {'nic_locality_weight_multiplier': '-1.0'}),
                 host_state('all_busy')]
        individual = self.scores([weights.NumaNicLocalityWeigher,
                                  weights.NumaNodeLoadWeigher], IO_HEAVY,
                                 hosts)
        self.assertSameScores(individual, self.scores([weights.NumaWeigher],
                                                      IO_HEAVY, hosts))
        # Without the overrides 'idle' would score 2.0 (1.0 + 1.0).
        self.assertAlmostEqual(4.0, individual['idle'])

    def test_the_order_is_not_trivial(self):
        scores = self.scores([weights.NumaWeigher], IO_HEAVY)
        self.assertGreater(scores['idle'], scores['nic_node_busy'])
        self.assertGreater(scores['nic_node_busy'], scores['no_memory'])


class WeightMultiplierTest(_PluginTest):

    def multiplier(self, extra_specs, host):
        weigher = weights.NumaNodeLoadWeigher()
        weigher.weigh_objects([nova_weights.WeighedHost(h, 0.0)
                               for h in self.hosts], spec(extra_specs))
        return weigher.weight_multiplier(host)

    def test_the_option_without_an_aggregate(self):
        self.flags(node_load_weight_multiplier=2.5,
                   group='numa_policy_scheduler')
        self.assertEqual(2.5, self.multiplier(IO_HEAVY, host_state('idle')))

    def test_aggregate_metadata_overrides_the_option(self):
        self.assertEqual(7.0, self.multiplier(IO_HEAVY, host_state(
            'idle', {'node_load_weight_multiplier': '7'})))

    def test_zero_when_every_host_weighs_the_same(self):
        self.assertEqual(0.0, self.multiplier(FLAVORS['plain'], host_state(
            'idle', {'node_load_weight_multiplier': '7'})))

    def test_the_option_when_asked_before_any_request(self):
        self.flags(node_load_weight_multiplier=1.5,
                   group='numa_policy_scheduler')
        self.assertEqual(1.5, weights.NumaNodeLoadWeigher().weight_multiplier(
            host_state('idle')))
