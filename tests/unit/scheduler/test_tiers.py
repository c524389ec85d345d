"""The scheduler counts memory per tier (hw:numa_memory_tiers).

A host with a lower memory tier reports a memory-only node (a CXL
expander: memory, no CPUs) in a tier ranked above 0. A ``top`` flavor
needs all its memory free on the top-tier nodes, a ``tiered`` one its
share (hw:numa_top_tier_percent, 50 by default) there and the rest on
either tier; ``any``, and every flavor on a host without a lower tier,
are judged as before tiers were reported. Nodes are as in
``test_scoring``; a lower-tier node is ``(cpus, load, free_mb, floating,
floating_load, memory_tier)``.
"""

import collections
import datetime
import json
from unittest import mock

from oslo_config import cfg
from oslo_config import fixture as config_fixture

from nova import exception as nova_exception
from nova import objects
from nova.scheduler import weights as nova_weights
from nova.tests.unit.scheduler import fakes

from nova_numa_policy import conf as numa_conf  # noqa: F401  registers opts
from nova_numa_policy.rest import views
from nova_numa_policy.scheduling import assess
from nova_numa_policy.scheduling import explain
from nova_numa_policy.scheduling import scoring
from placement_filters import cache as cache_mod
from placement_filters import filters
from placement_filters import listener
from placement_filters import weights
from tests import base as test_base
from tests.unit.scheduler import reports
from tests.unit.scheduler import test_scoring as tables

NOW = tables.NOW
SETTINGS, PERMISSIVE = tables.SETTINGS, tables.PERMISSIVE

TOP = {'hw:numa_memory_tiers': 'top'}
TIERED = {'hw:numa_memory_tiers': 'tiered'}  # 50 % on the top tier
TIERED_25 = {'hw:numa_memory_tiers': 'tiered',
             'hw:numa_top_tier_percent': '25'}
TIERED_100 = {'hw:numa_memory_tiers': 'tiered',
              'hw:numa_top_tier_percent': '100'}
ANY = {'hw:numa_memory_tiers': 'any'}
POLICY = tables.POLICY
TOP_INTERLEAVE = dict(POLICY, **TOP)
IO_HEAVY = tables.IO_HEAVY

IDLE = tables.IDLE           # 32768 MB free
SMALL = (8, 0.1, 512)        # top-tier nodes with 512 MB free each
MID = (8, 0.1, 1536)
BUSY = tables.BUSY
# A CXL expander: memory and no CPU, in the tier below the top one; the
# same node where the kernel ranks no tier (rank 0, or an agent before
# report 1.8): the top tier, as every node was.
CXL = (0, 0.0, 8192, None, None, 1)
CXL_SMALL = (0, 0.0, 512, None, None, 1)
CXL_UNRANKED = (0, 0.0, 8192)
# Top-tier nodes with 512 MB free and 1024 MB of tiered guests' cold
# pages above their shares, which the tiering loop would move down.
SMALL_COLD = (8, 0.1, 512, None, None, 0, 1024)


def host(nodes, **kwargs):
    return tables.host(nodes=nodes, **kwargs)


def request(specs, memory_mb=2048, vcpus=2, **kwargs):
    return tables.request(specs, vcpus=vcpus, memory_mb=memory_mb, **kwargs)


# The top tier has 1024 MB free, the lower one 8192.
ROOM_BELOW_ONLY = host((SMALL, SMALL, CXL))
ROOMY = host((IDLE, IDLE, CXL))
# The same free memory, no lower tier.
NO_TIERS = host((SMALL, SMALL, CXL_UNRANKED))
OLD_AGENT = host((SMALL, SMALL, CXL), version='1.7')
# 1024 MB free on top, 2048 more that the lower tier's 8192 MB can take.
COLD_ABOVE_FLOORS = host((SMALL_COLD, SMALL_COLD, CXL))

Case = tables.Case

