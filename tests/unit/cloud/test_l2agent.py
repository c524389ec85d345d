"""neutron's Open vSwitch agent's files on a compute lab host (pure)."""

from tests import base as test_base
from tests.cloud import l2agent
from tests.cloud import layout


class Ml2SettingsTest(test_base.TestCase):

    def test_physnet1_is_bridged_to_its_own_bridge(self):
        ovs = l2agent.ml2_settings()['ovs']
        self.assertEqual(f'{layout.PHYSNET}:br-{layout.PHYSNET}',
                         ovs['bridge_mappings'])
        self.assertEqual('tcp:127.0.0.1:6640', ovs['ovsdb_connection'])

    def test_no_tunnels_no_firewall(self):
        settings = l2agent.ml2_settings()
        self.assertEqual('', settings['agent']['tunnel_types'])
        self.assertEqual('noop', settings['securitygroup']['firewall_driver'])

    def test_the_agent_loops_less_often_than_neutrons_default(self):
        # neutron's default is 2 s; each loop costs the emulated core.
        interval = int(l2agent.ml2_settings()['agent']['polling_interval'])
        self.assertGreater(interval, 2)
        self.assertLessEqual(interval, 10)


class StallTest(test_base.TestCase):

    def test_a_growing_log_is_not_a_stall(self):
        stall = l2agent.Stall(60)
        self.assertFalse(stall.seen(1, 0))
        self.assertFalse(stall.seen(2, 100))
        self.assertFalse(stall.seen(3, 200))

    def test_the_same_log_for_longer_than_the_limit_is(self):
        stall = l2agent.Stall(60)
        self.assertFalse(stall.seen(1, 0))
        self.assertFalse(stall.seen(1, 60))
        self.assertTrue(stall.seen(1, 61))

    def test_the_silence_counts_from_the_last_change(self):
        stall = l2agent.Stall(60)
        stall.seen(1, 0)
        stall.seen(2, 50)
        self.assertFalse(stall.seen(2, 100))
        self.assertTrue(stall.seen(2, 111))
