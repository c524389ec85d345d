"""The simulated host's locality signals and the kernel's own balancing."""

import numpy as np

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality
from numa_policy_lab.sim import backend as sim_backend
from numa_policy_lab.sim import signals
from numa_policy_lab.sim import state as st
from numa_policy_lab.sim import topology
from numa_policy_lab.sim import workload as wl
from tests import base as test_base
from tests.unit.sim import fixtures

HINTING = locality.SIGNAL_HINTING_FAULTS


def _segments(profile, vcpus, memory_mb, placed):
    """A placement: ``placed`` {segment: node} on a two-node host."""
    sizes = st.segment_sizes(wl.PROFILES[profile], vcpus, memory_mb)
    seg = np.zeros((len(sizes), 2))
    for index, size in enumerate(sizes):
        seg[index, placed.get(index, 0)] = size
    return seg


class ScanTest(test_base.TestCase):

    def test_coverage_is_the_share_of_memory_unmapped_per_period(self):
        # 256 MB per 1 s scan period over a 5 s period: 1280 MB.
        self.assertAlmostEqual(0.3125, signals.coverage(4096, 5.0, 1.0))
        self.assertAlmostEqual(1280 / 4096 / 60,
                               signals.coverage(4096, 5.0, 60.0))
        self.assertEqual(1.0, signals.coverage(512, 5.0, 1.0))
        self.assertEqual(0.0, signals.coverage(0, 5.0, 1.0))

    def test_the_scanner_slows_on_local_faults_and_hurries_on_remote(self):
        local = np.array([[90, 10], [5, 95]])
        remote = local[:, ::-1]
        self.assertEqual(4.0, signals.next_scan_period(2.0, local, [0, 1]))
        self.assertEqual(1.0, signals.next_scan_period(2.0, remote, [0, 1]))
        self.assertEqual(signals.SCAN_PERIOD_MAX_S, signals.next_scan_period(
            signals.SCAN_PERIOD_MAX_S, local, [0, 1]))
        self.assertEqual(signals.SCAN_PERIOD_MIN_S, signals.next_scan_period(
            signals.SCAN_PERIOD_MIN_S, remote, [0, 1]))
        # Nothing faulted: nothing to hurry for.
        self.assertEqual(4.0, signals.next_scan_period(
            2.0, np.zeros((2, 2)), [0, 1]))


class HintingFaultsTest(test_base.TestCase):

    def test_samples_count_pages_touched_and_never_cold_memory(self):
        profile = wl.PROFILES['moderate']
        # Shared data on node 1, both private segments and the cold
        # rest on node 0.
        seg = _segments('moderate', 2, 8192, {wl.SEG_SHARED: 1})
        faults = signals.hinting_faults(
            np.random.default_rng(0), profile, seg, 0.5)
        private_pages = profile.working_set_mb * st.PAGES_PER_MB * 0.5
        # The shared data's pages fault once per scan, for either vCPU.
        shared_pages = profile.shared_mb * st.PAGES_PER_MB * 0.5 / 2
        for vcpu in (0, 1):
            self.assertAlmostEqual(private_pages, faults[vcpu, 0],
                                   delta=5 * np.sqrt(private_pages))
            self.assertAlmostEqual(shared_pages, faults[vcpu, 1],
                                   delta=5 * np.sqrt(shared_pages))
        # The cold segment (several GB on node 0) adds nothing.
        self.assertLess(faults[:, 0].sum(), 3 * private_pages)