POLICY_CASES = [
    Case('top_fails_a_host_whose_only_room_is_on_the_lower_tier',
         request(TOP), ROOM_BELOW_ONLY, passed=False),
    Case('top_passes_a_host_whose_top_tier_has_its_memory_exactly',
         request(TOP, memory_mb=1024), ROOM_BELOW_ONLY, passed=True),
    Case('top_passes_a_host_whose_top_tier_has_room',
         request(TOP), ROOMY, passed=True),
    Case('top_passes_a_host_without_a_lower_tier_whatever_its_room',
         request(TOP), NO_TIERS, passed=True),
    Case('top_passes_a_host_whose_agent_says_no_tiers_before_1_8',
         request(TOP), OLD_AGENT, passed=True),
    Case('top_passes_where_cold_pages_above_floors_would_make_room',
         request(TOP, memory_mb=3072), COLD_ABOVE_FLOORS, passed=True),
    Case('top_fails_where_even_the_cold_pages_leave_too_little',
         request(TOP, memory_mb=3073), COLD_ABOVE_FLOORS, passed=False),
    Case('cold_pages_count_no_more_than_the_lower_tier_can_take',
         request(TOP), host((SMALL_COLD, SMALL_COLD, CXL_SMALL)),
         passed=False),
    Case('a_1_8_agent_says_nothing_would_go_down',
         request(TOP), host((SMALL_COLD, SMALL_COLD, CXL), version='1.8'),
         passed=False),
    Case('tiered_needs_only_its_share_on_the_top_tier',
         request(TIERED), ROOM_BELOW_ONLY, passed=True),
    Case('tiered_fails_where_the_top_tier_lacks_its_share',
         request(TIERED, memory_mb=4096), ROOM_BELOW_ONLY, passed=False),
    Case('tiered_with_a_smaller_share_passes_the_same_host',
         request(TIERED_25, memory_mb=4096), ROOM_BELOW_ONLY, passed=True),
    Case('any_is_not_refused_for_tiers',
         request(ANY, memory_mb=4096), ROOM_BELOW_ONLY, passed=True),
    Case('a_flavor_naming_no_tier_key_is_not_refused_for_tiers',
         request({}, memory_mb=4096), ROOM_BELOW_ONLY, passed=True),
    Case('a_policy_flavor_naming_no_tier_key_is_not_refused_for_tiers',
         request(POLICY, memory_mb=4096), ROOM_BELOW_ONLY, passed=True),
    Case('top_fails_a_host_without_report_when_strict',
         request(TOP), None, passed=False),
    Case('top_passes_a_host_without_report_when_permissive',
         request(TOP), None, PERMISSIVE, passed=True),
    Case('top_fails_a_host_whose_report_is_stale_when_strict',
         request(TOP), host((IDLE, IDLE, CXL), age=181), passed=False),
    Case('top_with_a_topology_nova_owns_is_nova_s',
         request(dict(TOP, **{'hw:numa_nodes': '1'}), nova_topology=True),
         ROOM_BELOW_ONLY, passed=True),
    Case('top_with_a_policy_fails_where_the_agent_cannot_enforce_it',
         request(TOP_INTERLEAVE), host((IDLE, IDLE, CXL),
                                       enforceable=('first-touch',)),
         passed=False),
    Case('top_with_a_policy_fails_where_the_top_tier_is_short',
         request(TOP_INTERLEAVE), ROOM_BELOW_ONLY, passed=False),
    Case('top_with_a_policy_passes_where_both_hold',
         request(TOP_INTERLEAVE), ROOMY, passed=True),
]

PolicyTierTest = tables.add_cases(
    type('PolicyTierTest', (test_base.TestCase,), {}),
    scoring.policy_verdict, POLICY_CASES)


