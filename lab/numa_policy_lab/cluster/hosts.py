"""The simulator as a cluster needs it: guests come and go, agents report.

:class:`ClusterHost` adds boot, shutdown and workload changes to the
simulated backend (the loops package's simulator is read-only to us).
:func:`summary` is the agent-to-scheduler path of a real deployment: the
agent's report builder on an ``observe()`` snapshot, the wire primitive,
the scheduler's checked read (``load_report_data``) and its summary.
"""

import datetime

import numpy as np

from nova_numa_policy.contracts import locality
from nova_numa_policy.decisions import reporting
from nova_numa_policy.loops import runner as loop_runner
from nova_numa_policy.objects import wire as report_wire
from nova_numa_policy.scheduling import summary as summary_mod
from numa_policy_lab.sim import backend as sim_backend
from numa_policy_lab.sim import workload as wl

# The scheduler's [numa_policy_scheduler] io_intensive_rate default.
IO_INTENSIVE_RATE = 500.0
EPOCH = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)


class ClusterHost(sim_backend.SimulatedBackend):
    """A simulated compute node whose guests change while it runs."""

    def __init__(self, host, name, seed=0, period_s=5.0,
                 signal=locality.SIGNAL_COUNTERS):
        super().__init__(host, [], period_s=period_s, seed=seed,
                         signal=signal)
        self.name = name
        self.seq = 0
        # nova's claims per guest: (vcpus, memory_mb, guest cells' host
        # nodes or None when nova gave the guest no NUMA topology).
        self.claims = {}

    def add(self, vm, cells=None):
        self.claims[vm.uuid] = (vm.n_vcpus, vm.memory_mb, cells)
        vm.vcpu_time_ns = np.zeros(vm.n_vcpus, dtype=np.int64)
        self.vms.append(vm)
        self._moved_pages[vm.uuid] = 0
        self._moved_vcpus[vm.uuid] = 0
        self._result = None

    def remove(self, uuid):
        vm = self.vm(uuid)
        self.vms.remove(vm)
        del self.claims[uuid]
        self._forget_samples(uuid)
        self._result = None
        return vm

    def set_profile(self, uuid, profile):
        """The guest's application changes behaviour (a burst, a lull)."""
        self.vm(uuid).profile = wl.PROFILES[profile]
        self._result = None

    def cpu_counts(self):
        """vCPUs currently running on each host CPU."""
        counts = np.zeros(self.host.n_cpus, int)
        for vm in self.vms:
            np.add.at(counts, vm.vcpu_cpus, 1)
        return counts

    def free_mb(self, node):
        return self._free_mb(node)


def sim_time(seconds):
    return EPOCH + datetime.timedelta(seconds=seconds)


def summary(host):
    """What the scheduler's cache holds for ``host`` after its report."""
    host.seq += 1
    report = reporting.build_report(
        host.observe(), host=host.name, hypervisor_hostname=host.name,
        seq=host.seq, period=host.period_s,
        capabilities=host.capabilities(), now=sim_time(host.now),
        locality_signal=host.locality_signal(),
        measurements=host.measurements(), judges=loop_runner.judges())
    data = report_wire.load_report_data(report_wire.dump_report(report))
    return summary_mod.summarize(data, IO_INTENSIVE_RATE)
