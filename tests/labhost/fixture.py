"""Lab hosts for tests: booted once per process and topology, shared.

Booting costs 10-30 s under emulation, so a test process keeps one lab
host per topology and every test of that topology uses it; each test
removes the domains it started. A lab host a test broke (no answer)
is replaced on next use. Where a lab host cannot boot, the test is
skipped with the reason, or fails when NUMA_POLICY_REQUIRE_LAB=1 (CI).
"""

import threading

import fixtures

from tests.labhost import deploy
from tests.labhost import initramfs
from tests.labhost import machine

_hosts = {}
_failures = {}
_lock = threading.Lock()


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
        return lab


class LabHostFixture(fixtures.Fixture):
    """A shared lab host for one test; its domains are removed after."""

    def __init__(self, topology):
        super().__init__()
        self.topology = topology
        self.lab = None

    def _setUp(self):
        self.lab = shared_lab(self.topology)
        self.addCleanup(self._remove_domains)

    def _remove_domains(self):
        if self.lab.running and not self.lab.broken:
            self.lab.call('tests.labhost.inside:remove_domains', timeout=120)
