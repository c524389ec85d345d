"""A period's report from its snapshot: what it says of each node."""

import datetime

from nova_numa_policy.contracts import backend
from nova_numa_policy.decisions import reporting
from nova_numa_policy.loops import runner as loop_runner
from nova_numa_policy.loops import vnuioa
from nova_numa_policy.objects import wire as report_wire
from tests import base as test_base
from tests import topology_factory
from tests.unit.agent import test_tiering

GUEST = '6f1f1a0e-0000-4000-8000-000000000001'
NOW = datetime.datetime(2026, 11, 22, 8, 0, tzinfo=datetime.timezone.utc)
TOPOLOGY = topology_factory.host_topology(memory_mb=16384)


def _report(*usage, tiers=backend.MemoryTiers()):
    snapshot = backend.HostSnapshot(topology=TOPOLOGY, usage=usage,
                                    instances=(), taken_at=0.0,
                                    memory_tiers=tiers)
    report = reporting.build_report(snapshot, 'compute1', 'compute1', seq=1,
                                    period=60.0, capabilities=(), now=NOW)
    # What a consumer reads back.
    return report_wire.load_report_data(report_wire.dump_report(report))


def _floating(data):
    return [(n['floating_cpus'], n['floating_load'])
            for n in data['numa_nodes']]


class FloatingNodeTest(test_base.TestCase):

    def test_each_node_names_its_floating_cpus_and_their_load(self):
        data = _report(
            backend.NodeUsage(0, 0.45, 8192, frozenset({0, 1}), 0.9),
            backend.NodeUsage(1, 0.0, 8192, frozenset(), None))
        self.assertEqual([([0, 1], 0.9), ([], None)], _floating(data))
        self.assertEqual([0.45, 0.0],
                         [n['cpu_load'] for n in data['numa_nodes']])

    def test_a_backend_that_does_not_tell_them_apart_floats_every_cpu(self):
        # The simulator's: every CPU at the node's load.
        data = _report(backend.NodeUsage(0, 0.3, 8192),
                       backend.NodeUsage(1, 0.6, 8192))
        self.assertEqual([([0, 1, 2, 3], 0.3), ([4, 5, 6, 7], 0.6)],
                         _floating(data))

    def test_a_node_without_usage_floats_every_cpu_idle(self):
        self.assertEqual([([0, 1, 2, 3], 0.0), ([4, 5, 6, 7], 0.0)],
                         _floating(_report()))

    def test_a_node_without_cpus_has_no_floating_load(self):
        # A memory-only node (a CXL expander), from a backend that does
        # not tell floating CPUs apart: no load, or the report is
        # malformed and dropped.
        snapshot = test_tiering.snapshot([])
        report = reporting.build_report(snapshot, 'compute1', 'compute1',
                                        seq=1, period=60.0, capabilities=(),
                                        now=NOW)
        data = report_wire.load_report_data(report_wire.dump_report(report))
        self.assertEqual(([], None), _floating(data)[2])

    def test_floating_cpus_the_node_lacks_are_not_reported(self):
        data = _report(
            backend.NodeUsage(0, 0.5, 8192, frozenset({3, 4}), 0.5),
            backend.NodeUsage(1, 0.5, 8192, frozenset({3, 4}), 0.5))
        self.assertEqual([([3], 0.5), ([4], 0.5)], _floating(data))


