"""The pure rules of what a host measures of locality."""

import testtools

from nova_numa_policy import locality


class KernelKeepsSpreadTest(testtools.TestCase):

    def test_vcpus_spread_evenly_keep_spread_pages_spread(self):
        self.assertTrue(locality.kernel_keeps_spread([0, 1]))
        self.assertTrue(locality.kernel_keeps_spread([0, 0, 1, 1, 2, 3]))

    def test_one_node_or_most_vcpus_on_one_pulls_pages_back(self):
        for nodes in ([0], [0, 0], [0, 0, 0, 1], [2, 2, 2, 0, 1]):
            self.assertFalse(locality.kernel_keeps_spread(nodes), nodes)

    def test_no_vcpu_says_nothing(self):
        self.assertFalse(locality.kernel_keeps_spread([]))


class SignalsTest(testtools.TestCase):

    def test_only_hinting_faults_are_sampled_and_kernel_balanced(self):
        self.assertTrue(locality.is_sampled(locality.SIGNAL_HINTING_FAULTS))
        self.assertTrue(locality.kernel_balances(
            locality.SIGNAL_HINTING_FAULTS))
        for signal in (locality.SIGNAL_COUNTERS, None):
            self.assertFalse(locality.is_sampled(signal))
            self.assertFalse(locality.kernel_balances(signal))