class TierReasonTest(test_base.TestCase):
    """The policy filter's reasons name the numbers that decided."""

    def verdict(self, specs, summary, memory_mb=2048):
        return scoring.policy_verdict(request(specs, memory_mb=memory_mb),
                                      summary, SETTINGS, NOW)

    def test_top_says_what_it_needs_and_what_the_top_tier_has(self):
        verdict = self.verdict(TOP, ROOM_BELOW_ONLY)
        self.assertEqual(('top-tier-full', 'top tier only: 2048 MB needed, '
                          '1024 MB free on top-tier nodes [0, 1]'),
                         (verdict.why, verdict.reason))
        self.assertEqual({'memory_tiers': 'top', 'top_tier_mb': 2048,
                          'top_tier_free_mb': 1024,
                          'top_tier_demotable_mb': 0,
                          'lower_tier_free_mb': 8192,
                          'top_tier_nodes': [0, 1],
                          'lower_tier_nodes': [2]}, verdict.numbers)

    def test_the_room_cold_pages_make_is_said_apart_and_taken_below(self):
        # 1024 MB free on top and 2048 MB that would go down; the lower
        # tier's 8192 MB then has 6144 for anything else.
        verdict = self.verdict(TOP, COLD_ABOVE_FLOORS)
        self.assertTrue(verdict.passed)
        self.assertEqual(
            'top tier only: 2048 MB needed, 3072 MB free on top-tier nodes '
            "[0, 1] (2048 MB of it cold pages above tiered guests' shares, "
            'which go to the lower tier)', verdict.reason)
        self.assertEqual((3072, 2048, 6144), tuple(
            verdict.numbers[name] for name in (
                'top_tier_free_mb', 'top_tier_demotable_mb',
                'lower_tier_free_mb')))

    def test_tiered_names_its_share(self):
        verdict = self.verdict(TIERED, ROOM_BELOW_ONLY, memory_mb=4096)
        self.assertEqual('tiered, 50 % on the top tier: 2048 MB needed, '
                         '1024 MB free on top-tier nodes [0, 1]',
                         verdict.reason)
        self.assertEqual((2048, 1024), (verdict.numbers['top_tier_mb'],
                                        verdict.numbers['top_tier_free_mb']))

    def test_the_share_is_rounded_up_to_a_whole_mb(self):
        # 25 % of 1001 MB is 250.25 MB: the floor is a minimum.
        self.assertEqual(251, request(TIERED_25, memory_mb=1001).top_tier_mb)
        self.assertEqual(750, request(TIERED_25, memory_mb=1001).lower_tier_mb)
        self.assertEqual((2048, 0), (request(TOP).top_tier_mb,
                                     request(TOP).lower_tier_mb))
        self.assertEqual((0, 0), (request(ANY).top_tier_mb,
                                  request(ANY).lower_tier_mb))

    def test_a_policy_flavor_hears_both_answers(self):
        verdict = self.verdict(TOP_INTERLEAVE, ROOMY)
        self.assertEqual('agent enforces interleave; top tier only: '
                         '2048 MB needed, 65536 MB free on top-tier nodes '
                         '[0, 1]', verdict.reason)

    def test_a_host_without_a_lower_tier_says_so(self):
        verdict = self.verdict(TOP, NO_TIERS)
        self.assertEqual(('no-lower-tier', 'no lower memory tier: every '
                          'node is in the top tier'),
                         (verdict.why, verdict.reason))

    def test_the_words_are_built_only_when_read(self):
        words = mock.Mock(return_value='built')
        with mock.patch.dict(scoring._REASONS, {'top-tier-full': words}):
            verdict = scoring.policy_check(request(TOP), ROOM_BELOW_ONLY,
                                           SETTINGS)
            self.assertFalse(verdict.passed)
            words.assert_not_called()
            self.assertEqual('built', verdict.reason)