class KernelMovesTest(test_base.TestCase):

    def test_private_pages_follow_their_vcpu_within_the_cpuset(self):
        profile = wl.PROFILES['private-stream']
        seg = _segments('private-stream', 2, 2048,
                        {wl.FIRST_PRIVATE: 1, wl.FIRST_PRIVATE + 1: 0})
        moves = signals.kernel_moves(profile, seg, [0, 0], {0, 1}, 0.25)
        # vCPU 0's private segment, remote on node 1, moves a scanned
        # quarter to node 0; vCPU 1's is local already.
        self.assertAlmostEqual(0.25 * seg[wl.FIRST_PRIVATE, 1],
                               moves[wl.FIRST_PRIVATE, 1, 0])
        self.assertEqual(0.0, moves[wl.FIRST_PRIVATE + 1].sum())
        # Not onto a node the cgroup's cpuset.mems leaves out.
        self.assertEqual(0.0, signals.kernel_moves(
            profile, seg, [0, 0], {1}, 0.25).sum())

    def test_shared_pages_gather_where_most_vcpus_run(self):
        profile = wl.PROFILES['master-slave']
        seg = _segments('master-slave', 4, 4096, {wl.SEG_SHARED: 0})
        moves = signals.kernel_moves(profile, seg, [0, 1, 1, 1], {0, 1},
                                     0.5)
        self.assertAlmostEqual(0.5 * seg[wl.SEG_SHARED, 0],
                               moves[wl.SEG_SHARED, 0, 1])
        self.assertEqual(0.0, moves[wl.SEG_SHARED, 1, 0])
        # As many vCPUs on each node: they stay where most of them are.
        even = signals.kernel_moves(profile, seg, [0, 0, 1, 1], {0, 1},
                                    0.5)
        self.assertEqual(0.0, even[wl.SEG_SHARED].sum())

    def test_among_equal_nodes_the_one_faulting_most_takes_them(self):
        # The period's draw decides: the pages go to node 0 this period,
        # to node 1 in one where its vCPUs fault more.
        profile = wl.PROFILES['master-slave']
        seg = _segments('master-slave', 4, 4096, {wl.SEG_SHARED: 1})
        moves = signals.kernel_moves(profile, seg, [0, 0, 1, 1], {0, 1},
                                     0.5, faults_by_node=[120.0, 100.0])
        self.assertAlmostEqual(0.5 * seg[wl.SEG_SHARED, 1],
                               moves[wl.SEG_SHARED, 1, 0])
        back = signals.kernel_moves(profile, seg, [0, 0, 1, 1], {0, 1},
                                    0.5, faults_by_node=[100.0, 120.0])
        self.assertEqual(0.0, back[wl.SEG_SHARED].sum())

    def test_the_gathering_node(self):
        allowed = np.array([True, True, False])
        self.assertEqual(1, signals.gathering_node(
            [0, 1, 1], np.zeros(3), allowed))
        self.assertEqual(1, signals.gathering_node(
            [0, 1], np.array([10.0, 20.0, 0.0]), allowed))
        # The node whose vCPUs faulted most, not the one with most vCPUs.
        self.assertEqual(0, signals.gathering_node(
            [0, 1, 1], np.zeros(3), allowed, [50.0, 40.0, 90.0]))
        # Only a node with a vCPU the cpuset allows.
        self.assertIsNone(signals.gathering_node(
            [2, 2], np.zeros(3), allowed))

    def test_a_full_node_takes_only_what_it_has_room_for(self):
        seg = np.array([[100.0, 0.0], [0.0, 0.0]])
        moves = np.zeros((2, 2, 2))
        moves[0, 0, 1] = 80.0
        placed, moved = signals.apply_moves(seg, moves, [0.0, 20.0])
        self.assertEqual(20.0, moved)
        np.testing.assert_allclose([[80.0, 20.0], [0.0, 0.0]], placed)


class HintingFaultHostTest(test_base.TestCase):
    """The simulated backend as a host with the kernel's balancing on."""

    def _host(self, mode=None):
        host = topology.xeon2()
        # Both vCPUs on node 0, every page on node 1.
        vm = fixtures.vm_at(host, 'private-stream', (0, 1), 1,
                            memory_mb=2048)
        numatune = {vm.uuid: (mode, frozenset({0, 1}))} if mode else None
        return sim_backend.SimulatedBackend(host, [vm], signal=HINTING,
                                            numatune=numatune), vm

    def test_nothing_is_sampled_before_the_first_period(self):
        sim, _ = self._host()
        guest = sim.observe().instances[0]
        self.assertIsNone(guest.accesses_per_node)
        self.assertIsNone(guest.access_signal)

    def test_remote_samples_then_the_kernel_pulls_the_pages_over(self):
        sim, vm = self._host()
        sim.advance()
        guest = sim.observe().instances[0]
        self.assertEqual(HINTING, guest.access_signal)
        self.assertEqual(0, guest.accesses_per_node[0])
        self.assertGreater(guest.accesses_per_node[1], 0)
        self.assertTrue(all(p > 0 for p in guest.vcpu_penalty))
        for _ in range(20):
            sim.advance()
        private = vm.seg_mb[wl.FIRST_PRIVATE:wl.FIRST_PRIVATE + 2]
        self.assertGreater(private[:, 0].sum(), 0.9 * private.sum())
        self.assertGreater(vm.kernel_pages_moved, 0)
        # The kernel's moves, not the loops'.
        self.assertEqual(0, vm.pages_moved)
        # The cold rest is never touched, so never moved.
        self.assertEqual(0.0, vm.seg_mb[-1, 0])

    def test_an_explicit_memory_policy_is_neither_sampled_nor_moved(self):
        sim, vm = self._host(mode=backend.MODE_STRICT)
        before = vm.seg_mb.copy()
        for _ in range(3):
            sim.advance()
        self.assertIsNone(sim.observe().instances[0].accesses_per_node)
        np.testing.assert_array_equal(before, vm.seg_mb)

    def test_restrictive_stays_the_kernels_to_balance(self):
        sim, vm = self._host(mode=backend.MODE_RESTRICTIVE)
        sim.advance()
        self.assertIsNotNone(sim.observe().instances[0].accesses_per_node)
        self.assertGreater(vm.kernel_pages_moved, 0)

    def test_counters_keep_the_placement_to_the_loops(self):
        host = topology.xeon2()
        vm = fixtures.vm_at(host, 'private-stream', (0, 1), 1,
                            memory_mb=2048)
        sim = sim_backend.SimulatedBackend(host, [vm])
        before = vm.seg_mb.copy()
        for _ in range(3):
            sim.advance()
        np.testing.assert_array_equal(before, vm.seg_mb)

    def test_an_unknown_signal_is_refused(self):
        self.assertRaises(ValueError, sim_backend.SimulatedBackend,
                          topology.xeon2(), [], signal='psychic')


