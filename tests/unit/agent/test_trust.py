"""What the privileged daemon accepts (agent.privsep.trust, agent.privsep).

Entry points run in this process as in the daemon (privsep's unit-test
convention), on real child processes; the same probes against a real
daemon are in tests/functional/agent/test_page_migration.py and, with
sudo as deployed, tests/host/test_privileged.py.
"""

import os
import subprocess
import sys

import fixtures
from oslo_config import cfg

from agent import privsep
from agent.privsep import pagemover
from agent.privsep import trust
from tests import base as test_base
from tests import fixtures as host_fixtures
from tests.unit.agent import memchild
from tests.unit.agent import test_pagemover

SHADOW_PROBE = '1/root/../../../etc/shadow'
# Taken before any test patches it out.
_real_check_not_root = privsep.check_not_root


class IntegersOnlyTest(test_base.TestCase):

    def test_texts_bools_and_floats_are_refused_whatever_they_spell(self):
        for value in ('1', SHADOW_PROBE, True, 1.0, None, [1]):
            self.assertRaises(TypeError, trust.pid, value)

    def test_ranges(self):
        for check, bad in ((trust.pid, 0), (trust.pid, 1 << 22 + 1),
                           (trust.node, -1), (trust.node, 1024),
                           (trust.count, 0), (trust.count, (1 << 20) + 1),
                           (trust.address, -1), (trust.address, 1 << 64),
                           (trust.page_size, 4095), (trust.page_size, 6144),
                           (trust.page_size, 1 << 35)):
            self.assertRaises(ValueError, check, bad)
        self.assertEqual(2 << 20, trust.page_size(2 << 20))

    def test_addresses_are_a_bounded_list_of_integers(self):
        self.assertRaises(TypeError, trust.addresses, '4096')
        self.assertRaises(TypeError, trust.addresses, [4096, '8192'])
        self.assertRaises(ValueError, trust.addresses,
                          [0] * ((1 << 20) + 1))
        self.assertEqual((4096,), trust.addresses((4096,)))


class NamesGuestTest(test_base.TestCase):

    def test_libvirts_name_argument(self):
        cmdline = b'qemu\0-name\0guest=instance-1,debug-threads=on\0-S\0'
        self.assertTrue(trust.names_guest(cmdline, 'instance-1'))
        self.assertFalse(trust.names_guest(cmdline, 'instance-10'))
        self.assertFalse(trust.names_guest(cmdline, 'instance'))

    def test_a_comma_in_the_name_is_doubled(self):
        cmdline = b'qemu\0-name\0guest=a,,b,debug-threads=on\0'
        self.assertTrue(trust.names_guest(cmdline, 'a,b'))
        self.assertFalse(trust.names_guest(cmdline, 'a'))

    def test_the_name_elsewhere_on_the_line_is_not_enough(self):
        self.assertFalse(trust.names_guest(
            b'sleep\0guest=instance-1\0-name\0', 'instance-1'))