class FitTest(test_base.TestCase):
    """The load and NIC fit rules count each tier's memory."""

    def load(self, specs, summary, **kwargs):
        return scoring.load_verdict(request(specs, **kwargs), summary,
                                    SETTINGS, NOW)

    def test_a_lower_tier_node_is_no_room_for_a_top_guest(self):
        # Without the key, the memory-only node is the only one with
        # room: the guest's memory could sit there (its CPUs none).
        summary = host((SMALL, SMALL, CXL))
        self.assertEqual(('over', 2), (self.load(POLICY, summary).why,
                                       self.load(POLICY, summary).node))
        top = self.load(TOP, summary)
        self.assertEqual(('no-memory', None), (top.why, top.node))
        self.assertIn('on the top memory tier (hw:numa_memory_tiers=top)',
                      top.reason)
        self.assertEqual((1024, 8192), (top.numbers['top_tier_free_mb'],
                                        top.numbers['lower_tier_free_mb']))

    def test_a_top_guest_fits_a_node_its_cold_pages_would_make_room_on(
            self):
        # 512 MB free and 1024 MB that would go down: a 1536 MB guest
        # fits node 0, a 1537 MB one no node.
        summary = host((SMALL_COLD, SMALL, CXL))
        fits = self.load(TOP, summary, memory_mb=1536)
        self.assertEqual((True, 'fits', 0),
                         (fits.passed, fits.why, fits.node))
        self.assertEqual('no-memory',
                         self.load(TOP, summary, memory_mb=1537).why)

    def test_a_top_guest_fits_a_quiet_top_tier_node(self):
        verdict = self.load(TOP, host((BUSY, IDLE, CXL)))
        self.assertEqual((True, 'fits', 1),
                         (verdict.passed, verdict.why, verdict.node))

    def test_a_tiered_guest_splits_its_memory_between_the_tiers(self):
        # 2048 MB, 50 %: 1024 on a top-tier node, the rest below.
        summary = host((MID, MID, CXL))
        self.assertEqual(('over', 2), (self.load(POLICY, summary).why,
                                       self.load(POLICY, summary).node))
        tiered = self.load(TIERED, summary)
        self.assertEqual((True, 'fits', 0),
                         (tiered.passed, tiered.why, tiered.node))

    def test_a_tiered_guest_keeps_on_top_what_the_lower_tier_cannot_hold(
            self):
        # 4096 MB at 25 %: the lower tier has 512 MB, so 3584 MB must be
        # on one top-tier node, which has 1536.
        verdict = self.load(TIERED_25, host((MID, MID, CXL_SMALL)),
                            memory_mb=4096)
        self.assertEqual('no-memory', verdict.why)
        self.assertIn("with the lower tier's free memory for the rest",
                      verdict.reason)

    def test_a_tiered_guest_wider_than_every_node_takes_the_top_tier(self):
        # 10 vCPUs: more than a node's 8. Judged on the top tier as one.
        verdict = self.load(TIERED, host((MID, MID, CXL)), vcpus=10)
        self.assertEqual((True, 'fits', -1),
                         (verdict.passed, verdict.why, verdict.node))
        self.assertEqual(16, verdict.best.floating_cpus)
        self.assertEqual(3072, verdict.best.free_mb)

    def test_a_nic_local_node_holds_a_tiered_guest_s_share(self):
        io_tiered = dict(IO_HEAVY, **TIERED)
        summary = host((MID, IDLE, CXL))
        self.assertFalse(scoring.nic_verdict(
            request(IO_HEAVY), summary, SETTINGS, NOW).passed)
        verdict = scoring.nic_verdict(request(io_tiered), summary, SETTINGS,
                                      NOW)
        self.assertEqual((True, 'nic-fits', 0),
                         (verdict.passed, verdict.why, verdict.node))
        self.assertEqual(8192, verdict.numbers['lower_tier_free_mb'])

    def test_a_nic_local_node_in_a_lower_tier_is_not_local_enough(self):
        # A lower-tier node with CPUs (the uplink's): no place for a top
        # guest's memory, so no NIC-local node holds it.
        lower_with_cpus = (8, 0.1, 32768, None, None, 1)
        summary = host((lower_with_cpus, IDLE))
        io_top = dict(IO_HEAVY, **TOP)
        self.assertTrue(scoring.nic_verdict(request(IO_HEAVY), summary,
                                            SETTINGS, NOW).passed)
        verdict = scoring.nic_verdict(request(io_top), summary, SETTINGS,
                                      NOW)
        self.assertEqual((False, 'no-nic-memory'),
                         (verdict.passed, verdict.why))


# Hosts with and without a lower tier, busy and quiet, tight and roomy.
HOSTS = {
    'room_below_only': ROOM_BELOW_ONLY, 'roomy': ROOMY,
    'mid': host((MID, MID, CXL)), 'busy_top': host((BUSY, IDLE, CXL)),
    'no_tiers': NO_TIERS, 'old_agent': OLD_AGENT,
    'no_tiers_busy': host((BUSY, BUSY)), 'no_tiers_full': host((SMALL,)),
    'nic_on_2': host((IDLE, IDLE, CXL), nics=((2, 'physnet1'),)),
    'silent': None, 'stale': host((IDLE, IDLE, CXL), age=181),
}
WITHOUT_LOWER_TIER = ('no_tiers', 'old_agent', 'no_tiers_busy',
                      'no_tiers_full', 'silent', 'stale')
SHAPES = [dict(vcpus=2, memory_mb=2048), dict(vcpus=10, memory_mb=2048),
          dict(vcpus=2, memory_mb=40000), dict(vcpus=2, memory_mb=512)]