class BandwidthTest(test_base.TestCase):

    def test_each_domain_counts_its_vcpus_bytes_total_and_local(self):
        rng = np.random.default_rng(0)
        # Two vCPUs on node 0 (one all local, one all remote), one on 1.
        accesses = np.array([[10.0, 0.0], [0.0, 30.0], [5.0, 5.0]])
        domains = signals.bandwidth(rng, accesses, (0, 0, 1), 64, noise=0)
        self.assertEqual({0: (40 * 64, 10 * 64), 1: (10 * 64, 5 * 64)},
                         domains)

    def test_readings_are_noisy_around_the_truth(self):
        rng = np.random.default_rng(1)
        accesses = np.array([[1e6, 1e6]])
        totals = [signals.bandwidth(rng, accesses, (0,), 1)[0][0]
                  for _ in range(400)]
        self.assertAlmostEqual(2e6, np.mean(totals), delta=2e4)
        spread = np.std(totals) / 2e6
        self.assertGreater(spread, 0.5 * signals.BANDWIDTH_NOISE / 2 ** .5)
        self.assertLess(spread, 2 * signals.BANDWIDTH_NOISE)


class _MeasuredByTheCpu:
    """A host whose CPU measures ``SIGNAL``, its kernel not balancing.

    Both vCPUs on node 0, every page on node 1; ``measured=False``: the
    same host measuring nothing.
    """

    SIGNAL = None

    def _host(self, measured=True):
        host = topology.xeon2()
        vm = fixtures.vm_at(host, 'private-stream', (0, 1), 1,
                            memory_mb=2048)
        return sim_backend.SimulatedBackend(
            host, [vm], signal=self.SIGNAL if measured else None), vm

    def test_remote_memory_is_measured_from_the_first_period(self):
        sim, _ = self._host()
        guest = sim.observe().instances[0]
        self.assertEqual(self.SIGNAL, guest.access_signal)
        self.assertEqual(0, guest.accesses_per_node[0])
        self.assertGreater(guest.accesses_per_node[1], 0)
        # Every vCPU reaches across one link of distance 16.
        for penalty in guest.vcpu_penalty:
            self.assertAlmostEqual(0.6, penalty)
        return guest

    def test_the_kernel_moves_nothing_on_this_signal(self):
        sim, vm = self._host()
        before = vm.seg_mb.copy()
        for _ in range(3):
            sim.advance()
        np.testing.assert_array_equal(before, vm.seg_mb)
        self.assertEqual(0, vm.kernel_pages_moved)


class BandwidthHostTest(_MeasuredByTheCpu, test_base.TestCase):
    """The simulated backend as a host whose CPUs monitor bandwidth."""

    SIGNAL = locality.SIGNAL_BANDWIDTH


class HardwareSamplesTest(test_base.TestCase):

    def test_a_poisson_draw_of_the_accesses_per_sample(self):
        rng = np.random.default_rng(2)
        accesses = np.array([[4e8, 1e8]])
        draws = np.array([signals.hardware_samples(rng, accesses, 1e6)[0]
                          for _ in range(400)])
        np.testing.assert_allclose([400, 100], draws.mean(axis=0), rtol=0.02)
        # Poisson: the variance is the mean.
        np.testing.assert_allclose([400, 100], draws.var(axis=0), rtol=0.2)


class HardwareSamplesHostTest(_MeasuredByTheCpu, test_base.TestCase):
    """The simulated backend as a host whose CPU samples its accesses."""

    SIGNAL = locality.SIGNAL_SAMPLES

    def test_remote_memory_is_measured_from_the_first_period(self):
        guest = super().test_remote_memory_is_measured_from_the_first_period()
        # Samples times the accesses each stands for.
        self.assertEqual(0, guest.accesses_per_node[1]
                         % signals.ACCESSES_PER_SAMPLE)

    def test_sampling_leaves_the_hosts_other_draws_alone(self):
        # A host that samples draws from its own stream as one that
        # measures nothing does.
        sampled, _ = self._host()
        blind, _ = self._host(measured=False)
        for _ in range(3):
            self.assertIsNotNone(
                sampled.observe().instances[0].accesses_per_node)
            blind.observe()
            sampled.advance()
            blind.advance()
        self.assertEqual(sampled.rng.random(), blind.rng.random())
