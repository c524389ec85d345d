"""Page moves through a real privsep daemon holding only CAP_SYS_NICE.

The daemon is forked from the test process (privsep's FORK method: the
same code path as privsep-helper after sudo, minus the exec), drops every
capability but CAP_SYS_NICE and, when configured, becomes another user.
The children are real processes with 64 MiB of touched memory, guests
to the daemon through pidfiles of a test directory
(``[numa_policy_privileged] guest_pid_dir``); this host has one NUMA
node, so pages move from node 0 to node 0, which the kernel still walks
page by page and reports. HostileCallsTest sends the daemon what the
agent's user could.
"""

import json
import os
import pwd
import subprocess
import sys

import fixtures
from oslo_config import cfg
from oslo_privsep import priv_context
import testtools

from agent.backend import pagemoves
from agent.backend import pagetemps
from agent import privsep
from agent.privsep import pagemover
from agent.privsep import trust
from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import errors
from tests import base as test_base
from tests.unit.agent import memchild

SYSTEM_PYTHON = '/usr/bin/python3'
PRIVSEP_HELPER = os.path.join(os.path.dirname(sys.executable),
                              'privsep-helper')


class PrivsepDaemon(fixtures.Fixture):
    """The agent's context started as a daemon, as ``user``.

    Root is named on purpose: the daemon refuses to serve as root
    otherwise. ``guests`` lists the children it may serve.
    """

    def __init__(self, user='root'):
        super().__init__()
        self.user = user

    def _setUp(self):
        self.guests = self.useFixture(memchild.GuestPidDir())
        # The context's capabilities are an option default, which config
        # fixtures of other tests in this process reset: set them again.
        section = privsep.pages.cfg_section
        entry = pwd.getpwnam(self.user)
        overrides = [('capabilities', list(privsep.CAPABILITIES)),
                     ('user', self.user), ('group', str(entry.pw_gid))]
        for name, value in overrides:
            cfg.CONF.set_override(name, value, group=section)
            self.addCleanup(cfg.CONF.clear_override, name, group=section)
        privsep.pages.start(priv_context.Method.FORK)
        self.addCleanup(privsep.pages.stop)


class CapSysNiceOnlyTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.daemon = self.useFixture(PrivsepDaemon())
        self.mover = pagemoves.PageMover()

    def child(self, **kwargs):
        kwargs.setdefault('preexec_fn', memchild.drop_capabilities)
        return self.useFixture(memchild.MemoryChild(
            guests=self.daemon.guests, **kwargs))

    def test_every_page_of_64_mib_is_moved_to_node_0(self):
        child = self.child()
        not_moved, statuses = 0, []
        for first in range(0, child.pages, 4096):
            failed, data = pagemover.move_window(
                child.pid, child.address + first * memchild.PAGE,
                min(4096, child.pages - first), memchild.PAGE, 0)
            not_moved += failed
            statuses += pagemover.statuses(data)
        self.assertEqual((0, [0] * child.pages), (not_moved, statuses))
        # Lists come back from the daemon as tuples (msgpack).
        self.assertEqual((0,) * 4096, pagemover.page_nodes(
            child.pid, child.address, 4096, memchild.PAGE))
        result = self.mover.move(child.pid, 0, 0, 10 ** 9)
        self.assertGreaterEqual(result.moved, child.pages)
        self.assertEqual(0, result.failed)

    def test_a_budget_is_kept(self):
        child = self.child()
        # Whole 2 MiB blocks only (one may be a transparent huge page).
        self.assertEqual(512, self.mover.move(child.pid, 0, 0, 1000).moved)

    def test_a_bad_node_is_a_clear_error(self):
        child = self.child()
        exc = self.assertRaises(pagemoves.InvalidNode, self.mover.move,
                                child.pid, 0, 7, 1000)
        self.assertIn('node 7 is not a memory node of this host', str(exc))

    def test_a_vanished_process_is_process_gone(self):
        child = self.child()
        child.stop()
        self.assertRaises(pagemoves.ProcessGone, self.mover.move, child.pid,
                          0, 0, 1000)

    def test_a_process_with_capabilities_the_daemon_lacks_is_refused(self):
        # The kernel's ptrace check: no CAP_SYS_PTRACE on purpose.
        child = self.child(size=8 << 20, preexec_fn=None)
        exc = self.assertRaises(errors.NotEnforceable, self.mover.move,
                                child.pid, 0, 0, 1000)
        self.assertIn('must run as its owner', str(exc))


