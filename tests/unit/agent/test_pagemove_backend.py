"""The real backend's guest processes: memory per node, I/O, page moves.

Guests are libvirt test-driver domains; their "qemu" is described in the
fixture tree (pidfile, cmdline, numa_maps) or, for page moves, is a real
child process whose pid the fixture pidfile names.
"""

import os

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import errors
from nova_numa_policy.decisions import reporting

from agent.backend import libvirt_backend
from agent.backend import pagemoves
from agent.backend import settings
from agent.service import manager
from tests.unit.agent import base
from tests.unit.agent import test_numamaps
from tests.unit.agent import test_pagemover

FAKE_PID = 4242
INTERFACE = ("<devices><interface type='ethernet'>"
             "<mac address='52:54:00:00:00:01'/><target dev='tap0'/>"
             "</interface></devices>")


def with_interface(xml):
    return xml.replace('<os><type>hvm</type></os>',
                       '<os><type>hvm</type></os>' + INTERFACE)


def write(root, path, data):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as f:
        f.write(data)


def write_stat(root, path, pid, comm):
    """A task's ``stat`` line as the kernel prints it (state S).

    psutil knows a process or thread by it: its name is between the
    parentheses, its start time the 22nd field.
    """
    write(root, path, f'{pid} ({comm}) S ' + ' '.join(['1'] * 49) + '\n')


def write_qemu(root, name, uuid, pid, numa_maps=None):
    """libvirt's pidfile, the process's stat and cmdline, numa_maps."""
    write(root, f'run/libvirt/qemu/{name}.pid', f'{pid}\n')
    write_stat(root, f'proc/{pid}/stat', pid, 'qemu-system-x86')
    write(root, f'proc/{pid}/cmdline',
          f'/usr/bin/qemu-system-x86_64\0-name\0guest={name}\0-uuid\0'
          f'{uuid}\0')
    if numa_maps is not None:
        write(root, f'proc/{pid}/numa_maps', numa_maps)


class UnsupportedKernel(pagemoves.PageMover):
    def supported(self):
        return False


class ObserveGuestProcessTest(base.TestDriverHostTest):

    def domains(self):
        result = base.domains()
        result[1] = with_interface(result[1])
        return result

    def setUp(self):
        super().setUp()
        # instance-00000002 is HOME_FROM_NOVA in base.domains().
        write_qemu(self.root, 'instance-00000002', base.HOME_FROM_NOVA,
                   FAKE_PID, test_numamaps.NUMA_MAPS)
        self.clock = base.FakeClock()
        self.backend = libvirt_backend.LibvirtBackend(
            self.connection, paths=settings.HostPaths(root=self.root),
            timing=settings.Timing(clock=self.clock))

    def instance(self, uuid):
        return [i for i in self.backend.observe().instances
                if i.uuid == uuid][0]

    def test_memory_per_node_comes_from_numa_maps(self):
        home = self.instance(base.HOME_FROM_NOVA)
        # Every mapping of test_numamaps.NUMA_MAPS, in KiB per node.
        self.assertEqual({0: 798004 / 1024, 1: 272372 / 1024},
                         home.memory_mb_per_node)
        self.assertEqual({}, self.instance(base.NO_POLICY).memory_mb_per_node)

    def test_a_stale_pidfile_is_not_trusted(self):
        write_qemu(self.root, 'instance-00000002', base.NO_POLICY, FAKE_PID)
        self.assertEqual(
            {}, self.instance(base.HOME_FROM_NOVA).memory_mb_per_node)

    def test_io_rate_is_the_packet_delta_over_the_period(self):
        self.assertEqual(0.0, self.instance(base.HOME_FROM_NOVA).io_rate)
        self.clock.now += 5.0
        # The test driver's counters grow with the wall clock.
        self.assertGreater(self.instance(base.HOME_FROM_NOVA).io_rate, 0.0)
        self.assertEqual(0.0, self.instance(base.NO_POLICY).io_rate)

    def test_observations_within_the_rate_window_keep_the_last_rate(self):
        self.instance(base.HOME_FROM_NOVA)
        self.clock.now += 5.0
        measured = self.instance(base.HOME_FROM_NOVA).io_rate
        # The agent observes again right after acting: a few milliseconds
        # of counters over a clock that barely moved would be noise.
        self.clock.now += 0.001
        self.assertEqual(measured, self.instance(base.HOME_FROM_NOVA).io_rate)
        self.clock.now += settings.MIN_RATE_WINDOW
        self.assertNotEqual(measured,
                            self.instance(base.HOME_FROM_NOVA).io_rate)

    def test_the_report_carries_memory_and_io(self):
        agent = manager.Agent(self.backend, host='cn1', period=5.0)
        agent.run_once()
        self.clock.now += 5.0
        agent.run_once()
        home = [i for i in agent.last_report.instances
                if i.uuid == base.HOME_FROM_NOVA][0]
        self.assertEqual({'0': 779, '1': 265}, home.memory_mb_per_node)
        self.assertGreater(home.io_rate, 0.0)


