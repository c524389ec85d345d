"""The pure rules of what a host measures of locality."""

import testtools

from nova_numa_policy import locality


class SignalsTest(testtools.TestCase):

    def test_only_hinting_faults_are_sampled_and_kernel_balanced(self):
        self.assertTrue(locality.is_sampled(locality.SIGNAL_HINTING_FAULTS))
        self.assertTrue(locality.kernel_balances(
            locality.SIGNAL_HINTING_FAULTS))
        for signal in (locality.SIGNAL_COUNTERS, None):
            self.assertFalse(locality.is_sampled(signal))
            self.assertFalse(locality.kernel_balances(signal))


class KernelBalancesMemoryTest(testtools.TestCase):

    def test_only_the_default_policy_is_sampled_and_moved(self):
        for mode in (None, 'restrictive'):
            self.assertTrue(locality.kernel_balances_memory(mode), mode)
        for mode in ('strict', 'interleave', 'preferred'):
            self.assertFalse(locality.kernel_balances_memory(mode), mode)