class MemoryTierTest(test_base.TestCase):

    def _tiers(self, data):
        return ([n['memory_tier'] for n in data['numa_nodes']],
                data['memory_demotion'])

    def test_each_node_says_its_tiers_rank_and_the_host_its_demotion(self):
        data = _report(tiers=backend.MemoryTiers({0: 0, 1: 1}, True))
        self.assertEqual(([0, 1], True), self._tiers(data))
        data = _report(tiers=backend.MemoryTiers({0: 0, 1: 0}, False))
        self.assertEqual(([0, 0], False), self._tiers(data))

    def test_a_host_that_does_not_say_leaves_every_node_unsaid(self):
        self.assertEqual(([None, None], None), self._tiers(_report()))
        # Demotion is said without tiers, and tiers without it.
        data = _report(tiers=backend.MemoryTiers(None, False))
        self.assertEqual(([None, None], False), self._tiers(data))
        data = _report(tiers=backend.MemoryTiers({0: 0, 1: 1}, None))
        self.assertEqual(([0, 1], None), self._tiers(data))

    def test_a_node_in_no_tier_is_unsaid(self):
        # A node without memory is in no tier; node 7 is not the host's.
        data = _report(tiers=backend.MemoryTiers({1: 1, 7: 0}, True))
        self.assertEqual(([None, 1], True), self._tiers(data))

    def test_a_rank_beyond_the_reports_bound_is_unsaid(self):
        tiers = backend.MemoryTiers({0: 0, 1: 5000}, None)
        self.assertEqual(0, reporting.memory_tier(0, tiers))
        self.assertIsNone(reporting.memory_tier(1, tiers))
        self.assertEqual([0, None], self._tiers(_report(tiers=tiers))[0])


class SignificantChangeTest(test_base.TestCase):

    def _summary(self, cpu_load, floating_load):
        snapshot = backend.HostSnapshot(
            topology=TOPOLOGY, instances=(), taken_at=0.0, usage=(
                backend.NodeUsage(0, cpu_load, 8192, frozenset({0, 1}),
                                  floating_load),
                backend.NodeUsage(1, 0.0, 8192, frozenset(), None)))
        return reporting.summary(reporting.build_report(
            snapshot, 'compute1', 'compute1', seq=1, period=60.0,
            capabilities=(), now=NOW))

    def test_the_floating_load_moving_is_reported_at_once(self):
        # Half the node's CPUs: their load moves twice as far.
        before = self._summary(0.2, 0.4)
        self.assertTrue(reporting.significant_change(
            before, self._summary(0.35, 0.7)))

    def test_small_moves_wait_for_the_period(self):
        before = self._summary(0.2, 0.4)
        self.assertFalse(reporting.significant_change(
            before, self._summary(0.25, 0.5)))


class JudgedFieldsTest(test_base.TestCase):
    """What a guest's report takes from the loops, asked of the loops."""

    def report(self, judges, **instance):
        inst = backend.InstanceState(uuid=GUEST, requested_policy=None,
                                     vcpu_cpus=(0, 4), **instance)
        snapshot = backend.HostSnapshot(TOPOLOGY, (), (inst,), 0.0)
        (reported,) = reporting.build_report(
            snapshot, 'h', 'h', 1, 5.0, frozenset(), now=NOW,
            judges=judges).instances
        return reported

    def test_without_judges_nothing_is_judged(self):
        reported = self.report((), io_rate=9000.0,
                               accesses_per_node={0: 900, 1: 100})
        self.assertIsNone(reported.access_class)
        self.assertFalse(reported.io_intensive)

    def test_each_loop_judges_with_the_config_it_is_handed(self):
        strict = (vnuioa.Vnuioa, vnuioa.Config(io_threshold_rps=100.0))
        loose = (vnuioa.Vnuioa, vnuioa.Config(io_threshold_rps=1000.0))
        self.assertTrue(self.report([strict], io_rate=500.0).io_intensive)
        self.assertFalse(self.report([loose], io_rate=500.0).io_intensive)

    def test_every_installed_loop_judges_by_default_settings(self):
        # 900 against 100 accesses over two nodes: an imbalance of 80 %,
        # below auto's 85 %; 600 requests/s is above vNUIOA's 500.
        reported = self.report(loop_runner.judges(), io_rate=600.0,
                               accesses_per_node={0: 900, 1: 100})
        self.assertEqual('low', reported.access_class)
        self.assertTrue(reported.io_intensive)
        names = [strategy.name for strategy, _ in loop_runner.judges()]
        self.assertEqual(sorted(names), names)
        self.assertIn('auto', names)