class PageMigrationCapabilityTest(base.TestDriverHostTest):

    def test_offered_with_a_mover_on_a_kernel_with_move_pages(self):
        movable = libvirt_backend.LibvirtBackend(
            self.connection, paths=settings.HostPaths(root=self.root),
            helpers=settings.Helpers(page_mover=pagemoves.PageMover()))
        self.assertIn(backend.CAP_PAGE_MIGRATION, movable.capabilities())

    def test_page_migration_alone_does_not_make_carrefour_enforceable(self):
        # Carrefour and auto also need access counters.
        caps = {backend.CAP_PAGE_MIGRATION}
        self.assertNotIn('first-touch+carrefour',
                         reporting.enforceable_policies(caps))
        caps.add(backend.CAP_ACCESS_COUNTERS)
        self.assertIn('first-touch+carrefour',
                      reporting.enforceable_policies(caps))

    def test_not_offered_when_the_kernel_has_no_move_pages(self):
        unsupported = libvirt_backend.LibvirtBackend(
            self.connection, paths=settings.HostPaths(root=self.root),
            helpers=settings.Helpers(page_mover=UnsupportedKernel()))
        self.assertNotIn(backend.CAP_PAGE_MIGRATION,
                         unsupported.capabilities())
        self.assertRaises(errors.PageMigrationUnavailable,
                          unsupported.move_pages, base.HOME_FROM_NOVA, 0, 1,
                          10)


class MovePagesTest(base.TestDriverHostTest):

    def setUp(self):
        super().setUp()
        self.privsep = self.useFixture(test_pagemover.InProcessPrivsep())
        self.child = self.privsep.child(8 << 20)
        write_qemu(self.root, 'instance-00000002', base.HOME_FROM_NOVA,
                   self.child.pid)
        self.backend = libvirt_backend.LibvirtBackend(
            self.connection, paths=settings.HostPaths(root=self.root),
            helpers=settings.Helpers(
                page_mover=pagemoves.PageMover(batch_pages=512)))

    def test_moves_the_guests_pages_within_the_budget(self):
        # Two 2 MiB blocks (a block is moved whole or not at all).
        self.assertEqual(1024, self.backend.apply(backend.MovePages(
            base.HOME_FROM_NOVA, 'test', source_node=0, target_node=0,
            pages=1100)))

    def test_a_guest_whose_pages_moved_is_read_at_the_next_observation(self):
        bound = self.backend.numa_maps_bound
        bound.budget = 0.0  # nothing but what the bound forces is read
        pid = self.child.pid
        bound.due(base.HOME_FROM_NOVA, pid)
        bound.read(base.HOME_FROM_NOVA, pid, {0: 8}, 1.0)
        self.assertFalse(bound.due(base.HOME_FROM_NOVA, pid))
        self.backend.move_pages(base.HOME_FROM_NOVA, 0, 0, 10)
        self.assertTrue(bound.due(base.HOME_FROM_NOVA, pid))

    def test_a_guest_without_a_process_is_not_enforceable(self):
        self.assertRaises(errors.NotEnforceable, self.backend.move_pages,
                          base.NO_POLICY, 0, 0, 10)

    def test_a_shut_off_guest_is_domain_gone(self):
        self.dom(base.NO_POLICY).destroy()
        self.assertRaises(errors.DomainGone, self.backend.move_pages,
                          base.NO_POLICY, 0, 0, 10)

    def test_an_exited_process_is_process_gone(self):
        self.child.stop()
        self.assertRaises(pagemoves.ProcessGone, self.backend.move_pages,
                          base.HOME_FROM_NOVA, 0, 0, 10)