FLAVORS_BEFORE_TIERS = [{}, POLICY, IO_HEAVY,
                        {'hw:numa_nic_locality': 'preferred'},
                        {'hw:numa_io_intensity': 'high'}]
CHECKS = (scoring.policy_verdict, scoring.nic_verdict, scoring.load_verdict)


def _judgement(verdict):
    """What a verdict decides, without the request it was asked for."""
    return (verdict.passed, verdict.why, verdict.node,
            None if verdict.headroom is None else round(verdict.headroom, 9),
            verdict.weight)


class UnchangedTest(test_base.TestCase):
    """``any`` and hosts without a lower tier: as before tiers."""

    def judgements(self, specs, shape, summary, settings=SETTINGS):
        req = request(specs, **shape)
        found = [_judgement(check(req, summary, settings, NOW))
                 for check in CHECKS]
        fresh = scoring.fresh(summary, NOW, settings)
        if fresh is not None:
            found += [scoring.load_weight(req, fresh, settings),
                      scoring.nic_weight(req, fresh, settings)]
        return found

    def test_any_is_judged_as_the_flavor_without_the_key(self):
        for specs in FLAVORS_BEFORE_TIERS[1:]:
            for shape in SHAPES:
                for name, summary in HOSTS.items():
                    self.assertEqual(
                        self.judgements(specs, shape, summary),
                        self.judgements(dict(specs, **ANY), shape, summary),
                        (specs, shape, name))

    def test_top_and_tiered_fit_as_before_on_hosts_without_a_lower_tier(
            self):
        # The policy filter asks a tier-only flavor about the tiers (and
        # so needs a report in strict mode); the fit rules, the weights
        # and every verdict of a policy flavor are as they were.
        for specs in FLAVORS_BEFORE_TIERS[1:]:
            for tiers in (TOP, TIERED, TIERED_25):
                for shape in SHAPES:
                    for name in WITHOUT_LOWER_TIER:
                        summary = HOSTS[name]
                        before = self.judgements(specs, shape, summary)
                        after = self.judgements(dict(specs, **tiers), shape,
                                                summary)
                        self.assertEqual(before[1:], after[1:],
                                         (specs, tiers, shape, name))
                        if specs is POLICY:
                            self.assertEqual(before[0][0], after[0][0],
                                             (tiers, shape, name))

    def test_a_host_without_a_lower_tier_keeps_no_top_tier_apart(self):
        for name in WITHOUT_LOWER_TIER[:4]:
            self.assertIsNone(HOSTS[name].top_tier, name)
        self.assertEqual([0, 0, 1], [n.tier for n in ROOMY.nodes])


class LowerTierWeightTest(test_base.TestCase):
    """The load weigher prefers lower-tier room for a tiered guest only."""

    def weight(self, specs, summary, memory_mb=2048):
        return scoring.load_weight(request(specs, memory_mb=memory_mb),
                                   summary, SETTINGS)

    def test_tiered_prefers_a_host_with_room_below_for_its_lower_share(
            self):
        with_room = self.weight(TIERED, host((IDLE, IDLE, CXL)))
        without = self.weight(TIERED, host((IDLE, IDLE, CXL_UNRANKED)))
        self.assertAlmostEqual(scoring.LOWER_TIER_ROOM_WEIGHT,
                               with_room - without)

    def test_a_lower_tier_too_small_for_the_lower_share_adds_nothing(self):
        # 4096 MB at 50 %: 2048 MB below, where 512 are free.
        self.assertEqual(
            self.weight(TIERED, host((IDLE, IDLE, CXL_SMALL)), 4096),
            self.weight(TIERED, host((IDLE, IDLE, CXL_UNRANKED)), 4096))

    def test_top_any_and_a_whole_share_on_top_add_nothing(self):
        for specs in (TOP, ANY, POLICY, TIERED_100):
            self.assertEqual(
                self.weight(specs, host((IDLE, IDLE, CXL))),
                self.weight(specs, host((IDLE, IDLE, CXL_UNRANKED))), specs)

    def test_a_much_quieter_host_still_wins(self):
        quiet = self.weight(TIERED, host((IDLE, IDLE)))
        busier_with_room = self.weight(TIERED,
                                       host(((8, 0.5, 32768),) * 2 + (CXL,)))
        self.assertGreater(quiet, busier_with_room)

    def test_the_weight_is_read_off_the_load_verdict(self):
        req, summary = request(TIERED), host((IDLE, IDLE, CXL))
        assessor = assess.Assessor(req, SETTINGS)
        self.assertEqual(scoring.load_weight(req, summary, SETTINGS),
                         assessor.compute(summary).load_weight)


