"""The privsep package's own checks: one helper for every daemon.

:func:`agent.privsep.checked_pid_dir` checks a daemon before it serves
(its configuration root's alone; the daemons of QEMU's account not root
unless asked) and :func:`agent.privsep.checked_guest` then checks the
pid; importing the package does neither, nor registers any option.
"""

import os
import pathlib
import subprocess
import sys

import fixtures
from oslo_config import cfg
import testtools

from agent import privsep
from agent.privsep import trust
from tests.unit.agent import memchild
from tests.unit.agent import test_trust

SECTIONS = (privsep.SECTION, privsep.MONITOR_SECTION,
            privsep.SAMPLER_SECTION, privsep.STEERING_SECTION)


def _in_a_fresh_interpreter(code):
    return subprocess.run([sys.executable, '-c', code], capture_output=True,
                          text=True, check=True).stdout.strip()


class ImportTest(testtools.TestCase):

    def test_importing_the_package_registers_nothing(self):
        out = _in_a_fresh_interpreter(
            'from oslo_config import cfg; import agent.privsep; '
            f'print([s for s in {SECTIONS!r} if s in cfg.CONF])')
        self.assertEqual('[]', out)

    def test_naming_a_context_registers_its_section(self):
        out = _in_a_fresh_interpreter(
            'from oslo_config import cfg; from agent import privsep; '
            'privsep.steering; '
            f'print([s for s in {SECTIONS!r} if s in cfg.CONF])')
        self.assertEqual(repr([privsep.STEERING_SECTION]), out)

    def test_the_sampler_defaults_to_qemus_account_too(self):
        out = _in_a_fresh_interpreter(
            'from oslo_config import cfg; from agent import privsep; '
            'cfg.CONF([], project="x"); '
            'print(privsep.sampler.conf.user, privsep.sampler.conf.group)')
        self.assertEqual(' '.join(str(v) for v in privsep.qemu_account()),
                         out)


class CheckedPidDirTest(testtools.TestCase):
    """Each daemon's checks, run as root (this process) as a daemon is."""

    def setUp(self):
        super().setUp()
        self.guests = self.useFixture(memchild.GuestPidDir())
        for section in (privsep.SECTION, privsep.SAMPLER_SECTION):
            self.useFixture(_Override(section, 'user', None))

    def written_by_others(self):
        """A configuration file anyone may write, as the daemon's."""
        conf = pathlib.Path(self.useFixture(fixtures.TempDir()).path, 'c')
        conf.write_text('[numa_policy_privileged]\nuser = root\n')
        conf.chmod(0o666)
        self.useFixture(fixtures.MonkeyPatch(
            'agent.privsep._read_configuration', lambda: [str(conf)]))

    def test_only_the_daemons_of_qemus_account_refuse_root(self):
        for section in (privsep.SECTION, privsep.SAMPLER_SECTION):
            exc = self.assertRaises(PermissionError,
                                    privsep.checked_pid_dir, section)
            self.assertIn(f'set [{section}] user', str(exc))
        for section in (privsep.MONITOR_SECTION, privsep.STEERING_SECTION):
            self.assertEqual(self.guests.path,
                             privsep.checked_pid_dir(section))

    def test_root_when_asked_for(self):
        self.useFixture(_Override(privsep.SAMPLER_SECTION, 'user', 'root'))
        self.assertEqual(self.guests.path,
                         privsep.checked_pid_dir(privsep.SAMPLER_SECTION))

    def test_no_daemon_serves_a_configuration_others_may_write(self):
        self.written_by_others()
        for section in SECTIONS:
            self.useFixture(_Override(section, 'user', 'root'))
            exc = self.assertRaises(PermissionError,
                                    privsep.checked_pid_dir, section)
            self.assertIn('someone other than root may write', str(exc))

    def test_checked_once_until_forgotten(self):
        section = privsep.STEERING_SECTION
        self.assertEqual(self.guests.path, privsep.checked_pid_dir(section))
        self.written_by_others()
        self.assertEqual(self.guests.path, privsep.checked_pid_dir(section))
        privsep.forget_checks()
        self.assertRaises(PermissionError, privsep.checked_pid_dir, section)


class CheckedGuestTest(testtools.TestCase):
    """:func:`checked_guest` in every daemon: a checked daemon, then pid."""

    def setUp(self):
        super().setUp()
        self.guests = self.useFixture(memchild.GuestPidDir())
        for section in SECTIONS:
            self.useFixture(_Override(section, 'user', 'root'))
        self.guest = self.useFixture(memchild.MemoryChild(
            1 << 20, guests=self.guests))

    def test_a_guest_is_served_in_every_daemon(self):
        for section in SECTIONS:
            guest = privsep.checked_guest(self.guest.pid, section)
            self.assertEqual(self.guest.pid, guest.pid)
            self.assertIn(b'-name', guest.read_bytes('cmdline'))

    def test_bad_pids_are_refused(self):
        for section in SECTIONS:
            for bad in (test_trust.SHADOW_PROBE, str(self.guest.pid), True,
                        1.0, None):
                self.assertRaises(TypeError, privsep.checked_guest, bad,
                                  section)
            for bad in (0, -1, trust.MAX_PID + 1):
                self.assertRaises(ValueError, privsep.checked_guest, bad,
                                  section)

    def test_a_process_no_pidfile_names_is_refused(self):
        other = self.useFixture(memchild.MemoryChild(1 << 20))
        for section in SECTIONS:
            self.assertRaises(trust.NotAGuest, privsep.checked_guest,
                              other.pid, section)

    def test_a_link_in_the_pid_directory_is_not_a_pidfile(self):
        other = self.useFixture(memchild.MemoryChild(1 << 20))
        target = os.path.join(self.useFixture(fixtures.TempDir()).path, 'p')
        with open(target, 'w') as f:
            f.write(str(other.pid))
        os.symlink(target, os.path.join(self.guests.path, 'evil.pid'))
        for section in SECTIONS:
            self.assertRaises(trust.NotAGuest, privsep.checked_guest,
                              other.pid, section)


class _Override(fixtures.Fixture):
    def __init__(self, section, name, value):
        super().__init__()
        self.section, self.name, self.value = section, name, value

    def _setUp(self):
        # The section's options exist once its context is made.
        privsep._context_of(self.section)
        cfg.CONF.set_override(self.name, self.value, group=self.section)
        self.addCleanup(cfg.CONF.clear_override, self.name,
                        group=self.section)
