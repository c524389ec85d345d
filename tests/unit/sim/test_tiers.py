"""A lower memory tier in the simulator: its figures and the modes' costs.

Every number here is simulated (doc/source/simulator.rst, "A lower
memory tier"): the model with the CXL figures cited in
lab/numa_policy_lab/sim/constants.py, none measured.
"""

import io

import numpy as np

from numa_policy_lab import cli
from numa_policy_lab.sim import backend as sim_backend
from numa_policy_lab.sim import constants as c
from numa_policy_lab.sim import model
from numa_policy_lab.sim import tiers
from numa_policy_lab.sim import topology
from numa_policy_lab.sim import workload as wl
from tests import base as test_base


def _alone(host, profile, cpu, lower, memory_mb=8192):
    """One guest on ``cpu``, ``lower`` MB of each segment on the tier.

    The rest of its memory is on its own node.
    """
    guest = tiers.Guest('g', 'x', profile, memory_mb, cpu)
    top = np.zeros(host.n_nodes)
    top[host.node_of_cpu(cpu)] = guest.sizes.sum() - np.sum(lower)
    tiers.boot(host, guest,
               tiers.segments(host, guest.sizes, top, np.asarray(lower)))
    return guest.vm


def _throughput(host, vm):
    return model.evaluate(host, [vm]).vm_throughput[0]


class LowerTierFiguresTest(test_base.TestCase):
    """The expander's latency and bandwidth, as constants.py cites them."""

    def setUp(self):
        super().setUp()
        self.host = topology.xeon2_cxl()

    def test_added_latency_inside_pond_and_tpp(self):
        # Pond (ASPLOS '23): 70-90 ns over same-NUMA-node DRAM for an
        # 8-16 socket pool; TPP (ASPLOS '23): around 50-100 ns.
        self.assertTrue(70 <= c.LOWER_TIER_ADDED_NS <= 90)
        self.assertTrue(50 <= c.LOWER_TIER_ADDED_NS <= 100)

    def test_bandwidth_share_is_sun_et_al_fastest_device(self):
        # Sun et al. (MICRO '23): one DDR5-4800 channel behind CXL at 46 %
        # of its peak on reads, a remote DDR5 channel at 70 %, two
        # channels per sub-NUMA node.
        self.assertAlmostEqual(0.46 / 1.40, c.LOWER_TIER_BANDWIDTH_SHARE,
                               places=2)
        gbps = self.host.memory_gbps()
        self.assertEqual([25.6, 25.6], list(gbps[:2]))
        self.assertAlmostEqual(25.6 * c.LOWER_TIER_BANDWIDTH_SHARE, gbps[2])

    def _probe_latency(self, cpu):
        sizes = tiers.Guest('p', 'x', wl.PROBE, 8192, cpu).sizes
        vm = _alone(self.host, wl.PROBE, cpu, sizes)
        return model.evaluate(self.host, [vm]).vcpu_mem_latency[0]

    def test_uncontended_latency_from_either_socket(self):
        # The expander hangs off socket 0: from there, local DRAM's
        # latency plus the added ns at xeon2's 2.4 GHz; from socket 1,
        # one hop first. One probe thread queues a little at the
        # expander's controller, as at a DRAM one (calibration: 1 %).
        added = c.LOWER_TIER_ADDED_NS * self.host.freq_ghz
        for cpu, base in ((0, c.LATENCY_BY_HOPS[0]),
                          (4, c.LATENCY_BY_HOPS[1])):
            self.assertAlmostEqual(base + added, self._probe_latency(cpu),
                                   delta=0.05 * (base + added))
        lat = self.host.latency_matrix()
        self.assertEqual((2, 3), lat.shape)
        self.assertEqual(c.LATENCY_BY_HOPS[0] + added, lat[0, 2])
        self.assertEqual(c.LATENCY_BY_HOPS[1] + added, lat[1, 2])

    def test_slower_than_a_hop_faster_than_three_times_local(self):
        # Pond and TPP: about a NUMA hop; Sun et al.: their fastest device
        # about 35 % above remote DDR5, their slowest about 3x.
        lat = self.host.latency_matrix()
        local, hop = c.LATENCY_BY_HOPS[0], c.LATENCY_BY_HOPS[1]
        self.assertGreater(lat[0, 2], hop)
        self.assertLess(lat[0, 2], 1.35 * hop)
        self.assertLess(lat[0, 2], 3 * local)

    def test_expander_controller_has_its_share_of_bandwidth(self):
        # Streaming guests on socket 0, memory all local or all on the
        # expander: an access loads its controller 1 / share times what
        # it loads a DRAM controller, and the guests queue there.
        prof = tiers.CLASSES[tiers.BATCH][0]
        sizes = tiers.Guest('g', 'x', prof, 8192, 0).sizes

        def solve(on_tier, count=4):
            vms = []
            for cpu in range(count):
                vm = _alone(self.host, prof, cpu,
                            sizes if on_tier else np.zeros(len(sizes)))
                vm.uuid = str(cpu)
                vms.append(vm)
            return model.evaluate(self.host, vms)

        local, tier = solve(False), solve(True)
        per_access_tier = tier.mc_util[2] / tier.vm_accesses[:, 2].sum()
        per_access_dram = local.mc_util[0] / local.vm_accesses[:, 0].sum()
        self.assertAlmostEqual(1.0 / c.LOWER_TIER_BANDWIDTH_SHARE,
                               per_access_tier / per_access_dram)
        self.assertEqual(0.0, tier.mc_util[0])
        alone = solve(True, count=1).vm_throughput[0]
        self.assertLess(tier.vm_throughput.max(), alone)

    def test_a_host_without_a_tier_is_unchanged(self):
        host = topology.xeon2()
        self.assertIsNone(host.lower_tier)
        self.assertEqual(host.n_nodes, host.memory_nodes)
        self.assertIsNone(host.tier_node)
        self.assertEqual((2, 2), host.latency_matrix().shape)

    def test_tier_host_result_has_a_memory_column_more(self):
        prof = tiers.CLASSES[tiers.LATENCY][0]
        sizes = tiers.Guest('g', 'x', prof, 8192, 0).sizes
        vm = _alone(self.host, prof, 0, sizes / 2)
        r = model.evaluate(self.host, [vm])
        self.assertEqual((1, 3), r.vm_accesses.shape)
        self.assertEqual(3, len(r.mc_util))
        self.assertEqual(2, len(r.port_util))

    def test_tier_must_hang_off_a_cpu_node(self):
        self.assertRaises(ValueError, topology.with_lower_tier,
                          topology.xeon2(), 1024, attached_node=2)

    def test_the_backend_refuses_a_tier_host(self):
        self.assertRaises(ValueError, sim_backend.SimulatedBackend,
                          self.host, [])