Flavor = collections.namedtuple('Flavor', 'extra_specs vcpus memory_mb')


class ExplainTiersTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        when = datetime.datetime.fromtimestamp(NOW - 5,
                                               datetime.timezone.utc)
        self.snapshot = {
            (name, name): reports.make_summary(host=name, nodes=nodes,
                                               generated_at=when)
            for name, nodes in (('short', (SMALL, SMALL, CXL)),
                                ('roomy', (IDLE, IDLE, CXL)),
                                ('flat', (IDLE, IDLE, CXL_UNRANKED)))}

    def rows(self, specs):
        return {row.host: row for row in explain.explain(
            Flavor(specs, 2, 2048), self.snapshot, SETTINGS, NOW,
            hosts=[('silent', 'silent')])}

    def test_each_host_shows_the_tier_numbers_that_decided(self):
        rows = self.rows(TOP)
        short = rows['short'].failures()['NumaPolicyFilter']
        self.assertEqual('top tier only: 2048 MB needed, 1024 MB free on '
                         'top-tier nodes [0, 1]', short.reason)
        roomy = rows['roomy'].verdicts['NumaPolicyFilter']
        self.assertTrue(roomy.passed)
        self.assertEqual((65536, 8192), (roomy.numbers['top_tier_free_mb'],
                                         roomy.numbers['lower_tier_free_mb']))
        load = rows['roomy'].verdicts['NumaNodeLoadFilter']
        self.assertEqual((65536, 8192), (load.numbers['top_tier_free_mb'],
                                         load.numbers['lower_tier_free_mb']))
        self.assertTrue(rows['flat'].passed)
        self.assertEqual('no-lower-tier',
                         rows['flat'].verdicts['NumaPolicyFilter'].why)
        self.assertEqual({'NumaPolicyFilter'},
                         set(rows['silent'].failures()))

    def test_the_rest_api_shows_them_as_json(self):
        body = views.host_explanation(self.rows(TOP)['short'])
        policy, = [f for f in body['filters']
                   if f['name'] == 'NumaPolicyFilter']
        self.assertEqual([0, 1], json.loads(json.dumps(policy))['numbers'][
            'top_tier_nodes'])

    def test_a_tiered_flavor_s_weight_shows_the_lower_tier_s_room(self):
        rows = self.rows(TIERED)
        self.assertTrue(rows['roomy'].passed)
        self.assertAlmostEqual(
            scoring.LOWER_TIER_ROOM_WEIGHT,
            rows['roomy'].weights['NumaNodeLoadWeigher']
            - rows['flat'].weights['NumaNodeLoadWeigher'])

    def test_a_flavor_without_tiers_shows_no_tier_numbers(self):
        rows = self.rows(POLICY)
        for row in rows.values():
            for verdict in row.verdicts.values():
                self.assertNotIn('top_tier_free_mb', verdict.numbers)


def _spec(extra_specs, memory_mb=2048):
    return objects.RequestSpec(
        flavor=objects.Flavor(vcpus=2, memory_mb=memory_mb,
                              extra_specs=dict(extra_specs)),
        image=objects.ImageMeta(properties=objects.ImageMetaProps()),
        instance_uuid='0f4ab4ba-1d64-4b4c-9e1c-1b0e2b8f6a11',
        scheduler_hints={}, numa_topology=None,
        network_metadata=objects.NetworkMetadata(physnets=set(),
                                                 tunneled=False))


