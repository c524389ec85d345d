"""What the monitor daemon accepts (agent.privsep: monitorgroups, trust).

Entry points run in this process as in the daemon (privsep's unit-test
convention), on real child processes made guests by pidfiles. resctrl
itself is a directory here: no CPU this suite runs on monitors memory
bandwidth. On the lab host's real kernel, tests/host/test_locality.py
shows the daemon refusing where resctrl cannot be mounted.
"""

import errno
import os

import fixtures

from nova_numa_policy.contracts import errors

from agent.backend import bandwidth
from agent import privsep
from agent.privsep import monitorgroups
from agent.privsep import trust
from agent.sensors import resctrl
from tests import base as test_base
from tests.unit.agent import memchild

UUID = '0b8f2a52-3c1d-4e5f-8a9b-0c1d2e3f4a5b'
OTHER = '1c9f3b63-4d2e-4f60-9bac-1d2e3f4a5b6c'
DEFAULT = 'res:/\nmon:\n'


class GroupsTextTest(test_base.TestCase):
    """The five cases the kernel documents for cpu_resctrl_groups."""

    def test_parsed(self):
        self.assertEqual(('', ''), monitorgroups.groups_of('res:\nmon:\n'))
        self.assertEqual(('/', ''), monitorgroups.groups_of(DEFAULT))
        self.assertEqual(('/', 'mon0'),
                         monitorgroups.groups_of('res:/\nmon:mon0\n'))
        self.assertEqual(('group0', 'mon1'),
                         monitorgroups.groups_of('res:group0\nmon:mon1\n'))

    def test_only_a_thread_no_one_placed_may_join(self):
        ours = resctrl.group_name(UUID)
        self.assertTrue(monitorgroups.may_join(DEFAULT, ours))
        self.assertTrue(monitorgroups.may_join(f'res:/\nmon:{ours}\n', ours))
        for text in ('res:\nmon:\n', 'res:/\nmon:mon0\n',
                     'res:group0\nmon:\n', f'res:group0\nmon:{ours}\n'):
            self.assertFalse(monitorgroups.may_join(text, ours), text)


class MountTest(test_base.TestCase):

    def _mountinfo(self, *lines):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'mi')
        with open(path, 'w') as f:
            f.write(''.join(line + '\n' for line in lines))
        return path

    def test_resctrl_mounted_where_expected(self):
        path = self._mountinfo(
            '22 1 0:21 / /sys rw,nosuid shared:7 - sysfs sysfs rw',
            '40 22 0:35 / /sys/fs/resctrl rw,relatime shared:19 - resctrl '
            'resctrl rw')
        self.assertTrue(monitorgroups.resctrl_mounted(path))

    def test_anything_else_there_is_not_resctrl(self):
        path = self._mountinfo(
            '40 22 0:35 / /sys/fs/resctrl rw shared:19 - tmpfs tmpfs rw',
            '41 22 0:36 / /mnt/resctrl rw shared:20 - resctrl resctrl rw')
        self.assertFalse(monitorgroups.resctrl_mounted(path))
        self.assertFalse(monitorgroups.resctrl_mounted('/nonexistent'))


class ArgumentsTest(test_base.TestCase):

    def test_a_uuid_is_a_lower_case_canonical_text(self):
        self.assertEqual(UUID, trust.instance_uuid(UUID))
        for bad in (UUID.upper(), UUID + '\n', '../../' + UUID[6:],
                    UUID.replace('-', ''), ''):
            self.assertRaises(ValueError, trust.instance_uuid, bad)
        for bad in (UUID.encode(), None, 1, [UUID]):
            self.assertRaises(TypeError, trust.instance_uuid, bad)

    def test_thread_ids_are_a_bounded_list_of_integers(self):
        self.assertEqual((7, 8), trust.thread_ids([7, 8]))
        self.assertRaises(TypeError, trust.thread_ids, '7')
        self.assertRaises(TypeError, trust.thread_ids, [7, '8'])
        self.assertRaises(TypeError, trust.thread_ids, [True])
        self.assertRaises(ValueError, trust.thread_ids, [])
        self.assertRaises(ValueError, trust.thread_ids, [0])
        self.assertRaises(ValueError, trust.thread_ids,
                          [1] * (trust.MAX_THREADS + 1))

    def test_the_uuid_argument_of_the_command_line(self):
        line = b'qemu\0-name\0guest=i-1\0-uuid\0' + UUID.encode() + b'\0-S\0'
        self.assertTrue(trust.carries_uuid(line, UUID))
        self.assertFalse(trust.carries_uuid(line, OTHER))
        self.assertFalse(trust.carries_uuid(
            b'qemu\0-name\0' + UUID.encode() + b'\0', UUID))


