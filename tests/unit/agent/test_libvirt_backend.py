"""The real backend against libvirt's test driver and a fixture sysfs."""

import json
import os
import subprocess
import sys

import libvirt

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import errors
from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import scope
from nova_numa_policy.contracts import tiers
from nova_numa_policy.decisions import execution

from agent.backend import calls
from agent.backend import connection
from agent.backend import libvirt_backend
from agent.backend import settings
from tests import base as test_base
from tests import fixtures as host_fixtures
from tests.unit.agent import base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


class NodeLoadWindowTest(base.TestDriverHostTest):
    """Node CPU load is measured over at least MIN_RATE_WINDOW seconds."""

    def setUp(self):
        super().setUp()
        self.now = 100.0
        self.backend = libvirt_backend.LibvirtBackend(
            self.connection, paths=settings.HostPaths(root=self.root),
            timing=settings.Timing(clock=lambda: self.now, sleep=self.sleep))
        self.during_sleep = None

    def sleep(self, seconds):
        self.now += seconds
        if self.during_sleep:
            self.during_sleep()

    def loads(self, busy, elapsed):
        host_fixtures.write_proc(self.root, 8, busy=busy, elapsed=elapsed)
        return [u.cpu_load for u in self.backend.observe().usage]

    def test_load_is_the_busy_share_since_the_last_window(self):
        self.loads({}, 1000)
        self.now += 5.0
        self.assertEqual([0.5, 0.0],
                         self.loads({cpu: 500 for cpu in range(4)}, 2000))

    def test_the_first_observation_measures_over_one_window(self):
        # A one-shot run (--once) reports its first observation: it must
        # not say every node is idle because nothing was measured yet.
        host_fixtures.write_proc(self.root, 8, elapsed=1000)
        self.during_sleep = lambda: host_fixtures.write_proc(
            self.root, 8, busy={cpu: 300 for cpu in range(4, 8)},
            elapsed=1400)
        usage = self.backend.observe().usage
        self.assertEqual([0.0, 0.75], [u.cpu_load for u in usage])
        self.assertEqual(101.0, self.now)

    def test_an_observation_inside_the_window_keeps_the_last_loads(self):
        self.loads({}, 1000)
        self.now += 5.0
        measured = self.loads({cpu: 500 for cpu in range(4)}, 2000)
        # A second observation right after acting: one jiffy of node 1
        # fully busy would read as 100 %.
        self.now += 0.01
        self.assertEqual(measured, self.loads(
            {**{cpu: 500 for cpu in range(4)},
             **{cpu: 1 for cpu in range(4, 8)}}, 2001))


class FloatingLoadTest(NodeLoadWindowTest):
    """nova shares node 0's first two CPUs and dedicates the rest.

    NodeLoadWindowTest's cases run here too: the nodes' loads over all
    their CPUs are the same on a partitioned host.
    """

    def setUp(self):
        super().setUp()
        self.backend = libvirt_backend.LibvirtBackend(
            self.connection, paths=settings.HostPaths(root=self.root),
            timing=settings.Timing(clock=lambda: self.now, sleep=self.sleep),
            share=settings.HostShare(cpu_partition=scope.CpuPartition(
                shared=frozenset({0, 1}),
                dedicated=frozenset({2, 3, 4, 5, 6, 7}))))

    def usage(self, busy, elapsed):
        host_fixtures.write_proc(self.root, 8, busy=busy, elapsed=elapsed)
        return [(u.cpu_load, u.floating_cpus, u.floating_load)
                for u in self.backend.observe().usage]

    def test_the_floating_cpus_are_measured_apart_from_the_dedicated(self):
        self.usage({}, 1000)
        self.now += 5.0
        # The shared CPUs are busy; pinned guests idle on the others.
        self.assertEqual(
            [(0.45, frozenset({0, 1}), 0.9), (0.0, frozenset(), None)],
            self.usage({0: 900, 1: 900}, 2000))

    def test_an_observation_inside_the_window_keeps_both_loads(self):
        self.usage({}, 1000)
        self.now += 5.0
        measured = self.usage({0: 900, 1: 900}, 2000)
        self.now += 0.01
        self.assertEqual(measured, self.usage({0: 901, 1: 901}, 2001))