class TieredPlacementTest(test_base.TestCase):
    """One guest alone: all on top, tiered at each share, all below."""

    def setUp(self):
        super().setUp()
        self.host = topology.xeon2_cxl()

    def _tput(self, klass, cpu, percent=None, all_lower=False):
        prof, memory = tiers.CLASSES[klass]
        sizes = tiers.Guest('g', klass, prof, memory, cpu).sizes
        if all_lower:
            lower = sizes
        else:
            lower = tiers.demoted(sizes, memory * (100 - percent) / 100.0)
        return _throughput(self.host, _alone(self.host, prof, cpu, lower,
                                             memory))

    def test_tiered_between_all_top_and_all_lower(self):
        for klass in tiers.CLASSES:
            for cpu in (0, 4):  # the expander's socket and the other
                top = self._tput(klass, cpu, 100)
                lower = self._tput(klass, cpu, all_lower=True)
                # Below its hot share a floor sends hot pages down.
                for percent in (5, 15, 25, 35):
                    tiered = self._tput(klass, cpu, percent)
                    self.assertLess(tiered, top, (klass, cpu, percent))
                    self.assertGreater(tiered, lower, (klass, cpu, percent))

    def test_monotone_in_the_top_share(self):
        for klass in tiers.CLASSES:
            tputs = [self._tput(klass, 0, p) for p in range(1, 101)]
            self.assertEqual(sorted(tputs), tputs, klass)
            self.assertLess(tputs[0], tputs[-1])

    def test_cold_pages_below_cost_nothing(self):
        # The model's cold pages take no access: a floor at or above the
        # hot share costs what all on top does.
        prof, memory = tiers.CLASSES[tiers.LATENCY]
        sizes = tiers.Guest('g', tiers.LATENCY, prof, memory, 0).sizes
        hot_percent = int(np.ceil(100 * sizes[:-1].sum() / memory))
        self.assertEqual(self._tput(tiers.LATENCY, 0, 100),
                         self._tput(tiers.LATENCY, 0, hot_percent))

    def test_farther_socket_pays_the_hop_too(self):
        for klass in tiers.CLASSES:
            self.assertLess(self._tput(klass, 4, all_lower=True),
                            self._tput(klass, 0, all_lower=True))