class InProcessMonitor(fixtures.Fixture):
    """Entry points in this process, a directory as resctrl, guests."""

    def _setUp(self):
        privsep.monitor.set_client_mode(False)
        self.addCleanup(privsep.monitor.set_client_mode, True)
        self.guests = self.useFixture(memchild.GuestPidDir())
        self.resctrl = self.useFixture(fixtures.TempDir()).path
        self.mon_groups = os.path.join(self.resctrl, 'mon_groups')
        os.mkdir(self.mon_groups)
        self.useFixture(fixtures.MonkeyPatch(
            'agent.privsep.monitorgroups.RESCTRL', self.resctrl))
        self.mounted = True
        self.useFixture(fixtures.MonkeyPatch(
            'agent.privsep.monitorgroups.resctrl_mounted',
            lambda: self.mounted))
        # The kernel's answer is faked; the thread's being one of the
        # guest's is read from the real /proc.
        self.groups = {}

        def thread_groups(guest, tid):
            try:
                guest.read_bytes(f'task/{tid}/comm')
            except ProcessLookupError:
                return None
            return self.groups.get(tid, DEFAULT)
        self.useFixture(fixtures.MonkeyPatch(
            'agent.privsep.monitorgroups.thread_groups', thread_groups))

    def child(self, uuid=UUID):
        return self.useFixture(memchild.MemoryChild(
            4096, guests=self.guests, uuid=uuid))

    def group(self, uuid=UUID, tasks=True):
        """The group made ahead, as the kernel would fill it."""
        path = os.path.join(self.mon_groups, resctrl.group_name(uuid))
        os.mkdir(path)
        if tasks:
            open(os.path.join(path, 'tasks'), 'w').close()
        return path


class JoinTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.monitor = self.useFixture(InProcessMonitor())

    def test_threads_of_the_guest_join_its_group(self):
        child = self.monitor.child()
        path = self.monitor.group()
        self.assertEqual(1, monitorgroups.join(child.pid, UUID, [child.pid]))
        with open(os.path.join(path, 'tasks')) as f:
            self.assertEqual(str(child.pid), f.read())

    def test_a_process_that_is_no_guest_is_refused(self):
        other = self.useFixture(memchild.MemoryChild(4096))
        self.assertRaises(trust.NotAGuest, monitorgroups.join, other.pid,
                          UUID, [other.pid])

    def test_another_guests_uuid_is_refused(self):
        child = self.monitor.child(uuid=OTHER)
        self.assertRaises(trust.NotAGuest, monitorgroups.join, child.pid,
                          UUID, [child.pid])
        self.assertEqual([], os.listdir(self.monitor.mon_groups))

    def test_threads_of_another_process_are_not_the_guests(self):
        child = self.monitor.child()
        self.assertRaises(ValueError, monitorgroups.join, child.pid, UUID,
                          [os.getpid()])
        self.assertEqual([], os.listdir(self.monitor.mon_groups))

    def test_a_thread_someone_placed_stays_where_it_is(self):
        child = self.monitor.child()
        self.monitor.groups[child.pid] = 'res:/\nmon:operators\n'
        self.assertRaises(monitorgroups.NotOursToMonitor,
                          monitorgroups.join, child.pid, UUID, [child.pid])
        self.assertEqual([], os.listdir(self.monitor.mon_groups))

    def test_nothing_is_written_where_resctrl_is_not_mounted(self):
        child = self.monitor.child()
        self.monitor.mounted = False
        exc = self.assertRaises(OSError, monitorgroups.join, child.pid,
                                UUID, [child.pid])
        self.assertEqual(errno.ENODEV, exc.errno)
        self.assertEqual([], os.listdir(self.monitor.mon_groups))

    def test_leave_removes_only_the_guests_group(self):
        self.monitor.group(tasks=False)
        other = self.monitor.group(OTHER, tasks=False)
        self.assertTrue(monitorgroups.leave(UUID))
        self.assertFalse(monitorgroups.leave(UUID))
        self.assertEqual([os.path.basename(other)],
                         os.listdir(self.monitor.mon_groups))
        self.assertRaises(ValueError, monitorgroups.leave, '../..')

    def test_the_client_turns_refusals_into_the_agents_errors(self):
        child = self.monitor.child()
        client = bandwidth.MonitorGroups()
        self.monitor.mounted = False
        self.assertRaises(errors.NotEnforceable, client.join, child.pid,
                          UUID, {child.pid})
        self.monitor.mounted = True
        self.assertRaises(errors.NotEnforceable, client.join, child.pid,
                          UUID, {os.getpid()})
        child.stop()
        self.assertRaises((errors.DomainGone, errors.NotEnforceable),
                          client.join, child.pid, UUID, {child.pid})


class KernelSaysTest(test_base.TestCase):
    """The real kernel's cpu_resctrl_groups of a guest's thread."""

    def test_read_or_refused(self):
        guests = self.useFixture(memchild.GuestPidDir())
        child = self.useFixture(memchild.MemoryChild(
            4096, guests=guests, uuid=UUID))
        guest = trust.Guest(child.pid, guests.path)
        self.addCleanup(guest.close)
        if os.path.exists('/proc/self/cpu_resctrl_groups'):
            text = monitorgroups.thread_groups(guest, child.pid)
            self.assertIn(monitorgroups.groups_of(text)[0], ('', '/'))
        else:
            # Built without CONFIG_PROC_CPU_RESCTRL: whose group a thread
            # is in cannot be known, so nothing may be moved.
            self.assertRaises(monitorgroups.NotOursToMonitor,
                              monitorgroups.thread_groups, guest, child.pid)
        self.assertIsNone(monitorgroups.thread_groups(guest, os.getpid()))
