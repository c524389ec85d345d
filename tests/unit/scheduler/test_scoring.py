"""Table-driven specifications of the pure scheduler verdicts and weights.

Every case reads as a sentence: "<flavor> <passes/fails> <host>". Nodes
are ``(cpus, load, free_mb)``, or ``(cpus, load, free_mb, floating,
floating_load)`` where nova dedicates all but the first ``floating`` CPUs
to pinned guests; NICs are ``(numa_node, physnet)``.
"""

import collections
import datetime
from unittest import mock

from nova_numa_policy.scheduling import scoring
from tests import base as test_base
from tests.unit.scheduler import reports

NOW = 1_800_000_000.0
SETTINGS = scoring.Settings(ttl=180, strict=True, threshold=0.8)
PERMISSIVE = scoring.Settings(ttl=180, strict=False, threshold=0.8)
# The operator's opt-in: plain flavors judged on load too.
FILTER_PLAIN = scoring.Settings(ttl=180, strict=True, threshold=0.8,
                                filter_plain_flavors=True)

IO_HEAVY = {'hw:numa_policy': 'interleave',
            'hw:numa_nic_locality': 'required'}
POLICY = {'hw:numa_policy': 'interleave'}
PINNED = {'hw:cpu_policy': 'dedicated'}

IDLE = (8, 0.1, 32768)
BUSY = (8, 0.9, 32768)    # measured over the 0.8 threshold
# Measured under the threshold: quiet, however many vCPUs come.
WARM = (8, 0.75, 32768)
FULL = (8, 0.1, 512)      # no room for 2048 MB
# Nodes nova splits between shared and dedicated CPUs. Judged on all of
# their CPUs, the idle, busy and quiet ones would get the opposite
# verdict.
DEDICATED_IDLE = (8, 0.0, 32768, 0, None)      # no CPU for floating guests
DEDICATED_BUSY = (8, 1.0, 32768, 0, None)
SHARED_BUSY = (8, 0.45, 32768, 4, 0.9)         # 0.9 > 0.8
# 0.2 on its shared CPUs; on all its CPUs 0.6.
SHARED_ROOMY = (8, 0.6, 32768, 4, 0.2)
WHOLLY_SHARED_BUSY = (8, 0.9, 32768, 8, 0.9)


def host(nodes=(IDLE, IDLE), nics=((0, 'physnet1'),), age=10.0,
         enforceable=reports.ALL_POLICIES, instances=(), version=None):
    generated = datetime.datetime.fromtimestamp(NOW - age,
                                                datetime.timezone.utc)
    return reports.make_summary(nodes=nodes, nics=nics,
                                generated_at=generated,
                                enforceable=enforceable,
                                instances=instances, version=version)


def request(specs=None, vcpus=2, memory_mb=2048, physnets=(),
            nova_topology=False):
    return scoring.make_request(specs or {}, vcpus, memory_mb,
                                physnets=physnets,
                                nova_topology=nova_topology)


Case = collections.namedtuple(
    'Case', 'name request host settings passed node', defaults=(
        SETTINGS, None, None))


def add_cases(cls, fn, cases):
    """One test method per case, so each failure names its specification."""
    for case in cases:
        def test(self, case=case):
            verdict = fn(case.request, case.host, case.settings, NOW)
            self.assertEqual(case.passed, verdict.passed, verdict)
            if case.node is not None:
                self.assertEqual(case.node, verdict.node, verdict)
            self.assertTrue(verdict.reason)
        setattr(cls, 'test_' + case.name, test)
    return cls


POLICY_CASES = [
    Case('plain_flavor_passes_a_host_without_report_even_when_strict',
         request(), None, passed=True),
    Case('policy_passes_a_host_whose_agent_enforces_it',
         request(POLICY), host(), passed=True),
    Case('policy_fails_a_host_whose_agent_cannot_enforce_it',
         request(POLICY), host(enforceable=('first-touch',)), passed=False),
    Case('policy_fails_a_host_without_report_when_strict',
         request(POLICY), None, passed=False),
    Case('policy_passes_a_host_without_report_when_permissive',
         request(POLICY), None, PERMISSIVE, passed=True),
    Case('policy_fails_a_host_whose_report_is_stale_when_strict',
         request(POLICY), host(age=181), passed=False),
    Case('companion_key_alone_needs_no_agent',
         request({'hw:numa_nic_locality': 'preferred'}), None, passed=True),
    Case('first_touch_with_pinning_is_nova_s_and_needs_no_agent',
         request(dict(PINNED, **{'hw:numa_policy': 'first-touch'}),
                 nova_topology=True), None, passed=True),
    Case('policy_contradicting_nova_topology_fails_every_host',
         request({'hw:numa_policy': 'interleave', 'hw:numa_nodes': '1'}),
         host(), passed=False),
    Case('unknown_policy_value_stored_before_2_86_fails_every_host',
         request({'hw:numa_policy': 'bogus'}), host(), passed=False),
]