class HostileCallsTest(test_base.TestCase):
    """What the agent's user could send the real daemon: all refused."""

    def setUp(self):
        super().setUp()
        self.daemon = self.useFixture(PrivsepDaemon())
        self.guest = self.useFixture(memchild.MemoryChild(
            1 << 20, preexec_fn=memchild.drop_capabilities,
            guests=self.daemon.guests))

    def other(self):
        return self.useFixture(memchild.MemoryChild(
            1 << 20, preexec_fn=memchild.drop_capabilities))

    def test_a_path_in_place_of_a_pid(self):
        for probe in ('1/root/../../../etc/shadow', '../../etc/shadow',
                      str(self.guest.pid), True):
            self.assertRaises(TypeError, pagemover.read_numa_maps, probe)
            self.assertRaises(TypeError, pagemover.read_mappings, probe)

    def test_a_process_that_is_no_guest(self):
        other = self.other()
        self.assertRaises(trust.NotAGuest, pagemover.read_numa_maps,
                          other.pid)
        self.assertRaises(trust.NotAGuest, pagemover.move_window, other.pid,
                          other.address, 16, memchild.PAGE, 0)
        self.assertRaises(errors.NotEnforceable, pagemoves.PageMover().move,
                          other.pid, 0, 0, 100)

    def test_a_recycled_pid(self):
        # A guest's pidfile outlives it and its pid goes to a process
        # the agent's user started: same pidfile, another process.
        other = self.other()
        self.daemon.guests.write('instance-recycled', other.pid)
        exc = self.assertRaises(trust.NotAGuest, pagemover.read_numa_maps,
                                other.pid)
        self.assertIn('stale', str(exc))

    def test_extra_and_unknown_arguments(self):
        pid = self.guest.pid
        self.assertRaises(TypeError, pagemover.read_numa_maps, pid, 'maps')
        self.assertRaises(TypeError, pagemover.read_numa_maps, pid=pid,
                          name='environ')
        self.assertRaises((TypeError, ValueError), pagemover.move_addresses,
                          pid, [self.guest.address, -1], 0)

    def test_the_guest_itself_is_served(self):
        self.assertIn('anon', pagemover.read_numa_maps(self.guest.pid))


@testtools.skipUnless(os.access(SYSTEM_PYTHON, os.X_OK),
                      f'the child runs as nobody and needs {SYSTEM_PYTHON}: '
                      'this venv\'s interpreter may be unreadable to nobody')
class AsTheGuestsUserTest(test_base.TestCase):
    """The production setup: the daemon runs as qemu's user."""

    def test_moves_the_pages_of_that_users_process(self):
        daemon = self.useFixture(PrivsepDaemon(user='nobody'))
        child = self.useFixture(memchild.MemoryChild(
            16 << 20, user='nobody', group=pwd.getpwnam('nobody').pw_gid,
            python=SYSTEM_PYTHON, guests=daemon.guests))
        result = pagemoves.PageMover().move(child.pid, 0, 0, 10 ** 9)
        self.assertGreaterEqual(result.moved, child.pages)
        self.assertEqual(0, result.failed)

    def test_another_users_process_is_refused(self):
        daemon = self.useFixture(PrivsepDaemon(user='nobody'))
        child = self.useFixture(memchild.MemoryChild(
            8 << 20, preexec_fn=memchild.drop_capabilities,
            guests=daemon.guests))
        self.assertRaises(errors.NotEnforceable, pagemoves.PageMover().move,
                          child.pid, 0, 0, 1000)


# Run in a fresh interpreter that imports nothing of nova: nova's test
# packages eventlet-monkey-patch on import, under which privsep's helper
# channel stalls; the agent itself never imports nova.
_HELPER_SCRIPT = """
import json, os, sys
from oslo_config import cfg
from oslo_privsep import priv_context
from agent.backend import pagemoves
from agent.backend import pagetemps
from agent import privsep
from tests.unit.agent import memchild
guests = memchild.GuestPidDir()
guests.setUp()
conf = os.path.join(guests.path, 'agent.conf')
with open(conf, 'w') as f:
    f.write('[numa_policy_privileged]\\nuser = root\\ngroup = root\\n'
            'guest_pid_dir = %s\\n' % guests.path)
cfg.CONF.set_override('helper_command', sys.argv[1] + ' --config-file ' + conf,
                      group=privsep.pages.cfg_section)
privsep.pages.start(priv_context.Method.ROOTWRAP)
child = memchild.MemoryChild(8 << 20, preexec_fn=memchild.drop_capabilities,
                             guests=guests)
child.setUp()
result = pagemoves.PageMover().move(child.pid, 0, 0, 10 ** 9)
print(json.dumps([result.moved, result.failed, child.pages]))
child.cleanUp()
privsep.pages.stop()
guests.cleanUp()
"""
TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


