import numpy as np

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality
from numa_policy_lab.sim import backend as sim_backend
from numa_policy_lab.sim import scenarios
from tests import base as test_base


def _sim(name='master-slave', seed=0, **kwargs):
    host, vms = scenarios.SCENARIOS[name].build(seed)
    return sim_backend.SimulatedBackend(host, vms, seed=seed, **kwargs)


class SimulatedBackendTest(test_base.TestCase):

    def test_is_a_backend_with_every_capability(self):
        # The I/O path's too: the simulator models interrupt vectors and
        # vhost workers (tests/unit/sim/test_iopath.py).
        sim = _sim()
        self.assertIsInstance(sim, backend.Backend)
        self.assertEqual(frozenset(backend.CAPABILITIES), sim.capabilities())
        self.assertNotIn(backend.CAP_ACCESS_COUNTERS,
                         _sim(signal=None).capabilities())

    def test_names_its_signal_and_marks_each_guests_accesses(self):
        sim = _sim()
        self.assertEqual(locality.SIGNAL_COUNTERS, sim.locality_signal())
        self.assertEqual({locality.SIGNAL_COUNTERS},
                         {i.access_signal for i in sim.observe().instances})
        blind = _sim(signal=None)
        self.assertIsNone(blind.locality_signal())
        self.assertEqual({None},
                         {i.access_signal for i in blind.observe().instances})

    def test_observe_reports_memory_and_vcpus(self):
        snap = _sim().observe()
        self.assertEqual(8, len(snap.topology.nodes))
        inst = snap.instances[0]
        self.assertEqual(8192, sum(inst.memory_mb_per_node.values()))
        self.assertEqual(24, len(inst.vcpu_cpus))
        self.assertEqual(24, len(inst.vcpu_penalty))
        self.assertEqual(8, len(inst.accesses_per_node))

    def test_vcpus_sharing_a_cpu_wait_for_it(self):
        sim = _sim()
        vm = sim.vm('master-slave-0')
        self.assertIn(backend.MEASURE_CPU_WAIT, sim.measurements())

        def wait():
            return {i.uuid: i.cpu_wait
                    for i in sim.observe().instances}[vm.uuid]

        self.assertEqual(0.0, wait())
        # Two of its 24 vCPUs on one CPU: each gets half of it.
        sim.pin_vcpu(vm.uuid, 1, frozenset({int(vm.vcpu_cpus[0])}))
        self.assertAlmostEqual(2 * 0.5 / 24, wait())

    def test_move_pages_moves_and_returns_the_count(self):
        sim = _sim()
        vm = sim.vm('master-slave-0')
        src = int(vm.memory_per_node_mb().argmax())
        dst = (src + 1) % 8
        before = vm.memory_per_node_mb()
        moved = sim.move_pages(vm.uuid, src, dst, 25600)
        after = vm.memory_per_node_mb()
        self.assertEqual(25600, moved)
        self.assertAlmostEqual(before[src] - 100, after[src])
        self.assertAlmostEqual(before[dst] + 100, after[dst])

    def test_pin_vcpu_moves_it_into_the_set(self):
        sim = _sim('shared-contention')
        sim.pin_vcpu('shared-a', 2, frozenset(range(4)))
        vm = sim.vm('shared-a')
        self.assertIn(int(vm.vcpu_cpus[2]), range(4))
        self.assertEqual(frozenset(range(4)), vm.vcpu_affinity[2])

    def test_spreading_the_master_memory_raises_throughput(self):
        sim = _sim()
        before = sim.advance().copy()
        vm = sim.vm('master-slave-0')
        src = int(vm.memory_per_node_mb().argmax())
        for dst in range(8):
            if dst != src:
                sim.move_pages(vm.uuid, src, dst, 200 * 256)
        sim.advance()  # the period that pays for the migration
        after = sim.advance()
        self.assertGreater(after[0], before[0] * 1.2)

    def test_deterministic_with_a_seed(self):
        a = _sim('io-mix', seed=5).observe()
        b = _sim('io-mix', seed=5).observe()
        self.assertEqual(a, b)
        self.assertTrue(np.isfinite(_sim('dense').advance()).all())

    def test_reboot_starts_on_idle_cpus_and_resets_vcpu_time(self):
        sim = _sim('io-mix', seed=3)
        sim.advance()
        busy = {int(c) for vm in sim.vms if vm.uuid != 'ycsb-0'
                for c in vm.vcpu_cpus}
        sim.reboot('ycsb-0')
        vm = sim.vm('ycsb-0')
        self.assertNotIn(int(vm.vcpu_cpus[0]), busy)
        self.assertEqual(0, int(vm.vcpu_time_ns.sum()))

    def test_hostname_is_given_or_defaulted(self):
        self.assertEqual('sim-host', _sim().hostname())
        self.assertEqual('cn7', _sim(hostname='cn7').hostname())

    def test_numatune_is_what_the_guest_booted_with(self):
        all_nodes = frozenset(range(8))
        sim = _sim(numatune={'master-slave-0': ('interleave', all_nodes)})
        by_uuid = {i.uuid: i for i in sim.observe().instances}
        self.assertEqual(('interleave', all_nodes),
                         (by_uuid['master-slave-0'].memory_mode,
                          by_uuid['master-slave-0'].memory_nodes))
        # No <numatune>: the kernel's default, any node.
        self.assertEqual((None, all_nodes),
                         (by_uuid['master-slave-1'].memory_mode,
                          by_uuid['master-slave-1'].memory_nodes))

    def test_a_live_nodeset_binds_strictly_and_keeps_a_mode(self):
        sim = _sim(numatune={'master-slave-0': ('interleave',
                                                frozenset(range(8)))})
        sim.set_nodeset('master-slave-0', {0, 1})
        sim.set_nodeset('master-slave-1', {2})
        by_uuid = {i.uuid: i for i in sim.observe().instances}
        self.assertEqual(('interleave', frozenset({0, 1})),
                         (by_uuid['master-slave-0'].memory_mode,
                          by_uuid['master-slave-0'].memory_nodes))
        self.assertEqual(('strict', frozenset({2})),
                         (by_uuid['master-slave-1'].memory_mode,
                          by_uuid['master-slave-1'].memory_nodes))

    def test_add_vm_joins_a_running_host(self):
        sim = _sim()
        sim.advance()
        host, vms = scenarios.SCENARIOS['master-slave'].build(1)
        late = vms[0]
        late.uuid = 'late'
        sim.add_vm(late, 'strict', {3})
        by_uuid = {i.uuid: i for i in sim.observe().instances}
        self.assertEqual(('strict', frozenset({3})),
                         (by_uuid['late'].memory_mode,
                          by_uuid['late'].memory_nodes))
        self.assertEqual(len(sim.vms), len(sim.advance()))