NIC_CASES = [
    Case('flavor_without_nic_requirement_passes_any_host',
         request(POLICY), host(nics=()), passed=True),
    Case('io_heavy_passes_a_host_whose_nic_local_node_holds_it',
         request(IO_HEAVY), host(nodes=(IDLE, BUSY)), passed=True, node=0),
    Case('io_heavy_leaves_a_busy_nic_local_node_to_the_load_filter',
         request(IO_HEAVY), host(nodes=(BUSY, IDLE)), passed=True, node=0),
    Case('io_heavy_fails_a_host_whose_nic_local_node_lacks_memory',
         request(IO_HEAVY), host(nodes=(FULL, IDLE)), passed=False),
    Case('io_heavy_uses_the_uplink_of_its_physnet',
         request(IO_HEAVY, physnets=('physnet2',)),
         host(nodes=(BUSY, IDLE), nics=((0, 'physnet1'), (1, 'physnet2'))),
         passed=True, node=1),
    Case('io_heavy_fails_a_host_without_an_uplink_for_its_physnet',
         request(IO_HEAVY, physnets=('physnet3',)), host(), passed=False),
    Case('io_heavy_uses_any_uplink_when_the_host_maps_no_physnet',
         request(IO_HEAVY, physnets=('physnet1',)),
         host(nodes=(BUSY, IDLE), nics=((1, None),)), passed=True, node=1),
    Case('io_heavy_fails_a_host_that_reports_no_uplink',
         request(IO_HEAVY), host(nics=()), passed=False),
    Case('uplink_of_unknown_locality_is_local_to_no_node',
         request(IO_HEAVY), host(nics=((None, 'physnet1'),)), passed=False),
    Case('on_a_single_node_host_every_uplink_is_local',
         request(IO_HEAVY), host(nodes=(IDLE,), nics=((None, None),)),
         passed=True, node=0),
    Case('io_heavy_fails_a_host_without_report_when_strict',
         request(IO_HEAVY), None, passed=False),
    Case('io_heavy_passes_a_host_without_report_when_permissive',
         request(IO_HEAVY), None, PERMISSIVE, passed=True),
    Case('nova_owned_topology_is_left_to_numa_topology_filter',
         request(dict(PINNED, **{'hw:numa_nic_locality': 'required'}),
                 nova_topology=True), host(nodes=(BUSY, BUSY)), passed=True),
    Case('io_heavy_fails_where_the_nic_local_node_s_cpus_are_dedicated',
         request(IO_HEAVY), host(nodes=(DEDICATED_IDLE, IDLE)),
         passed=False),
]