class NicIrqTest(test_base.TestCase):
    """Each NIC's vectors, where they are delivered and the loop's verdict."""

    def report(self, active_loops=('iopath',), judges=None):
        topology = topology_factory.host_topology(
            memory_mb=16384,
            nics=(backend.NicInfo('eth0', 0), backend.NicInfo('eth1', 1)))
        guest = backend.InstanceState(
            uuid=GUEST, requested_policy=None, vcpu_cpus=(0, 1),
            io_rate=900.0, nics=frozenset({'eth0'}))
        irqs = (backend.IrqState(41, 'eth0', frozenset({0, 1, 2, 3}),
                                 effective=frozenset({2})),
                backend.IrqState(40, 'eth0', frozenset({1})))
        snapshot = backend.HostSnapshot(topology, (), (guest,), 0.0,
                                        irqs=irqs)
        report = reporting.build_report(
            snapshot, 'h', 'h', 1, 5.0, frozenset(), now=NOW,
            active_loops=active_loops,
            judges=loop_runner.judges() if judges is None else judges)
        return report_wire.load_report_data(report_wire.dump_report(report))

    def test_vectors_and_where_they_are_delivered(self):
        eth0, eth1 = self.report()['nics']
        # Vector 41's effective CPU, vector 40's affinity.
        self.assertEqual(([40, 41], [1, 2]), (eth0['irqs'], eth0['irq_cpus']))
        self.assertEqual(([], []), (eth1['irqs'], eth1['irq_cpus']))

    def test_the_iopath_loop_says_why_while_it_acts(self):
        eth0, eth1 = self.report()['nics']
        self.assertEqual('steered to node 0 (CPUs 0,1) for 1 I/O-intensive '
                         'guest(s) there', eth0['irq_steering'])
        self.assertEqual('left alone: no interrupt vector seen',
                         eth1['irq_steering'])

    def test_no_verdict_while_the_loop_does_not_act(self):
        for active in ((), ('vnuioa',)):
            nics = self.report(active_loops=active)['nics']
            self.assertEqual([None, None],
                             [n['irq_steering'] for n in nics], active)

    def test_irq_cpus_prefer_the_effective_affinity(self):
        irqs = [backend.IrqState(1, 'eth0', frozenset({0, 1}),
                                 effective=frozenset({1})),
                backend.IrqState(2, 'eth0', frozenset({5}))]
        self.assertEqual([1, 5], reporting.irq_cpus(irqs))
        self.assertEqual([], reporting.irq_cpus([]))


class DemotableNodeTest(test_base.TestCase):
    """The tiering loop's demotable MB, in the report while it acts."""

    def report(self, active_loops, free=(4096, 6144, 8192)):
        snapshot = test_tiering.snapshot(
            [test_tiering.guest({0: 2048}, {0: 0}, uuid=GUEST)], free=free)
        report = reporting.build_report(
            snapshot, 'compute1', 'compute1', seq=1, period=60.0,
            capabilities=(backend.CAP_LIVE_NODESET,), now=NOW,
            active_loops=active_loops, judges=loop_runner.judges())
        data = report_wire.load_report_data(report_wire.dump_report(report))
        return [n['demotable_mb'] for n in data['numa_nodes']]

    def test_said_of_top_tier_nodes_while_the_loop_acts(self):
        # The guest's 1024 MB above its floor on node 0; node 2 is below.
        self.assertEqual([1024, 0, None], self.report({'tiering'}))

    def test_not_said_while_the_loop_does_not_act(self):
        self.assertEqual([None, None, None], self.report(set()))

    def test_never_more_than_the_node_has_in_use(self):
        # Node 0 of 8192 MB with 7680 free: 512 MB in use.
        self.assertEqual([512, 0, None],
                         self.report({'tiering'}, free=(7680, 6144, 8192)))