class ObserveTest(base.TestDriverHostTest):

    def test_topology_comes_from_sysfs_when_libvirt_has_no_cells(self):
        topo = self.backend.topology()
        self.assertEqual([(0, 1, 2, 3), (4, 5, 6, 7)],
                         [n.cpus for n in topo.nodes])
        self.assertEqual([('ens2f0', 1, 'physnet1')],
                         [(n.name, n.numa_node, n.physnet)
                          for n in topo.nics])

    def test_running_guests_and_their_requested_policy(self):
        snapshot = self.backend.observe()
        by_uuid = {i.uuid: i for i in snapshot.instances}
        self.assertNotIn(base.SHUT_OFF, by_uuid)
        self.assertEqual(
            {base.INTERLEAVED: 'interleave', base.HOME_FROM_NOVA: 'home',
             base.NOVA_TOPOLOGY: 'first-touch', base.NO_POLICY: None},
            {u: i.requested_policy for u, i in by_uuid.items()})
        interleaved = by_uuid[base.INTERLEAVED]
        self.assertEqual(('interleave', frozenset({0, 1})),
                         (interleaved.memory_mode, interleaved.memory_nodes))
        self.assertEqual(2, len(interleaved.vcpu_affinity))
        self.assertIsNotNone(by_uuid[base.NOVA_TOPOLOGY].hands_off_reason)
        self.assertEqual([0, 1], [u.node_id for u in snapshot.usage])
        self.assertEqual([6144, 2048],
                         [u.memory_free_mb for u in snapshot.usage])

    def test_capabilities_exclude_page_migration_without_a_page_mover(self):
        # With one: tests/unit/agent/test_pagemove_backend.py.
        caps = self.backend.capabilities()
        self.assertIn(backend.CAP_VCPU_PINNING, caps)
        self.assertIn(backend.CAP_LIVE_NODESET, caps)
        self.assertNotIn(backend.CAP_PAGE_MIGRATION, caps)
        self.assertRaises(errors.PageMigrationUnavailable,
                          self.backend.move_pages, base.INTERLEAVED, 0, 1, 10)


class HeldByLibvirt:
    """A domain as libvirt shows it while a job of its own holds it.

    Everything but ``state`` is the test driver's domain; a call that
    would wait for the job on a real host fails the test instead.
    """

    def __init__(self, dom, reason):
        self._dom = dom
        self._reason = reason

    def state(self):
        return [libvirt.VIR_DOMAIN_PAUSED, self._reason]

    def ioThreadInfo(self, flags):
        raise AssertionError('observed while libvirt held it: a real host '
                             'would have waited 30 s here')

    def __getattr__(self, name):
        return getattr(self._dom, name)


class HeldDomainsTest(base.TestDriverHostTest):
    """A domain libvirt is starting or migrating is observed later."""

    def hold(self, uuid, reason):
        conn = self.connection.get()
        listed = conn.listAllDomains
        self.patch(conn, 'listAllDomains', lambda flags=0: [
            HeldByLibvirt(dom, reason) if dom.UUIDString() == uuid else dom
            for dom in listed(flags)])

    def observed(self):
        return {i.uuid for i in self.backend.observe().instances}

    def test_a_domain_libvirt_is_starting_waits_for_the_next_period(self):
        self.hold(base.INTERLEAVED, libvirt.VIR_DOMAIN_PAUSED_STARTING_UP)
        self.assertEqual({base.HOME_FROM_NOVA, base.NOVA_TOPOLOGY,
                          base.NO_POLICY}, self.observed())

    def test_a_domain_migrating_in_waits_for_the_next_period(self):
        conn = self.connection.get()
        unheld = conn.listAllDomains
        self.hold(base.HOME_FROM_NOVA, libvirt.VIR_DOMAIN_PAUSED_MIGRATION)
        self.assertNotIn(base.HOME_FROM_NOVA, self.observed())
        # Arrived and running: observed like the others.
        self.patch(conn, 'listAllDomains', unheld)
        self.assertIn(base.HOME_FROM_NOVA, self.observed())

    def test_a_guest_paused_by_its_user_is_still_observed(self):
        self.dom(base.INTERLEAVED).suspend()
        self.assertEqual(
            (libvirt.VIR_DOMAIN_PAUSED, libvirt.VIR_DOMAIN_PAUSED_USER),
            tuple(self.dom(base.INTERLEAVED).state()))
        self.assertIn(base.INTERLEAVED, self.observed())

    def test_only_a_start_or_a_migration_is_held_by_libvirt(self):
        held = {(libvirt.VIR_DOMAIN_PAUSED, reason) for reason in (
            libvirt.VIR_DOMAIN_PAUSED_STARTING_UP,
            libvirt.VIR_DOMAIN_PAUSED_MIGRATION)}
        others = {
            (libvirt.VIR_DOMAIN_RUNNING, libvirt.VIR_DOMAIN_RUNNING_BOOTED),
            (libvirt.VIR_DOMAIN_RUNNING, libvirt.VIR_DOMAIN_RUNNING_MIGRATED),
            (libvirt.VIR_DOMAIN_PAUSED, libvirt.VIR_DOMAIN_PAUSED_USER),
            (libvirt.VIR_DOMAIN_PAUSED, libvirt.VIR_DOMAIN_PAUSED_SNAPSHOT),
            (libvirt.VIR_DOMAIN_PAUSED, libvirt.VIR_DOMAIN_PAUSED_UNKNOWN)}
        self.assertEqual(held, {s for s in held | others
                                if calls.held_by_libvirt(list(s))})