LOAD_CASES = [
    Case('policy_passes_a_host_with_one_node_under_threshold',
         request(POLICY), host(nodes=(BUSY, IDLE)), passed=True, node=1),
    Case('policy_fails_a_host_where_every_node_is_busy',
         request(POLICY), host(nodes=(BUSY, BUSY)), passed=False),
    Case('plain_flavor_passes_a_busy_host_by_default',
         request(), host(nodes=(BUSY, BUSY)), passed=True),
    Case('plain_flavor_fails_a_busy_host_when_the_operator_filters_it',
         request(), host(nodes=(BUSY, BUSY)), FILTER_PLAIN, passed=False),
    Case('plain_flavor_passes_a_quiet_node_when_filtered',
         request(), host(nodes=(BUSY, IDLE)), FILTER_PLAIN, passed=True,
         node=1),
    Case('a_guest_as_large_as_a_node_fits_an_idle_node',
         request(POLICY, vcpus=8), host(nodes=(IDLE, IDLE)), passed=True),
    Case('a_14_vcpu_guest_fits_an_idle_16_cpu_node',
         request(POLICY, vcpus=14), host(nodes=((16, 0.0, 32768),) * 2),
         passed=True),
    Case('the_guest_s_own_vcpus_never_make_a_quiet_node_busy',
         request(POLICY, vcpus=8), host(nodes=(WARM, WARM)), passed=True),
    Case('the_quiet_node_is_chosen_over_a_busy_one_with_more_cpus',
         request(POLICY, vcpus=2),
         host(nodes=((16, 0.85, 32768), (4, 0.7, 32768))), passed=True,
         node=1),
    Case('flavor_larger_than_any_node_is_judged_on_the_whole_host',
         request(POLICY, vcpus=10, memory_mb=40000),
         host(nodes=((8, 0.1, 32768),) * 2), passed=True, node=-1),
    Case('a_busy_whole_host_fails_a_flavor_larger_than_any_node',
         request(POLICY, vcpus=10), host(nodes=(BUSY, BUSY)),
         passed=False, node=-1),
    Case('policy_fails_a_host_without_free_memory_on_any_node',
         request(POLICY), host(nodes=(FULL, FULL)), passed=False),
    Case('host_without_report_passes_even_when_strict',
         request(POLICY), None, passed=True),
    Case('nova_owned_topology_is_left_to_numa_topology_filter_for_load',
         request({'hw:numa_nodes': '1'}, nova_topology=True),
         host(nodes=(BUSY, BUSY)), passed=True),
    Case('an_idle_dedicated_node_holds_no_floating_guest',
         request(POLICY), host(nodes=(WHOLLY_SHARED_BUSY, DEDICATED_IDLE)),
         passed=False),
    Case('a_busy_shared_set_is_busy_beside_idle_dedicated_cpus',
         request(POLICY), host(nodes=(SHARED_BUSY, SHARED_BUSY)),
         passed=False),
    Case('busy_dedicated_cpus_leave_the_shared_ones_their_headroom',
         request(POLICY), host(nodes=(SHARED_BUSY, SHARED_ROOMY)),
         passed=True, node=1),
    Case('a_flavor_wider_than_any_node_s_floating_cpus_takes_the_host',
         request(POLICY, vcpus=5),
         host(nodes=((8, 0.1, 32768, 4, 0.1),) * 2), passed=True, node=-1),
    Case('a_pinned_guest_is_left_to_numa_topology_filter_on_dedicated_cpus',
         request(PINNED, nova_topology=True),
         host(nodes=(DEDICATED_IDLE, DEDICATED_IDLE)), passed=True),
    Case('an_agent_before_report_1_6_has_all_its_cpus_counted',
         request(POLICY), host(nodes=(WHOLLY_SHARED_BUSY, DEDICATED_IDLE),
                               version='1.5'), passed=True, node=1),
    Case('required_nic_locality_judges_the_nic_local_node_s_load',
         request(IO_HEAVY), host(nodes=(BUSY, IDLE)), passed=False, node=0),
    Case('required_nic_locality_judges_its_physnet_s_node',
         request(IO_HEAVY, physnets=('physnet1',)),
         host(nodes=(BUSY, IDLE), nics=((0, 'physnet1'), (1, 'physnet2'))),
         passed=False, node=0),
    Case('required_nic_locality_judges_floating_cpus_on_the_nic_node',
         request(IO_HEAVY), host(nodes=(SHARED_BUSY, IDLE)),
         passed=False, node=0),
    Case('required_nic_locality_passes_a_quiet_nic_local_node',
         request(IO_HEAVY), host(nodes=(IDLE, BUSY)), passed=True, node=0),
]


PolicyVerdictTest = add_cases(
    type('PolicyVerdictTest', (test_base.TestCase,), {}),
    scoring.policy_verdict, POLICY_CASES)
NicVerdictTest = add_cases(
    type('NicVerdictTest', (test_base.TestCase,), {}),
    scoring.nic_verdict, NIC_CASES)
LoadVerdictTest = add_cases(
    type('LoadVerdictTest', (test_base.TestCase,), {}),
    scoring.load_verdict, LOAD_CASES)


WeightCase = collections.namedtuple(
    'WeightCase', 'name request hosts settings expected',
    defaults=(SETTINGS, None))


def add_weight_cases(cls, fn, cases):
    """Each case lists hosts best first; None means "weighs neutrally"."""
    for case in cases:
        def test(self, case=case):
            if case.expected == 'neutral':
                self.assertFalse(scoring.applies(fn, case.request,
                                                 case.settings))
                return
            self.assertTrue(scoring.applies(fn, case.request,
                                            case.settings))
            weights = scoring.neutral_fill(
                [None if h is None else fn(case.request, h, case.settings)
                 for h in case.hosts])
            for better, worse in zip(weights, weights[1:]):
                self.assertGreater(better, worse, weights)
        setattr(cls, 'test_' + case.name, test)
    return cls