class GuestCheckTest(test_base.TestCase):
    """Probes of the entry points, as the agent's user could send them."""

    def setUp(self):
        super().setUp()
        self.privsep = self.useFixture(test_pagemover.InProcessPrivsep())
        self.guests = self.privsep.guests
        self.guest = self.privsep.child(1 << 20)

    def other_process(self):
        return self.useFixture(memchild.MemoryChild(1 << 20))

    def test_a_guest_is_served(self):
        maps, numa_maps = pagemover.read_mappings(self.guest.pid)
        self.assertIn('anon', numa_maps)
        self.assertEqual([0] * 16, pagemover.page_nodes(
            self.guest.pid, self.guest.address, 16, memchild.PAGE))

    def test_a_path_in_place_of_a_pid_reads_nothing(self):
        for entry in (pagemover.read_mappings, pagemover.read_numa_maps):
            self.assertRaises(TypeError, entry, SHADOW_PROBE)
            self.assertRaises(TypeError, entry, str(self.guest.pid))

    def test_any_other_process_is_refused(self):
        other = self.other_process()
        for call in (lambda: pagemover.read_numa_maps(other.pid),
                     lambda: pagemover.move_window(
                         other.pid, other.address, 16, memchild.PAGE, 0),
                     lambda: pagemover.move_addresses(
                         other.pid, [other.address], 0)):
            exc = self.assertRaises(trust.NotAGuest, call)
            self.assertIn('no pidfile', str(exc))

    def test_a_stale_pidfile_naming_a_reused_pid_is_refused(self):
        # The domain's pidfile names a pid that is now another process.
        other = self.other_process()
        self.guests.write('instance-gone', other.pid)
        exc = self.assertRaises(trust.NotAGuest, pagemover.read_numa_maps,
                                other.pid)
        self.assertIn('stale', str(exc))

    def test_a_pid_remembered_as_a_guest_is_checked_again_once_it_died(self):
        pagemover.read_numa_maps(self.guest.pid)
        remembered = privsep.guests.get(self.guest.pid,
                                        privsep.guest_pid_dir())
        self.guest.stop()
        self.assertFalse(remembered.alive())
        self.assertRaises(ProcessLookupError, privsep.guests.get,
                          self.guest.pid, privsep.guest_pid_dir())

    def test_pidfiles_others_may_write_are_not_trusted(self):
        os.chmod(self.guests.path, 0o777)
        self.addCleanup(os.chmod, self.guests.path, 0o755)
        exc = self.assertRaises(trust.NotAGuest, pagemover.read_numa_maps,
                                self.guest.pid)
        self.assertIn('not private to root', str(exc))

    def test_a_link_is_not_a_pidfile(self):
        other = self.other_process()
        target = os.path.join(self.useFixture(fixtures.TempDir()).path, 'p')
        with open(target, 'w') as f:
            f.write(str(other.pid))
        os.symlink(target, os.path.join(self.guests.path, 'evil.pid'))
        self.assertRaises(trust.NotAGuest, pagemover.read_numa_maps,
                          other.pid)

    def test_digits_of_other_scripts_are_no_pid(self):
        other = self.useFixture(memchild.MemoryChild(
            1 << 20, guests=self.guests, domain='arabic'))
        digits = ''.join(chr(0x660 + int(d)) for d in str(other.pid))
        self.guests.write('arabic', digits)
        self.assertRaises(trust.NotAGuest, pagemover.read_numa_maps,
                          other.pid)

    def test_bad_numbers_are_refused_before_any_syscall(self):
        pid, address = self.guest.pid, self.guest.address
        for call in (
                lambda: pagemover.move_window(pid, address, 16,
                                              memchild.PAGE, True),
                lambda: pagemover.move_window(pid, address, 16, 3000, 0),
                lambda: pagemover.move_window(pid, -address, 16,
                                              memchild.PAGE, 0),
                lambda: pagemover.move_addresses(pid, [address, 'x'], 0),
                lambda: pagemover.page_nodes(pid, address, 0,
                                             memchild.PAGE)):
            self.assertRaises((TypeError, ValueError), call)

    def test_the_daemon_refuses_to_serve_as_root_unless_asked(self):
        # This process is root, as a daemon nobody told to drop to QEMU's
        # account would be.
        self.useFixture(fixtures.MonkeyPatch(
            'agent.privsep.check_not_root', _real_check_not_root))
        self.useFixture(_Override('user', None))
        exc = self.assertRaises(PermissionError, pagemover.read_numa_maps,
                                self.guest.pid)
        self.assertIn('set [numa_policy_privileged] user', str(exc))
        self.useFixture(_Override('user', 'root'))
        self.assertIn('anon', pagemover.read_numa_maps(self.guest.pid))

    def test_a_configuration_the_caller_could_write_serves_nothing(self):
        # An extra --config-file of the agent's user's own, as oslo.rootwrap
        # would let through: user = root, every capability.
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'evil.conf')
        with open(path, 'w') as f:
            f.write('[numa_policy_privileged]\nuser = root\n')
        os.chmod(path, 0o666)
        # The files privsep-helper's command line named (read there from
        # the parsed options; tests/host/test_privileged.py runs that).
        self.useFixture(fixtures.MonkeyPatch(
            'agent.privsep._read_configuration', lambda: [path]))
        exc = self.assertRaises(PermissionError, pagemover.read_numa_maps,
                                self.guest.pid)
        self.assertIn('someone other than root may write', str(exc))
        os.chmod(path, 0o644)
        self.assertIn('anon', pagemover.read_numa_maps(self.guest.pid))


class _Override(fixtures.Fixture):
    def __init__(self, name, value):
        super().__init__()
        self.name, self.value = name, value

    def _setUp(self):
        cfg.CONF.set_override(self.name, self.value, group=privsep.SECTION)
        self.addCleanup(cfg.CONF.clear_override, self.name,
                        group=privsep.SECTION)


class QemuAccountTest(test_base.TestCase):

    def conf(self, text):
        return host_fixtures.write_file(
            self.useFixture(fixtures.TempDir()).path, 'qemu.conf', text)

    def test_qemu_conf_wins(self):
        path = self.conf('# user = "nobody"\nuser = "+64055"\n'
                         'group = "kvm"\n')
        self.assertEqual(('64055', 'kvm'), privsep.qemu_account(path))

    def test_else_the_distributions_account_and_its_group(self):
        path = self.conf('')
        self.assertEqual(('root', 'root'), privsep.qemu_account(
            path, accounts=('no-such-account', 'root')))

    def test_none_when_nothing_is_known(self):
        self.assertEqual((None, None), privsep.qemu_account(
            '/nonexistent', accounts=('no-such-account',)))

    def test_the_default_is_set_in_every_process_importing_the_context(self):
        # The daemon reads the same default when its config says nothing
        # (through its context, before it drops privileges): a fresh
        # interpreter, no config file.
        out = subprocess.run(
            [sys.executable, '-c',
             'from oslo_config import cfg; from agent import privsep; '
             'cfg.CONF([], project="x"); '
             'print(privsep.pages.conf.user, privsep.pages.conf.group)'],
            capture_output=True, text=True, check=True)
        self.assertEqual(' '.join(str(v) for v in privsep.qemu_account()),
                         out.stdout.strip())