class PluginTiersTest(test_base.TestCase):
    """The filters and weighers as nova calls them."""

    def setUp(self):
        super().setUp()
        objects.register_all()
        self.useFixture(config_fixture.Config(cfg.CONF))
        self.cache = cache_mod.ReportCache(
            max_hosts=100, max_report_bytes=1 << 20, io_rate=500, ttl=180)
        listener.RUNTIME.install(self.cache)
        self.addCleanup(listener.RUNTIME.stop)

    def report(self, **nodes_by_host):
        now = datetime.datetime.now(datetime.timezone.utc)
        for name, nodes in nodes_by_host.items():
            self.cache.ingest(reports.make_payload(host=name, nodes=nodes,
                                                   generated_at=now))
        return [fakes.FakeHostState(name, name, {'aggregates': []})
                for name in nodes_by_host]

    def passing(self, filter_classes, hosts, extra_specs, memory_mb=2048):
        try:
            for cls in filter_classes:
                hosts = list(cls().filter_all(
                    hosts, _spec(extra_specs, memory_mb)))
        except nova_exception.NoValidHost as exc:
            return str(exc)
        return {host.host for host in hosts}

    def test_a_top_flavor_passes_the_host_whose_top_tier_has_room(self):
        hosts = self.report(short=(SMALL, SMALL, CXL),
                            roomy=(IDLE, IDLE, CXL))
        for classes in ([filters.NumaPolicyFilter], [filters.NumaFilter]):
            self.assertEqual({'roomy'}, self.passing(classes, hosts, TOP))
            self.assertEqual({'short', 'roomy'},
                             self.passing(classes, hosts, {}))
            # As a flavor without the key: NumaFilter's load check finds
            # short's 2048 MB only on its CPU-less node, as before tiers.
            self.assertEqual(self.passing(classes, hosts, POLICY),
                             self.passing(classes, hosts, ANY))
        self.assertEqual({'short', 'roomy'}, self.passing(
            [filters.NumaPolicyFilter], hosts, ANY))

    def test_with_no_top_tier_room_anywhere_the_fault_says_why(self):
        hosts = self.report(short=(SMALL, SMALL, CXL),
                            shorter=(SMALL, CXL))
        for classes in ([filters.NumaPolicyFilter], [filters.NumaFilter],
                        [filters.NumaPolicyFilter,
                         filters.NumaNicLocalityFilter,
                         filters.NumaNodeLoadFilter]):
            reason = self.passing(classes, hosts, TOP)
            self.assertEqual(
                'No valid host was found. No host has 2048 MB free on its '
                'top memory tier, where hw:numa_memory_tiers=top keeps all '
                "of the instance's memory.", reason)
            self.assertLessEqual(len(reason), 255)
        # 4096 MB at 50 %: 2048 on the top tier, which neither has.
        self.assertEqual(
            'No valid host was found. No host has 2048 MB free on its top '
            'memory tier, where hw:numa_memory_tiers=tiered keeps 50 % of '
            "the instance's memory.",
            self.passing([filters.NumaFilter], hosts, TIERED, 4096))

    def test_other_refusals_keep_nova_s_message(self):
        # One host short of top-tier room, one whose agent cannot enforce
        # the policy: the tiers are not why nothing is left.
        now = datetime.datetime.now(datetime.timezone.utc)
        hosts = self.report(short=(SMALL, SMALL, CXL))
        self.cache.ingest(reports.make_payload(
            host='ft', nodes=(IDLE, IDLE, CXL), generated_at=now,
            enforceable=('first-touch',)))
        hosts.append(fakes.FakeHostState('ft', 'ft', {'aggregates': []}))
        self.assertEqual(set(), self.passing([filters.NumaPolicyFilter],
                                             hosts, TOP_INTERLEAVE))

    def test_a_tiered_flavor_is_weighed_to_the_host_with_room_below(self):
        hosts = self.report(flat=(IDLE, IDLE, CXL_UNRANKED),
                            tiered=(IDLE, IDLE, CXL))
        for classes in ([weights.NumaNodeLoadWeigher], [weights.NumaWeigher]):
            for specs, best in ((TIERED, 'tiered'), (TOP, None),
                                (POLICY, None)):
                weighed = nova_weights.HostWeightHandler(
                ).get_weighed_objects([cls() for cls in classes], hosts,
                                      _spec(specs))
                scores = {w.obj.host: w.weight for w in weighed}
                if best is None:
                    self.assertEqual(scores['flat'], scores['tiered'],
                                     (classes, specs))
                else:
                    self.assertGreater(scores[best],
                                       scores['flat'], (classes, specs))