NIC_WEIGHT_CASES = [
    WeightCase('io_heavy_prefers_more_headroom_on_the_nic_local_node',
               request(IO_HEAVY), [host(nodes=(IDLE, BUSY)),
                                   host(nodes=((8, 0.5, 32768), IDLE))]),
    WeightCase('io_heavy_prefers_a_nic_local_fit_to_a_remote_one',
               request(IO_HEAVY), [host(nodes=(IDLE, BUSY)),
                                   host(nodes=(BUSY, IDLE))]),
    WeightCase('io_heavy_avoids_an_uplink_shared_with_io_intensive_guests',
               request(IO_HEAVY), [
                   host(),
                   host(instances=[reports.make_instance(
                       '7b0c6bb4-9c58-4e0c-8f0a-3a1f6f8a8f01', {'0': 1024},
                       io_rate=800.0)])]),
    WeightCase('a_host_without_report_sits_between_known_hosts',
               request(IO_HEAVY), [host(nodes=(IDLE, BUSY)), None,
                                   host(nodes=(BUSY, IDLE))]),
    WeightCase('preferred_locality_is_weighed_too',
               request({'hw:numa_nic_locality': 'preferred'}),
               [host(nodes=(IDLE, BUSY)), host(nodes=(BUSY, IDLE))]),
    WeightCase('high_io_intensity_is_weighed_too',
               request({'hw:numa_io_intensity': 'high'}),
               [host(nodes=(IDLE, BUSY)), host(nodes=(BUSY, IDLE))]),
    WeightCase('plain_flavor_is_weighed_neutrally', request(), [],
               expected='neutral'),
    WeightCase('policy_without_io_keys_is_weighed_neutrally',
               request(POLICY), [], expected='neutral'),
    WeightCase('nova_owned_topology_is_weighed_neutrally',
               request(dict(PINNED, **{'hw:numa_nic_locality': 'required'}),
                       nova_topology=True), [], expected='neutral'),
]

LOAD_WEIGHT_CASES = [
    WeightCase('policy_prefers_the_host_whose_best_node_has_most_headroom',
               request(POLICY), [host(nodes=(BUSY, IDLE)),
                                 host(nodes=((8, 0.4, 32768), BUSY)),
                                 host(nodes=(BUSY, BUSY))]),
    WeightCase('policy_prefers_floating_headroom_to_idle_dedicated_cpus',
               request(POLICY),
               [host(nodes=((8, 0.2, 32768, 8, 0.2), DEDICATED_BUSY)),
                host(nodes=((8, 0.5, 32768, 8, 0.5), DEDICATED_IDLE))]),
    WeightCase('memory_that_fits_nowhere_weighs_least',
               request(POLICY), [host(nodes=(BUSY, BUSY)),
                                 host(nodes=(FULL, FULL))]),
    WeightCase('plain_flavor_is_weighed_neutrally_by_default', request(),
               [], expected='neutral'),
    WeightCase('plain_flavor_is_weighed_when_the_operator_asks',
               request(), [host(nodes=(IDLE, IDLE)), host(nodes=(BUSY, BUSY))],
               settings=scoring.Settings(ttl=180, strict=True, threshold=0.8,
                                         weigh_plain_flavors=True)),
]

NicWeightTest = add_weight_cases(
    type('NicWeightTest', (test_base.TestCase,), {}),
    scoring.nic_weight, NIC_WEIGHT_CASES)
LoadWeightTest = add_weight_cases(
    type('LoadWeightTest', (test_base.TestCase,), {}),
    scoring.load_weight, LOAD_WEIGHT_CASES)


class NeutralFillTest(test_base.TestCase):

    def test_unknown_hosts_get_the_median_of_known_ones(self):
        self.assertEqual([0.1, 0.5, 0.9, 0.5],
                         scoring.neutral_fill([0.1, None, 0.9, 0.5]))

    def test_all_unknown_is_all_equal(self):
        self.assertEqual([0.0, 0.0], scoring.neutral_fill([None, None]))