TOP_GUEST = '66666666-6666-4666-8666-666666666666'


class TierObserveTest(base.TestDriverHostTest):
    """What the snapshot says of memory tiers: the nodes', the guests'."""

    def domains(self):
        return base.domains() + [host_fixtures.domain_xml(
            6, TOP_GUEST, nova_specs={policy.POLICY_KEY: 'first-touch',
                                      tiers.MEMORY_TIERS_KEY: 'top'})]

    def test_each_guest_says_the_tiers_it_asked_for(self):
        by_uuid = {i.uuid: i.requested_tiers
                   for i in self.backend.observe().instances}
        self.assertEqual(tiers.MemoryTiers(tiers.TierMode.TOP),
                         by_uuid[TOP_GUEST])
        self.assertEqual(tiers.ANY, by_uuid[base.HOME_FROM_NOVA])
        self.assertEqual(tiers.ANY, by_uuid[base.NO_POLICY])

    def test_the_topology_ranks_each_node_as_the_kernel_does_now(self):
        first = self.backend.observe().topology
        # The fixture's kernel has no tiers: every node in the top one.
        self.assertEqual([0, 0], [n.memory_tier for n in first.nodes])
        self.assertIs(first, self.backend.observe().topology)
        host_fixtures.write_memory_tiers(self.root, {4: '0', 22: '1'})
        ranked = self.backend.observe().topology
        self.assertEqual([0, 1], [n.memory_tier for n in ranked.nodes])
        # The same object while the ranks stay: what the loops build per
        # topology is kept.
        self.assertIs(ranked, self.backend.observe().topology)
        self.assertEqual(first.nodes[0].cpus, ranked.nodes[0].cpus)


