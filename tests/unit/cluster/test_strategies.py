import numpy as np

from numa_policy_lab.cluster import evidence
from numa_policy_lab.cluster import guests
from numa_policy_lab.cluster import hosts
from numa_policy_lab.cluster import nova
from numa_policy_lab.cluster import scenarios
from numa_policy_lab.cluster import simulation
from numa_policy_lab.cluster import strategies
from numa_policy_lab.sim import topology
from tests import base as test_base


def _guest(app, k=0):
    return guests.Guest(uuid=guests.guest_uuid('test', k),
                        name=f'{app.name}-{k}', app=app, arrive=0)


def _cluster(n=2, sim=topology.ivybridge4):
    return simulation.Cluster([hosts.ClusterHost(sim(), f'h{i}')
                               for i in range(n)])


def _place(cluster, strategy, guest):
    decision = strategy.place(guest, cluster)
    if decision is not None:
        host = cluster.hosts[decision.host]
        host.add(guests.boot(host.host, guest, decision.boot,
                             host.host.nics[0].name,
                             decision.requested), decision.cells)
    return decision


class NovaTest(test_base.TestCase):

    def test_equal_raw_weights_normalise_to_zero(self):
        self.assertEqual([0.0, 0.0], nova.normalize([3, 3]))

    def test_ties_go_to_the_first_host(self):
        self.assertEqual(0, nova.best(['a', 'b'], [[1, 1]]))
        self.assertEqual(1, nova.best(['a', 'b'], [[1, 2]]))

    def test_vswitch_cells_must_include_the_nic_node(self):
        cluster = _cluster(1)
        vswitch = strategies.NovaVswitch()
        for k in range(8):
            self.assertIsNotNone(_place(cluster, vswitch,
                                        _guest(scenarios.NETPERF, k)))
        # Node 0 is full: no valid host, although 24 CPUs are idle.
        self.assertIsNone(_place(cluster, vswitch,
                                 _guest(scenarios.NETPERF, 8)))


class OursTest(test_base.TestCase):

    def test_report_round_trip_shows_the_guest(self):
        cluster = _cluster(1)
        _place(cluster, strategies.NovaDefault(), _guest(scenarios.YCSB))
        summary = hosts.summary(cluster.hosts[0])
        self.assertLess(summary.whole.free_mb, summary.whole.total_mb)
        self.assertEqual(1, summary.whole.io_neighbours)

    def test_nic_locality_boots_on_the_nic_node(self):
        cluster = _cluster(1)
        decision = _place(cluster, strategies.Ours(),
                          _guest(scenarios.NETPERF))
        self.assertEqual('first-touch', decision.requested)
        node_cpus = set(topology.ivybridge4().node_cpus(0))
        self.assertLessEqual(set(decision.boot.cpus), node_cpus)

    def test_load_weigher_prefers_the_emptier_host(self):
        cluster = _cluster(2, topology.amd48)
        _place(cluster, strategies.NovaDefault(), _guest(scenarios.HIGH))
        cluster.next_period(0.0)
        decision = strategies.Ours().place(_guest(scenarios.HIGH, 1),
                                           cluster)
        self.assertEqual(1, decision.host)

    def test_kernel_fills_idle_cpus_first(self):
        cluster = _cluster(1, topology.xeon2)
        cpus = strategies.kernel_cpus(cluster.hosts[0], 8,
                                      np.random.default_rng(0))
        self.assertEqual(list(range(8)), sorted(cpus))

    def test_vcpus_of_a_guest_over_several_nodes_are_dealt(self):
        cluster = _cluster(1, topology.amd48)
        decision = _place(cluster, strategies.Ours(),
                          _guest(scenarios.HIGH))
        sim = cluster.hosts[0].host
        nodes = [sim.node_of_cpu(c) for c in decision.boot.cpus]
        # 12 vCPUs over 8 nodes of 6 CPUs: every node once, then four.
        self.assertEqual(list(range(8)) + [0, 1, 2, 3], nodes)
        self.assertEqual([frozenset(sim.node_cpus(n)) for n in nodes],
                         list(decision.boot.affinity))

    def test_two_large_guests_of_a_host_share_no_node(self):
        cluster = _cluster(1, topology.amd48)
        ours = strategies.Ours()
        placed = [_place(cluster, ours, _guest(app, k))
                  for k, app in enumerate((scenarios.LOW24,
                                           scenarios.HIGH24))]
        sim = cluster.hosts[0].host
        halves = [{sim.node_of_cpu(c) for c in d.boot.cpus} for d in placed]
        self.assertEqual([4, 4], [len(h) for h in halves])
        self.assertEqual(set(), halves[0] & halves[1])
        # first-touch within its half, interleave over the other.
        self.assertEqual(frozenset(halves[1]), placed[1].boot.nodes)
        self.assertEqual(frozenset(halves[0]), placed[0].boot.nodes)


class CheckTest(test_base.TestCase):

    def _cell(self, strategy, means, best_static=1.0, scenario='netperf'):
        return evidence.Cell(scenario, strategy, (0, 1), tuple(means),
                             best_static, 0, 0, 0)

    def test_all_targets_met(self):
        cells = [self._cell('ours', [0.97, 0.97])] + [
            self._cell(s, [0.5, 0.5]) for s in evidence.STRATEGIES
            if s != 'ours']
        self.assertEqual((True, []), evidence.check(cells))

    def test_a_tie_with_a_baseline_is_a_miss(self):
        cells = [self._cell('ours', [0.97, 0.97]),
                 self._cell('nova-vswitch', [0.97, 0.97])]
        met, misses = evidence.check(cells)
        self.assertFalse(met)
        self.assertIn('does not beat nova-vswitch', misses[0])

    def test_far_from_the_best_static_and_noisy_are_misses(self):
        met, misses = evidence.check([self._cell('ours', [0.5, 0.9])])
        self.assertFalse(met)
        self.assertEqual(2, len(misses))

    def test_hostile_scenario_need_not_beat_baselines(self):
        cells = [self._cell('ours', [0.5, 0.5], None, 'hostile-bursty'),
                 self._cell('random', [0.9, 0.9], None, 'hostile-bursty')]
        self.assertEqual((True, []), evidence.check(cells))