class LazyReasonTest(test_base.TestCase):
    """A check decides without building words; reading them builds them."""

    def test_the_reason_and_numbers_are_built_only_when_read(self):
        reason = mock.Mock(return_value='built')
        numbers = mock.Mock(return_value={'n': 1})
        with mock.patch.dict(scoring._REASONS, over=reason), \
                mock.patch.dict(scoring._NUMBERS, over=numbers):
            verdict = scoring.load_check(request(POLICY),
                                         host(nodes=(BUSY, BUSY)), SETTINGS)
            self.assertFalse(verdict.passed)
            reason.assert_not_called()
            numbers.assert_not_called()
            self.assertEqual(('built', {'n': 1}),
                             (verdict.reason, verdict.numbers))
        reason.assert_called_once_with(verdict)

    def test_every_reason_a_check_gives_has_words(self):
        self.assertEqual(set(), set(scoring._NUMBERS) - set(scoring._REASONS))
        for why, reason in scoring._REASONS.items():
            self.assertTrue(callable(reason) or reason, why)

    def test_a_weight_is_read_off_the_check_that_judged_the_host(self):
        busy_first = host(nodes=(BUSY, IDLE))
        verdict = scoring.load_check(request(POLICY), busy_first, SETTINGS)
        self.assertEqual(1, verdict.node)
        # The guest's 2 vCPUs at the expected 0.25 each, on 8 CPUs.
        self.assertAlmostEqual(0.8 - (0.1 + 2 * 0.25 / 8),
                               scoring.load_weight_of(verdict))
        self.assertEqual(scoring.load_weight_of(verdict),
                         scoring.load_weight(request(POLICY), busy_first,
                                             SETTINGS))


class FloatingCapacityTest(test_base.TestCase):
    """A node's capacity is what a guest without dedicated CPUs may use."""

    def test_the_summary_counts_the_floating_cpus_at_their_load(self):
        summary = host(nodes=(SHARED_BUSY, DEDICATED_IDLE))
        self.assertEqual([(4, 0.9), (0, 0.0)],
                         [(n.floating_cpus, n.floating_load)
                          for n in summary.nodes])
        self.assertEqual(4, summary.largest_node_floating_cpus)
        self.assertEqual((4, 0.9), (summary.whole.floating_cpus,
                                    summary.whole.floating_load))

    def test_a_report_before_1_6_counts_every_cpu_at_the_node_s_load(self):
        summary = host(nodes=(SHARED_BUSY, DEDICATED_IDLE), version='1.5')
        self.assertEqual([(8, 0.45), (8, 0.0)],
                         [(n.floating_cpus, n.floating_load)
                          for n in summary.nodes])
        self.assertEqual(8, summary.largest_node_floating_cpus)

    def test_the_numbers_are_the_floating_ones(self):
        verdict = scoring.load_check(
            request(POLICY), host(nodes=(SHARED_BUSY, FULL)), SETTINGS)
        # 0.8 - (0.9 + 2 vCPUs * 0.25 / 4 CPUs)
        self.assertEqual({'load': 0.9, 'cpus': 4, 'headroom': -0.225},
                         {k: verdict.numbers[k]
                          for k in ('load', 'cpus', 'headroom')})

    def test_a_node_without_floating_cpus_has_no_headroom_to_show(self):
        # Minus infinity is not JSON: the REST explain shows these. The
        # node with floating CPUs lacks the memory.
        verdict = scoring.load_check(
            request(POLICY), host(nodes=(FULL, DEDICATED_IDLE)), SETTINGS)
        self.assertFalse(verdict.passed)
        self.assertEqual(('over', 1), (verdict.why, verdict.node))
        self.assertEqual({'load': 0.0, 'cpus': 0, 'headroom': None},
                         {k: verdict.numbers[k]
                          for k in ('load', 'cpus', 'headroom')})
        self.assertEqual(scoring.WEIGHT_FLOOR,
                         scoring.load_weight_of(verdict))


class KeepTest(test_base.TestCase):
    """Load is a preference: it never leaves a request without a host."""

    def test_hosts_that_pass_everything_are_kept(self):
        self.assertEqual(([True, False, False], False), scoring.keep(
            [(True, True), (True, False), (False, True)]))

    def test_load_is_set_aside_when_no_host_is_quiet(self):
        self.assertEqual(([True, False, True], True), scoring.keep(
            [(True, False), (False, False), (True, False)]))

    def test_nothing_is_kept_when_the_other_checks_refuse_every_host(self):
        self.assertEqual(([False, False], False), scoring.keep(
            [(False, True), (False, False)]))

    def test_a_set_aside_verdict_passes_and_keeps_its_numbers(self):
        verdict = scoring.load_check(request(POLICY),
                                     host(nodes=(BUSY, BUSY)), SETTINGS)
        aside = scoring.set_aside(verdict)
        self.assertEqual((False, 'over'), (verdict.passed, verdict.why))
        self.assertEqual((True, 'no-quiet-host'), (aside.passed, aside.why))
        self.assertIn('nova', aside.reason)
        self.assertEqual(verdict.numbers, aside.numbers)