class DemotionTest(test_base.TestCase):

    def test_demoted_takes_cold_pages_first(self):
        sizes = np.array([100.0, 300.0, 600.0])  # two hot segments, cold
        self.assertEqual([0, 0, 400], list(tiers.demoted(sizes, 400)))
        self.assertEqual([25, 75, 600], list(tiers.demoted(sizes, 700)))
        self.assertEqual(list(sizes), list(tiers.demoted(sizes, 5000)))

    def test_kernel_demotion_is_blind_to_the_guests(self):
        host, guests = tiers.build(0)
        lower = tiers.blind_demotion(guests, 24576)
        excess = sum(g.memory_mb for g in guests) - 24576
        self.assertAlmostEqual(excess, sum(x.sum() for x in lower))
        # The same share of every guest's cold pages, whatever its class.
        shares = {round(x[-1] / g.sizes[-1], 9)
                  for g, x in zip(guests, lower)}
        self.assertEqual(1, len(shares))

    def test_no_demotion_when_the_top_tier_holds_everything(self):
        host, guests = tiers.build(0)
        lower = tiers.blind_demotion(guests, 10 ** 6)
        self.assertEqual(0.0, sum(x.sum() for x in lower))


class ScenarioTest(test_base.TestCase):
    """The ``tiers`` scenario, each mode, and its table."""

    def _placed(self, mode, seed=0):
        host, guests = tiers.run(mode, seed)
        return host, guests, [g for g in guests if g.vm is not None]

    def test_scenario_exceeds_the_top_tier(self):
        host, guests = tiers.build(0)
        dram = host.memory_mb_by_node()[:host.n_nodes].sum()
        self.assertGreater(sum(g.memory_mb for g in guests), dram)
        self.assertGreater(sum(g.sizes[:-1].sum() for g in guests), dram)

    def test_deterministic_with_a_seed(self):
        for mode in tiers.MODES:
            first = tiers.run(mode, 4)[1]
            again = tiers.run(mode, 4)[1]
            self.assertEqual([(g.name, g.cpu, g.throughput) for g in first],
                             [(g.name, g.cpu, g.throughput) for g in again])
        self.assertEqual(tiers.rows(range(2)), tiers.rows(range(2)))
        other = tiers.run(tiers.Mode(tiers.TOP), 5)[1]
        self.assertNotEqual([(g.name, g.cpu) for g in first],
                            [(g.name, g.cpu) for g in other])

    def test_top_keeps_every_page_on_the_top_tier(self):
        host, guests, placed = self._placed(tiers.Mode(tiers.TOP))
        self.assertLess(len(placed), len(guests))  # some are refused
        for g in placed:
            self.assertEqual(0.0, g.vm.seg_mb[:, host.tier_node].sum())
            self.assertAlmostEqual(g.memory_mb, g.vm.seg_mb.sum())
        for g in guests:
            if g.vm is None:
                self.assertEqual(0.0, g.throughput)

    def test_tiered_keeps_its_floor_on_the_top_tier(self):
        for percent in (25, 50, 75):
            host, guests, placed = self._placed(
                tiers.Mode(tiers.TIERED, percent))
            for g in placed:
                top = g.vm.seg_mb[:, :host.n_nodes].sum()
                self.assertGreaterEqual(top + 1e-6,
                                        g.memory_mb * percent / 100.0)
                self.assertAlmostEqual(g.memory_mb, g.vm.seg_mb.sum())

    def test_any_places_everyone_and_fills_the_top_tier(self):
        host, guests, placed = self._placed(tiers.Mode(tiers.ANY))
        self.assertEqual(len(guests), len(placed))
        used = sum(g.vm.seg_mb.sum(axis=0) for g in placed)
        capacity = host.memory_mb_by_node()
        np.testing.assert_allclose(capacity[:host.n_nodes],
                                   used[:host.n_nodes])
        self.assertLessEqual(used[host.tier_node], capacity[host.tier_node])

    def test_rows(self):
        rows = {r.mode: r for r in tiers.rows(range(3))}
        self.assertEqual(0.0, rows['top'].dram_saved)
        self.assertLess(rows['tiered 75 %'].dram_saved,
                        rows['tiered 50 %'].dram_saved)
        self.assertLess(rows['tiered 50 %'].dram_saved,
                        rows['tiered 25 %'].dram_saved)
        served = {m: sum(r.served.values()) for m, r in rows.items()}
        self.assertLess(served['top'], served['any'])
        self.assertGreater(rows['any'].host_tput, rows['top'].host_tput)
        table = tiers.rst_table(list(rows.values()))
        body = table.splitlines()[3:-1]
        self.assertEqual(len(rows), len(body))
        self.assertTrue(all(line.startswith('simulated') for line in body))

    def test_cli_prints_the_table(self):
        out = io.StringIO()
        self.assertEqual(0, cli.main(['simulate', 'tiers', '--seeds', '2'],
                                     out))
        self.assertIn('tiered 25 %', out.getvalue())
        self.assertIn('simulated', out.getvalue())