@testtools.skipUnless(os.geteuid() == 0 and os.access(PRIVSEP_HELPER,
                                                      os.X_OK),
                      'privsep-helper must start as root (as under sudo) '
                      'from this environment')
class PrivsepHelperTest(test_base.TestCase):

    def test_the_helper_finds_the_context_and_moves_pages(self):
        # Production prefixes sudo; this test already runs as root.
        out = subprocess.run(
            [sys.executable, '-c', _HELPER_SCRIPT, PRIVSEP_HELPER],
            capture_output=True, text=True, timeout=60, cwd=TOP)
        self.assertEqual(0, out.returncode, out.stderr[-2000:])
        moved, failed, pages = json.loads(out.stdout.splitlines()[-1])
        self.assertGreaterEqual(moved, pages)
        self.assertEqual(0, failed)


class PageTemperatureTest(test_base.TestCase):
    """What a guest wrote, read through the real daemon's pagemap reads.

    The test writes part of the child's memory through
    ``/proc/<pid>/mem`` between two censuses: the kernel takes it as the
    child's own writes and, where it keeps soft-dirty bits, sets theirs.
    On a kernel without them (``CONFIG_MEM_SOFT_DIRTY`` unset, as this
    machine's own kernel was on 29 November 2026) the agent must know it,
    and measure nothing rather than every page cold; the lab host's
    Debian kernel has them (tests/host/test_tiers.py).
    """

    WRITTEN_MIB = 2

    def setUp(self):
        super().setUp()
        self.daemon = self.useFixture(PrivsepDaemon())
        self.child = self.useFixture(memchild.MemoryChild(
            8 << 20, preexec_fn=memchild.drop_capabilities,
            guests=self.daemon.guests))
        self.temperature = pagetemps.PageTemperature(pagemoves.PageMover())

    def write_child(self, mib):
        """Rewrite ``mib`` MiB of the child's memory with what it holds."""
        size = mib << 20
        with open(f'/proc/{self.child.pid}/mem', 'r+b', buffering=0) as mem:
            mem.seek(self.child.address)
            data = mem.read(size)
            mem.seek(self.child.address)
            mem.write(data)

    def written_between_two_censuses(self):
        self.assertIsNone(self.temperature.census('guest', self.child.pid))
        self.write_child(self.WRITTEN_MIB)
        return self.temperature.census('guest', self.child.pid)

    def test_the_probe_says_what_the_daemon_reads(self):
        # The child's pages were all written when it started: the first
        # reading finds them written where the kernel keeps the bits, and
        # none where it does not.
        self.temperature.census('guest', self.child.pid)
        reading = self.temperature._readings['guest']
        states = b''.join(states for _, _, states in reading.windows)
        written = states.count(pagetemps.WRITTEN)
        if pagetemps.kernel_tracks_writes():
            self.assertGreaterEqual(written, 8 * 256)
        else:
            self.assertEqual(0, written)
            self.assertGreaterEqual(states.count(pagetemps.NOT_WRITTEN),
                                    8 * 256)

    def test_the_second_census_counts_what_was_written_since_the_first(self):
        if not pagetemps.kernel_tracks_writes():
            # No bits: nothing is ever seen written; the agent does not
            # take a census there (GuestObserver), so no guest is ever
            # judged all cold.
            self.assertEqual({}, self.written_between_two_censuses())
            return
        written = self.written_between_two_censuses()
        # Node 0, this host's only node: what the test wrote, and what the
        # waiting child wrote of its own meanwhile (its stack, a little).
        self.assertEqual({0}, set(written))
        self.assertGreaterEqual(written[0], self.WRITTEN_MIB)
        self.assertLess(written[0], self.WRITTEN_MIB + 1)

    def test_a_hot_move_takes_the_written_pages_a_cold_one_the_others(self):
        written = self.written_between_two_censuses()
        # From node 0 to node 0: the kernel walks and reports each page.
        hot = self.temperature.move('guest', self.child.pid, 0, 0, 10 ** 6,
                                    backend.PICK_HOT)
        cold = self.temperature.move('guest', self.child.pid, 0, 0, 10 ** 6,
                                     backend.PICK_COLD)
        self.assertEqual(round(written.get(0, 0) * 256), hot)
        self.assertGreaterEqual(cold, (8 - self.WRITTEN_MIB) * 256)
