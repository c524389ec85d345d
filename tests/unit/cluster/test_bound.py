"""The bound: derived from the model, and passed by no run of any row."""

import dataclasses
from unittest import mock

import hypothesis
from hypothesis import strategies as st
import numpy as np

from numa_policy_lab.cluster import bound
from numa_policy_lab.cluster import evidence
from numa_policy_lab.cluster import guests as guests_mod
from numa_policy_lab.cluster import hosts as hosts_mod
from numa_policy_lab.cluster import scenarios
from numa_policy_lab.cluster import simulation
from numa_policy_lab.sim import model
from numa_policy_lab.sim import state
from numa_policy_lab.sim import topology
from numa_policy_lab.sim import workload as wl
from tests import base as test_base
from tests.unit.sim import fixtures

EXAMPLES = 150
# Short enough for a unit run, and among them the scenario whose rows
# pass 1.0 and the one where another signal passes perfect counters.
RUN_SCENARIOS = ('hostile-bursty', 'consolidation')


def _solo(host, profile, cpus, booted=None):
    """A guest alone on ``host``, every segment on its first vCPU's node.

    ``booted``: the profile it booted with, its segments sized for it.
    """
    vm = fixtures.vm_at(host, booted or profile, cpus,
                        host.node_of_cpu(cpus[0]), nic=host.nics[0].name)
    vm.profile = wl.PROFILES[profile]
    throughput = model.evaluate(host, [vm]).vm_throughput[0]
    return throughput, bound.guest_bound(host, vm.profile, len(cpus),
                                         vm.seg_mb.sum(axis=1))


def _mixed(pattern, fractions, terms, sizes, mlp):
    """A profile of any mix of the model's terms.

    ``terms``: weights of memory, network, cache-line sharing and
    compute time, compute never quite zero (a vCPU that only waits never
    runs); normalized into shares of a vCPU's time.
    """
    mem, io, sharing = (t / sum(terms) for t in terms[:3])
    working_set, shared, buffers = sizes
    return wl.Profile(name='mixed', pattern=pattern,
                      shared_fraction=fractions[0],
                      io_fraction=fractions[1], mem_bound=mem, io_bound=io,
                      sharing_bound=sharing, working_set_mb=working_set,
                      shared_mb=shared, io_buffer_mb=buffers, mlp=mlp[0],
                      io_mlp=mlp[1])


_unit = st.floats(0.0, 1.0)
ANY_PROFILE = st.one_of(
    st.sampled_from([wl.PROFILES[name] for name in sorted(wl.PROFILES)]),
    st.builds(_mixed,
              st.sampled_from([wl.PATTERN_PRIVATE, wl.PATTERN_SHARED,
                               wl.PATTERN_MASTER_SLAVE]),
              st.tuples(st.floats(0.0, 0.5), st.floats(0.0, 0.5)),
              st.tuples(_unit, _unit, _unit, st.floats(0.05, 1.0)),
              st.tuples(st.floats(0.5, 4096.0),
                        st.sampled_from([0.0, 64.0, 1024.0]),
                        st.sampled_from([0.0, 16.0])),
              st.tuples(st.floats(0.5, 8.0), st.floats(0.5, 4.0))))
# Booted as, running, its vCPUs' CPUs, each segment's split between two
# nodes (enough for four vCPUs), and whether it has a NIC; CPUs and
# nodes are taken modulo the host's.
ANY_GUEST = st.tuples(
    ANY_PROFILE, ANY_PROFILE,
    st.lists(st.integers(0, 47), min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), _unit),
             min_size=7, max_size=7),
    st.booleans())


def _vm(host, index, booted, running, cpus, splits, has_nic):
    cpus = [cpu % host.n_cpus for cpu in cpus]
    sizes = state.segment_sizes(booted, len(cpus), 1024)
    seg = np.zeros((len(sizes), host.n_nodes))
    for k, (size, (first, second, share)) in enumerate(zip(sizes, splits)):
        seg[k, first % host.n_nodes] += size * share
        seg[k, second % host.n_nodes] += size * (1.0 - share)
    return state.SimVm(uuid=f'vm-{index}', profile=running, memory_mb=1024,
                       vcpu_cpus=np.array(cpus, int),
                       vcpu_affinity=[frozenset()] * len(cpus), seg_mb=seg,
                       nodeset=frozenset(range(host.n_nodes)),
                       nic=host.nics[0].name if has_nic else None)


