"""One model of a host's shape for the simulator and the lab host."""

import dataclasses


from numa_policy_lab import shape
from numa_policy_lab.sim import topology
from tests import base as test_base
from tests.labhost import topology as lab_topology


class ShapeTest(test_base.TestCase):

    def test_every_simulated_preset_is_a_machine_firmware_describes(self):
        for name, preset in topology.PRESETS.items():
            self.assertEqual([], preset().problems(), name)

    def test_a_simulated_hosts_distances_follow_its_hop_counts(self):
        host = dataclasses.replace(topology.ivybridge4(),
                                   hops=((0, 2), (2, 0)))
        self.assertEqual(((10, 22), (22, 10)), host.distances)
        self.assertEqual((10, 22), host.to_topology().nodes[0].distances)

    def test_the_lab_host_and_the_simulator_report_a_shape_alike(self):
        lab = lab_topology.FOUR_NODES
        sim = dataclasses.replace(
            topology.ivybridge4(), cpus_per_node=lab.cpus_per_node,
            memory_mb_per_node=lab.memory_mb_per_node,
            nics=(shape.Nic(lab_topology.NIC_NAME, lab.nic_node),))
        lab_nodes = lab.shape.to_topology().nodes
        sim_nodes = sim.to_topology().nodes
        self.assertEqual([(n.id, n.cpus, n.memory_total_mb)
                          for n in lab_nodes],
                         [(n.id, n.cpus, n.memory_total_mb)
                          for n in sim_nodes])
        self.assertEqual(lab.shape.to_topology().nics,
                         sim.to_topology().nics)
        self.assertEqual(lab.distances,
                         tuple(n.distances for n in lab_nodes))

    def test_a_slit_is_symmetric_local_ten_and_remote_above(self):
        self.assertEqual([], shape.distance_problems(((10, 21), (21, 10)),
                                                     2))
        self.assertEqual(['distances 0<->1 differ',
                          'distances 1<->0 differ'],
                         shape.distance_problems(((10, 21), (22, 10)), 2))
        self.assertEqual(['distance 0->1 must be in 11..255',
                          'distance 1->0 must be in 11..255'],
                         shape.distance_problems(((10, 10), (10, 10)), 2))
        self.assertEqual(['distances must be 2x2'],
                         shape.distance_problems(((10,),), 2))

    def test_a_nic_on_no_node_is_a_problem(self):
        bad = shape.NumaShape(name='x', cpus_per_node=1,
                              memory_mb_per_node=64, distances=((10,),),
                              nics=(shape.Nic('eth0', 1),))
        self.assertEqual(['NIC eth0 on node 1, which does not exist'],
                         bad.problems())