class ActTest(base.TestDriverHostTest):

    def test_pin_vcpu_and_emulator(self):
        self.backend.pin_vcpu(base.HOME_FROM_NOVA, 1, frozenset({4, 5}))
        self.backend.pin_emulator(base.HOME_FROM_NOVA, frozenset({4, 5}))
        self.assertEqual(frozenset({4, 5}),
                         self.vcpu_affinity(base.HOME_FROM_NOVA)[1])
        emulator = self.dom(base.HOME_FROM_NOVA).emulatorPinInfo(
            libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self.assertEqual(frozenset({4, 5}),
                         frozenset(i for i, on in enumerate(emulator) if on))
        # QEMU's I/O thread with the emulator, as nova pins it.
        [(_, iothread)] = self.dom(base.HOME_FROM_NOVA).ioThreadInfo(
            libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self.assertEqual(frozenset({4, 5}), calls.cpus_from_map(iothread))

    def test_an_io_thread_apart_from_the_emulator_widens_its_affinity(self):
        # After a live migration, say: the emulator on node 1's CPUs and
        # the I/O thread still on node 0's. The guest's emulator then runs
        # on both, and the report must not say node 1 only.
        dom = self.dom(base.HOME_FROM_NOVA)
        size = 8
        dom.pinEmulator(calls.cpumap({4, 5}, size),
                        libvirt.VIR_DOMAIN_AFFECT_LIVE)
        dom.pinIOThread(1, calls.cpumap({0}, size),
                        libvirt.VIR_DOMAIN_AFFECT_LIVE)
        home = [i for i in self.backend.observe().instances
                if i.uuid == base.HOME_FROM_NOVA][0]
        self.assertEqual(frozenset({0, 4, 5}), home.emulator_affinity)

    def test_set_nodeset_on_a_guest_without_numatune(self):
        self.backend.set_nodeset(base.HOME_FROM_NOVA, frozenset({1}))
        self.assertEqual('1', self.numa_parameters(base.HOME_FROM_NOVA)[
            libvirt.VIR_DOMAIN_NUMA_NODESET])
        snapshot = self.backend.observe()
        home = [i for i in snapshot.instances
                if i.uuid == base.HOME_FROM_NOVA][0]
        self.assertEqual(('strict', frozenset({1})),
                         (home.memory_mode, home.memory_nodes))

    def test_nodeset_of_an_interleaved_guest_is_refused_before_libvirt(self):
        # The test driver itself would accept it; qemu would not, so the
        # backend applies qemu's rule (doc/source/agent.rst).
        self.assertRaises(errors.NotEnforceable, self.backend.set_nodeset,
                          base.INTERLEAVED, frozenset({1}))
        self.assertEqual('0-1', self.numa_parameters(base.INTERLEAVED)[
            libvirt.VIR_DOMAIN_NUMA_NODESET])

    def test_libvirt_refuses_a_mode_change_of_a_running_guest(self):
        exc = self.assertRaises(
            libvirt.libvirtError, self.dom(base.INTERLEAVED).setNumaParameters,
            {libvirt.VIR_DOMAIN_NUMA_MODE:
             libvirt.VIR_DOMAIN_NUMATUNE_MEM_STRICT},
            libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self.assertEqual(libvirt.VIR_ERR_OPERATION_INVALID,
                         exc.get_error_code())

    def test_a_shut_off_domain_is_domain_gone(self):
        self.dom(base.HOME_FROM_NOVA).destroy()
        self.assertRaises(errors.DomainGone, self.backend.pin_vcpu,
                          base.HOME_FROM_NOVA, 0, frozenset({4}))
        self.assertNotIn(base.HOME_FROM_NOVA,
                         [i.uuid for i in self.backend.observe().instances])

    def test_a_deleted_domain_is_domain_gone(self):
        dom = self.dom(base.HOME_FROM_NOVA)
        dom.undefine()
        dom.destroy()
        for call, arg in ((self.backend.pin_emulator, frozenset({4})),
                          (self.backend.set_nodeset, frozenset({1}))):
            self.assertRaises(errors.DomainGone, call, base.HOME_FROM_NOVA,
                              arg)

    def test_a_failed_action_rolls_back_the_ones_before_it(self):
        before = self.vcpu_affinity(base.HOME_FROM_NOVA)
        snapshot = self.backend.observe()
        instance = [i for i in snapshot.instances
                    if i.uuid == base.HOME_FROM_NOVA][0]
        cpus = frozenset({4, 5})
        actions = (
            backend.PinVcpu(base.HOME_FROM_NOVA, 'test', vcpu=0, cpus=cpus),
            backend.PinVcpu(base.HOME_FROM_NOVA, 'test', vcpu=1, cpus=cpus),
            # The guest has 2 vCPUs: libvirt refuses vCPU 7.
            backend.PinVcpu(base.HOME_FROM_NOVA, 'test', vcpu=7, cpus=cpus),
        )
        outcome = execution.apply_plan(self.backend, instance,
                                       snapshot.topology, actions)
        self.assertIsNotNone(outcome.failed)
        self.assertEqual(before, self.vcpu_affinity(base.HOME_FROM_NOVA))

    def test_dry_run_changes_nothing(self):
        before = self.vcpu_affinity(base.HOME_FROM_NOVA)
        snapshot = self.backend.observe()
        instance = snapshot.instances[0]
        execution.apply_plan(
            self.backend, instance, snapshot.topology,
            (backend.PinVcpu(base.HOME_FROM_NOVA, 't', vcpu=0,
                             cpus=frozenset({4})),), dry_run=True)
        self.assertEqual(before, self.vcpu_affinity(base.HOME_FROM_NOVA))


class ConnectionTest(test_base.TestCase):

    def test_reconnects_with_doubling_backoff(self):
        clock = base.FakeClock()
        attempts = []

        def opener(uri):
            attempts.append(clock.now)
            if len(attempts) < 3:
                raise libvirt.libvirtError('libvirtd is down')
            return libvirt.open(uri)

        conn = connection.Connection('test:///default', clock=clock,
                                     opener=opener, max_delay=60)
        self.addCleanup(conn.close)
        self.assertRaises(errors.ConnectionLost, conn.get)
        self.assertRaises(errors.ConnectionLost, conn.get)  # waiting
        self.assertEqual(1, len(attempts))
        clock.now += 1
        self.assertRaises(errors.ConnectionLost, conn.get)
        self.assertEqual(2.0, conn.retry_in)
        clock.now += 2
        self.assertEqual('TEST', conn.get().getType())
        self.assertEqual(3, len(attempts))

    def test_a_closed_connection_is_reopened(self):
        conn = connection.Connection('test:///default')
        self.addCleanup(conn.close)
        first = conn.get()
        first.close()
        self.assertEqual('TEST', conn.get().getType())
        self.assertEqual(2, conn.generation)


class EventTest(test_base.TestCase):

    def test_a_started_domain_is_reported_within_a_second(self):
        # In a fresh interpreter: see tests/unit/agent/event_probe.py.
        result = subprocess.run(
            [sys.executable, '-m', 'tests.unit.agent.event_probe'],
            capture_output=True, text=True, timeout=60, check=True,
            cwd=ROOT)
        events = json.loads(result.stdout)['events']
        started = [delay for uuid, what, delay in events
                   if (uuid, what) == (base.NO_POLICY, 'started')]
        self.assertTrue(started, f'no lifecycle event: {events}')
        self.assertLess(started[0], 1.0)
