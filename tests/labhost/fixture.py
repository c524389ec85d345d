"""Lab hosts for tests: booted once per process and topology, shared.

Booting costs a minute or more under emulation, so a test process keeps
one lab host per topology and every test of that topology uses it.
After each test the fixture removes every domain and the agent's files;
the test's own clean-ups put back what else it changed. Before each
test the fixture proves the lab host clean (no domain, no process a
test started, kernel settings, network links and /tmp as after boot):
a test that left something behind fails its successor, which names it,
and the lab host is booted afresh for the next one. A lab host a test
broke (no answer) is replaced on next use. Where a lab host cannot
boot, the test is skipped with the reason, or fails when
NUMA_POLICY_REQUIRE_LAB=1 (CI).
"""

import threading

import fixtures

from tests.labhost import deploy
from tests.labhost import initramfs
from tests.labhost import machine

_hosts = {}
_failures = {}
# Per topology: the state each lab host has after boot, and the last
# test that used it.
_settled = {}
_last_test = {}
_lock = threading.Lock()


class LeftBehind(AssertionError):
    """An earlier test left state behind in a shared lab host."""


def shared_lab(topology):
    """The booted, libvirtd-running lab host of ``topology``.

    Raises LabUnavailable (this machine lacks something) or LabError (it
    did not boot); a failure is remembered, so later tests fail fast.
    """
    with _lock:
        if topology.name in _failures:
            raise _failures[topology.name]
        lab = _hosts.get(topology.name)
        if lab is not None and lab.running and not lab.broken:
            return lab
        if lab is not None:
            lab.shutdown()
        try:
            lab = machine.LabHost(topology).boot()
            lab.start_libvirtd()
            deploy.install(lab)
        except (initramfs.LabUnavailable, machine.LabError) as exc:
            _failures[topology.name] = exc
            raise
        _hosts[topology.name] = lab
        _settled[topology.name] = lab.call('tests.labhost.inside:'
                                           'settled_state')
        _last_test.pop(topology.name, None)
        return lab


class LabHostFixture(fixtures.Fixture):
    """A shared lab host for one test, proven clean; tidied after it."""

    def __init__(self, topology, test_id='a test'):
        super().__init__()
        self.topology = topology
        self.test_id = test_id
        self.lab = None

    def _setUp(self):
        self.lab = shared_lab(self.topology)
        name = self.topology.name
        left = self.lab.call('tests.labhost.inside:leftovers',
                             _settled[name], timeout=120)
        if left:
            # The next test gets a lab host booted afresh.
            self.lab.broken = True
            raise LeftBehind(
                f'{_last_test.get(name, "an earlier test")} left state '
                f'behind in the {name} lab host: {"; ".join(left)}')
        _last_test[name] = self.test_id
        self.addCleanup(self._tidy)

    def keep_as_settled(self):
        """What the lab host is now becomes its clean state.

        For a test's set-up that the lab host keeps for the tests after
        it (a NIC's VFs, made once): called once the lab host was proven
        clean, so nothing an earlier test left is taken in.
        """
        _settled[self.topology.name] = self.lab.call(
            'tests.labhost.inside:settled_state')

    def _tidy(self):
        if self.lab.running and not self.lab.broken:
            self.lab.call('tests.labhost.inside:tidy', timeout=120)
