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


def _cold_first(sizes, mb):
    """The tiered split before the write signal: cold pages, then hot.

    A copy of what ``tiers.demoted`` computed before it took
    ``unwritten``: the published tiered rows came from it.
    """
    cold, hot = sizes[-1], sizes[:-1].sum()
    mb = min(float(mb), cold + hot)
    return tiers.lower_tier_split(
        sizes, min(1.0, mb / cold) if cold else 0.0,
        max(0.0, mb - cold) / hot if hot else 0.0)


class DemotionTest(test_base.TestCase):

    def test_demoted_takes_cold_pages_first(self):
        sizes = np.array([100.0, 300.0, 600.0])  # two hot segments, cold
        self.assertEqual([0, 0, 400], list(tiers.demoted(sizes, 400)))
        self.assertEqual([25, 75, 600], list(tiers.demoted(sizes, 700)))
        self.assertEqual(list(sizes), list(tiers.demoted(sizes, 5000)))

    def test_no_unwritten_page_is_exactly_the_tiered_split(self):
        # Bit for bit, so that the published tiered rows do not move.
        for klass, (prof, memory) in tiers.CLASSES.items():
            sizes = tiers.Guest('g', klass, prof, memory, 0).sizes
            for mb in list(np.linspace(0, memory + 512, 97)) + [
                    sizes[-1], memory * 0.5, memory * 0.25]:
                self.assertEqual(list(_cold_first(sizes, mb)),
                                 list(tiers.demoted(sizes, mb, 0.0)),
                                 (klass, mb))

    def test_looks_cold(self):
        sizes = np.array([100.0, 300.0, 600.0])
        self.assertEqual([0, 0, 600], list(tiers.looks_cold(sizes, 0.0)))
        self.assertEqual([25, 75, 600], list(tiers.looks_cold(sizes, 0.25)))
        self.assertEqual([100, 300, 600], list(tiers.looks_cold(sizes, 1.0)))

    def test_unwritten_hot_pages_go_down_with_the_cold_ones(self):
        sizes = np.array([100.0, 300.0, 600.0])
        # A quarter of the hot pages looks cold: 700 MB, taken alike.
        self.assertEqual([12.5, 37.5, 300],
                         list(tiers.demoted(sizes, 350, 0.25)))
        self.assertEqual([25, 75, 600], list(tiers.demoted(sizes, 700, 0.25)))
        # Then the written hot pages, in proportion.
        self.assertEqual([50, 150, 600], list(tiers.demoted(sizes, 800, 0.25)))
        self.assertEqual([25, 75, 300], list(tiers.demoted(sizes, 400, 0.5)))
        self.assertEqual(list(sizes), list(tiers.demoted(sizes, 5000, 0.5)))

    def test_unwritten_share_goes_before_any_written_hot_page(self):
        for klass, (prof, memory) in tiers.CLASSES.items():
            sizes = tiers.Guest('g', klass, prof, memory, 0).sizes
            hot = sizes[:-1]
            for unwritten in (0.25, 0.5):
                pool = sizes[-1] + unwritten * hot.sum()
                for mb in np.linspace(1, pool, 20):
                    lower = tiers.demoted(sizes, mb, unwritten)
                    self.assertAlmostEqual(mb, lower.sum())
                    # Hot pages go down while cold pages are still up ...
                    self.assertGreater(lower[:-1].sum(), 0.0)
                    if mb < pool - 1e-6:
                        self.assertLess(lower[-1], sizes[-1])
                    # ... the same share of every segment's cold-looking
                    # pages, none of its written ones.
                    np.testing.assert_allclose(
                        lower, tiers.looks_cold(sizes, unwritten) * mb / pool)
                    self.assertTrue(np.all(lower[:-1]
                                           <= unwritten * hot + 1e-9))
                beyond = tiers.demoted(sizes, pool + 512, unwritten)
                np.testing.assert_allclose(
                    unwritten * hot + (1 - unwritten) * hot * 512
                    / ((1 - unwritten) * hot.sum()), beyond[:-1])
                self.assertEqual(sizes[-1], beyond[-1])

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

    def test_first_touch_fills_the_top_tier_in_arrival_order(self):
        host, guests = tiers.build(0)
        lower = tiers.first_touch(guests, 20000)  # 2 guests and 3616 MB
        self.assertEqual([0.0, 0.0], [x.sum() for x in lower[:2]])
        third = guests[2].sizes * (8192 - 3616) / 8192
        np.testing.assert_allclose(third, lower[2])
        for g, x in zip(guests[3:], lower[3:]):
            self.assertEqual(list(g.sizes), list(x))

    def test_first_touch_puts_hot_and_cold_pages_alike(self):
        # Unlike reclaim (blind_demotion), it sends hot pages down while
        # cold pages of the same guest stay on the top tier.
        host, guests = tiers.build(1)
        for g, x in zip(guests, tiers.first_touch(guests, 20000)):
            shares = {round(x[i] / s, 9) for i, s in enumerate(g.sizes) if s}
            self.assertEqual(1, len(shares), g.name)


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

    def test_stock_places_pages_first_touch_in_arrival_order(self):
        for seed in range(3):
            host, guests, placed = self._placed(tiers.Mode(tiers.STOCK),
                                                seed)
            self.assertEqual(len(guests), len(placed))  # both tiers count
            room = host.memory_mb_by_node()[:host.n_nodes].sum()
            for g in guests:
                on_top = min(g.memory_mb, room)
                room -= on_top
                seg = g.vm.seg_mb
                self.assertAlmostEqual(g.memory_mb, seg.sum())
                self.assertAlmostEqual(on_top, seg[:, :host.n_nodes].sum())
                # The lower part: the same share of every segment.
                np.testing.assert_allclose(
                    g.sizes * (1 - on_top / g.memory_mb),
                    seg[:, host.tier_node], atol=1e-6)
            # The first guest's pages all on its own node.
            first = guests[0]
            home = host.node_of_cpu(first.cpu)
            self.assertAlmostEqual(first.memory_mb,
                                   first.vm.seg_mb[:, home].sum())

    def test_stock_sends_hot_pages_down_where_any_keeps_them(self):
        host, _, stock = self._placed(tiers.Mode(tiers.STOCK))
        _, _, kernel = self._placed(tiers.Mode(tiers.ANY))

        def hot_down(placed):
            return sum(g.vm.seg_mb[:-1, host.tier_node].sum()
                       for g in placed)

        lower = sum(g.vm.seg_mb[:, host.tier_node].sum() for g in stock)
        self.assertAlmostEqual(
            lower, sum(g.vm.seg_mb[:, host.tier_node].sum() for g in kernel))
        self.assertGreater(hot_down(stock), 2 * hot_down(kernel))

    def test_write_signal_keeps_the_floor_and_the_guests(self):
        plain = self._placed(tiers.Mode(tiers.TIERED, 50))[2]
        host, _, blurred = self._placed(
            tiers.Mode(tiers.TIERED, 50, unwritten=0.25))
        self.assertEqual([g.name for g in plain], [g.name for g in blurred])
        for a, b in zip(plain, blurred):
            self.assertAlmostEqual(a.vm.seg_mb[:, host.tier_node].sum(),
                                   b.vm.seg_mb[:, host.tier_node].sum())
            self.assertEqual(0.0, a.vm.seg_mb[:-1, host.tier_node].sum())
            self.assertGreater(b.vm.seg_mb[:-1, host.tier_node].sum(), 0.0)
            self.assertLess(b.throughput, a.throughput)

    def test_any_places_everyone_and_fills_the_top_tier(self):
        host, guests, placed = self._placed(tiers.Mode(tiers.ANY))
        self.assertEqual(len(guests), len(placed))
        used = sum(g.vm.seg_mb.sum(axis=0) for g in placed)
        capacity = host.memory_mb_by_node()
        np.testing.assert_allclose(capacity[:host.n_nodes],
                                   used[:host.n_nodes])
        self.assertLessEqual(used[host.tier_node], capacity[host.tier_node])

    def test_modes_labels_in_order(self):
        self.assertEqual(
            ['nova stock', 'top', 'tiered 75 %', 'tiered 50 %',
             'tiered 25 %', 'any', 'tiered 50 %, 25 % of hot pages unwritten',
             'tiered 50 %, 50 % of hot pages unwritten'],
            [m.label for m in tiers.MODES])
        self.assertEqual(tiers.Mode(tiers.TIERED, 50),
                         tiers.Mode(tiers.TIERED, 50, unwritten=0.0))

    def test_only_a_tiered_mode_has_a_write_signal(self):
        self.assertRaises(ValueError, tiers.Mode, tiers.ANY, unwritten=0.5)
        self.assertRaises(ValueError, tiers.Mode, tiers.TIERED, 50,
                          unwritten=1.5)
        self.assertRaises(ValueError, tiers.Mode, tiers.TIERED, 50,
                          unwritten=-0.1)

    def test_rows(self):
        rows = {r.mode: r for r in tiers.rows(range(3))}
        self.assertEqual([m.label for m in tiers.MODES], list(rows))
        self.assertEqual(0.0, rows['top'].dram_saved)
        self.assertLess(rows['tiered 75 %'].dram_saved,
                        rows['tiered 50 %'].dram_saved)
        self.assertLess(rows['tiered 50 %'].dram_saved,
                        rows['tiered 25 %'].dram_saved)
        served = {m: sum(r.served.values()) for m, r in rows.items()}
        self.assertLess(served['top'], served['any'])
        self.assertGreater(rows['any'].host_tput, rows['top'].host_tput)
        # Stock serves and saves what any does, blind to hot pages.
        stock, kernel = rows['nova stock'], rows['any']
        self.assertEqual(served['any'], served['nova stock'])
        self.assertAlmostEqual(kernel.dram_saved, stock.dram_saved)
        self.assertLess(stock.host_tput, kernel.host_tput)
        for k in tiers.CLASSES:
            self.assertGreater(stock.slowdown[k], kernel.slowdown[k])
        # The write signal: same guests and floor, slower as more of the
        # hot pages look cold.
        plain = rows['tiered 50 %']
        blurred = [rows[f'tiered 50 %, {u} % of hot pages unwritten']
                   for u in (25, 50)]
        for r in blurred:
            self.assertEqual(plain.served, r.served)
            self.assertAlmostEqual(plain.dram_saved, r.dram_saved)
        for k in tiers.CLASSES:
            self.assertLess(plain.slowdown[k], blurred[0].slowdown[k])
            self.assertLess(blurred[0].slowdown[k], blurred[1].slowdown[k])
        table = tiers.rst_table(list(rows.values()))
        body = table.splitlines()[3:-1]
        self.assertEqual(len(rows), len(body))
        self.assertTrue(all(line.startswith('simulated') for line in body))

    def test_cli_prints_the_table(self):
        out = io.StringIO()
        self.assertEqual(0, cli.main(['simulate', 'tiers', '--seeds', '2'],
                                     out))
        self.assertIn('tiered 25 %', out.getvalue())
        self.assertIn('nova stock', out.getvalue())
        self.assertIn('tiered 50 %, 50 % of hot pages unwritten',
                      out.getvalue())
        self.assertIn('simulated', out.getvalue())