class PremisesTest(test_base.TestCase):

    def test_every_preset_meets_the_derivations_premises(self):
        for name, preset in topology.PRESETS.items():
            self.assertTrue(bound.derivation_holds(preset()), name)

    def test_a_host_whose_remote_memory_is_faster_has_no_bound(self):
        crossed = dataclasses.replace(topology.xeon2(), hops=((1, 0),
                                                              (0, 1)))
        self.assertFalse(bound.derivation_holds(crossed))
        self.assertRaises(ValueError, bound.guest_bound, crossed,
                          wl.PROFILES['idle'], 1, (0, 0, 1, 0))


class GuestBoundTest(test_base.TestCase):

    def test_a_lone_vcpu_sharing_lines_passes_one_and_so_does_its_bound(self):
        # Its sharing term costs it nothing: no sibling to wait on.
        host = topology.ivybridge4()
        throughput, limit = _solo(host, 'shared-sync', [0])
        self.assertGreater(throughput, 1.0)
        self.assertGreater(limit, 1.0)
        self.assertAlmostEqual(limit, throughput, delta=1e-9)
        self.assertEqual([bound.LONE_VCPU], bound.above_one(
            host, wl.PROFILES['shared-sync'], 1, (256, 0, 2, 766)))

    def test_a_guest_alone_everything_local_reaches_its_bound(self):
        # Guests whose own traffic queues nowhere: their working sets fit
        # the LLC and they wait on no NIC.
        host = topology.ivybridge4()
        for profile, cpus in (('shared-sync', [0, 1]),
                              ('cpu-bound', [0, 1, 2, 3]), ('idle', [8])):
            throughput, limit = _solo(host, profile, cpus)
            self.assertEqual(1.0, limit, profile)
            self.assertAlmostEqual(limit, throughput, delta=1e-9,
                                   msg=profile)

    def test_a_network_wait_without_buffers_reaches_its_bound(self):
        # Its wait costs the path-sharing term alone: 0.94 of L0.
        host = topology.ivybridge4()
        waits = wl.Profile(name='waits', pattern=wl.PATTERN_PRIVATE,
                           io_bound=0.5, working_set_mb=1.0)
        vm = fixtures.vm_at(host, waits, [0], 0, nic=host.nics[0].name)
        throughput = model.evaluate(host, [vm]).vm_throughput[0]
        limit = bound.guest_bound(host, waits, 1, vm.seg_mb.sum(axis=1))
        self.assertAlmostEqual(1.0 / (0.5 + 0.5 * 0.94), limit)
        self.assertAlmostEqual(limit, throughput, delta=1e-9)
        self.assertEqual([bound.NO_BUFFERS], bound.above_one(
            host, waits, 1, vm.seg_mb.sum(axis=1)))

    def test_its_own_traffic_keeps_a_memory_bound_guest_below(self):
        # The bound counts no queueing, not even a guest's own.
        throughput, limit = _solo(topology.amd48(), 'moderate',
                                  list(range(6)))
        self.assertEqual(1.0, limit)
        self.assertLess(throughput, limit)

    def test_a_guest_booted_idle_passes_one_when_it_bursts(self):
        # hostile-bursty's guests: netperf in a guest sized as idle has
        # no buffers; half its accesses reach no page.
        host = topology.ivybridge4()
        throughput, limit = _solo(host, 'netperf', [0], booted='idle')
        self.assertGreater(throughput, 1.0)
        self.assertLessEqual(throughput, limit)
        segment_mb = state.segment_sizes(wl.PROFILES['idle'], 1, 1024)
        self.assertEqual(0.5, bound.reached(wl.PROFILES['netperf'],
                                            segment_mb))
        self.assertEqual([bound.UNBACKED, bound.NO_BUFFERS],
                         bound.above_one(host, wl.PROFILES['netperf'], 1,
                                         segment_mb))

    @hypothesis.settings(max_examples=EXAMPLES, deadline=None,
                         derandomize=True, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(st.sampled_from(sorted(topology.PRESETS)),
                      st.lists(ANY_GUEST, min_size=1, max_size=4))
    def test_no_placement_passes_any_guests_bound(self, preset, drawn):
        # Any guests, booted as one application and running another, on
        # any CPUs (shared ones too), memory split anyhow, NIC or none.
        host = topology.PRESETS[preset]()
        vms = [_vm(host, k, *guest) for k, guest in enumerate(drawn)]
        result = model.evaluate(host, vms)
        for vm, throughput in zip(vms, result.vm_throughput):
            limit = bound.guest_bound(host, vm.profile, vm.n_vcpus,
                                      vm.seg_mb.sum(axis=1))
            self.assertLessEqual(throughput, limit + 1e-12, vm.profile.name)


def _guest(arrive, depart=None, phases=(), app=scenarios.BURSTY):
    return guests_mod.Guest(uuid=f'g-{arrive}-{depart}', name='g', app=app,
                            arrive=arrive, depart=depart, phases=phases)


class ProfileAtTest(test_base.TestCase):

    def test_a_phase_switches_a_guest_already_running(self):
        guest = _guest(2, phases=((2, 'netperf'), (5, 'idle'),
                                  (8, 'netperf')))
        # At its arrival the period's phases were applied before it came.
        periods = (2, 4, 5, 7, 8)
        self.assertEqual(['idle', 'idle', 'idle', 'idle', 'netperf'],
                         [bound.profile_at(guest, p) for p in periods])

    def test_the_profiles_are_those_the_simulation_runs(self):
        spec = scenarios.SCENARIOS['hostile-bursty'].build(0)
        seen = []
        real = hosts_mod.ClusterHost.advance

        def advance(host):
            seen.append({vm.uuid: vm.profile.name for vm in host.vms})
            return real(host)

        with mock.patch.object(hosts_mod.ClusterHost, 'advance', advance):
            simulation.run(spec, 'nova-default', 0)
        guests = {g.uuid: g for g in spec.guests}
        checked = 0
        for k, profiles in enumerate(seen):
            period = k // spec.n_hosts
            for uuid, name in profiles.items():
                self.assertEqual(bound.profile_at(guests[uuid], period),
                                 name, (uuid, period))
                checked += name == 'netperf'
        self.assertGreater(checked, 0)


class RunBoundTest(test_base.TestCase):

    def test_the_mean_is_taken_as_the_runs(self):
        host = topology.ivybridge4()
        burst = bound.guest_bound(
            host, wl.PROFILES['netperf'], 1,
            state.segment_sizes(wl.PROFILES['idle'], 1, 1024))
        spec = scenarios.Spec(
            name='t', host=topology.ivybridge4, n_hosts=1, periods=10,
            window=4, loops=(), perturbation=0, guests=(
                # Bursts in 2 of the 4 measured periods (8 and 9).
                _guest(0, phases=((8, 'netperf'),)),
                # Gone before the end: not counted, as in Outcome.final.
                _guest(0, depart=7, phases=((3, 'netperf'),)),
                # Arrives in the window: counted over the periods it runs.
                _guest(8, app=scenarios.NETPERF)))
        self.assertAlmostEqual((0.5 * (1.0 + burst) + 1.0) / 2,
                               bound.run_bound(spec))

    def test_only_hostile_bursty_passes_one(self):
        for name, scenario in scenarios.SCENARIOS.items():
            spec = scenario.build(0)
            if name == 'hostile-bursty':
                self.assertGreater(bound.run_bound(spec), 1.0)
                self.assertEqual([bound.UNBACKED, bound.NO_BUFFERS],
                                 bound.run_above_one(spec))
            else:
                self.assertEqual(1.0, bound.run_bound(spec), name)
                self.assertEqual([], bound.run_above_one(spec), name)


class NoRowPassesItsBoundTest(test_base.TestCase):
    """Every row the page shows, one seed each: none above its bound."""

    def test_no_run_beats_the_bound_of_the_same_run(self):
        for name in RUN_SCENARIOS:
            limit = bound.run_bound(scenarios.SCENARIOS[name].build(1))
            for row in evidence.ROWS:
                outcome = evidence.run_one(name, row, 1)
                self.assertEqual(limit, outcome.bound)
                self.assertLessEqual(outcome.mean(),
                                     limit + evidence.BOUND_TOLERANCE,
                                     (name, row))
