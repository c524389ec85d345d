"""The pure rules of what a host measures of locality."""

from nova_numa_policy.contracts import locality
from tests import base as test_base
from tests import topology_factory


class SignalsTest(test_base.TestCase):

    def test_only_hinting_faults_are_sampled_and_kernel_balanced(self):
        self.assertTrue(locality.is_sampled(locality.SIGNAL_HINTING_FAULTS))
        self.assertTrue(locality.kernel_balances(
            locality.SIGNAL_HINTING_FAULTS))
        for signal in (locality.SIGNAL_COUNTERS, None):
            self.assertFalse(locality.is_sampled(signal))
            self.assertFalse(locality.kernel_balances(signal))


class BandwidthSignalTest(test_base.TestCase):

    def test_bandwidth_counts_and_leaves_pages_to_the_loops(self):
        signal = locality.SIGNAL_BANDWIDTH
        self.assertFalse(locality.is_sampled(signal))
        self.assertFalse(locality.kernel_balances(signal))
        # How far memory is, not where the NIC is.
        self.assertFalse(locality.penalty_is_stall(signal))
        self.assertTrue(locality.penalty_is_stall(locality.SIGNAL_COUNTERS))


class AccessesFromBandwidthTest(test_base.TestCase):

    def test_two_nodes_remote_bytes_went_to_the_other_node(self):
        # vCPUs on node 0 moved 64 000 bytes, 16 000 of them local; with
        # two nodes, where the memory lies does not matter.
        by_domain = locality.accesses_from_bandwidth(
            {0: (64000, 16000)}, {0: 10, 1: 0})
        self.assertEqual({0: {0: 250, 1: 750}}, by_domain)
        self.assertEqual({0: 250, 1: 750},
                         locality.total_accesses(by_domain))

    def test_remote_bytes_go_where_memory_exceeds_an_even_share(self):
        # Node 1 holds 5 of the guest's 8 GiB over four nodes: 3 GiB more
        # than an even share, allocated for threads elsewhere.
        memory = {0: 1024, 1: 5120, 2: 1024, 3: 1024}
        by_domain = locality.accesses_from_bandwidth(
            {0: (64000, 32000), 1: (64000, 64000)}, memory)
        remote = by_domain[0]
        self.assertEqual(500, remote[0])
        self.assertGreater(remote[1], 0.9 * 500)
        self.assertAlmostEqual(500, sum(remote.values()) - remote[0],
                               delta=2)
        self.assertEqual({0: 0, 1: 1000, 2: 0, 3: 0}, by_domain[1])

    def test_an_evenly_spread_guest_reaches_as_its_memory_lies(self):
        weights = locality.remote_weights({0: 100, 1: 100, 2: 100})
        self.assertEqual(1, len(set(weights.values())))

    def test_memory_a_policy_placed_draws_as_it_lies(self):
        memory = {0: 100, 1: 100, 2: 400}
        placed = locality.remote_weights(memory, first_touch=False)
        self.assertAlmostEqual(4.0, placed[2] / placed[0], delta=0.05)
        touched = locality.remote_weights(memory)
        self.assertGreater(touched[2] / touched[0], 10)

    def test_remote_bytes_with_no_memory_elsewhere_are_spread_evenly(self):
        by_domain = locality.accesses_from_bandwidth(
            {0: (6400, 0)}, {0: 100, 1: 0, 2: 0})
        self.assertEqual({0: 0, 1: 50, 2: 50}, by_domain[0])

    def test_local_above_total_is_read_as_all_local(self):
        by_domain = locality.accesses_from_bandwidth(
            {0: (640, 6400)}, {0: 1, 1: 1})
        self.assertEqual({0: 10, 1: 0}, by_domain[0])


class MeasuredFromBandwidthTest(test_base.TestCase):

    def test_each_vcpu_takes_its_nodes_penalty(self):
        topology = topology_factory.host_topology(cpus=2, memory_mb=1024)
        accesses, penalties = locality.measured_from_bandwidth(
            topology, (0, 2), {0: (6400, 6400), 1: (6400, 0)},
            {0: 100, 1: 100})
        self.assertEqual({0: 200, 1: 0}, accesses)
        self.assertEqual((0.0, 1.1), penalties)

    def test_no_bytes_is_not_measured(self):
        self.assertEqual((None, None), locality.measured_from_bandwidth(
            None, (0,), {0: (0, 0)}, {0: 100}))


class KernelBalancesMemoryTest(test_base.TestCase):

    def test_only_the_default_policy_is_sampled_and_moved(self):
        for mode in (None, 'restrictive'):
            self.assertTrue(locality.kernel_balances_memory(mode), mode)
        for mode in ('strict', 'interleave', 'preferred'):
            self.assertFalse(locality.kernel_balances_memory(mode), mode)
