"""What the libvirt backend is given, in four small values.

Where it reads and keeps files (:class:`HostPaths`), how it tells and
spends time (:class:`Timing`), what of the host is the agent's
(:class:`HostShare`) and which helpers it may call on (:class:`Helpers`).
Each has the defaults of a host without any option set; a test or the
agent's command names only what differs.
"""

import dataclasses
import time
import typing

from nova_numa_policy.contracts import scope

from agent.backend import observation
from agent.sensors import discovery
from agent.sensors import guestproc
from agent.sensors import vfstats

# Rates (node CPU load, guest request rate, vCPU wait) are measured over
# at least this long; observations closer together reuse the last ones. See
# guestio.windowed.
MIN_RATE_WINDOW = 1.0
# Where the agent keeps what must outlive it ([numa_policy_agent]
# state_dir): the affinity of each IRQ it steered, as it found it, and
# the arrivals it handled.
STATE_DIR = '/var/lib/nova/numa-policy'


@dataclasses.dataclass(frozen=True)
class HostPaths:
    """Where the host's files are, and where the agent keeps its own.

    ``root`` prefixes sysfs and /proc (a test's fixture tree); ``pid_dir``
    (under root) holds libvirt's pidfiles of the guests' QEMU processes.
    """

    root: str = '/'
    pid_dir: str = guestproc.PID_DIR
    state_dir: str = STATE_DIR


@dataclasses.dataclass(frozen=True)
class Timing:
    """The clocks, the rate window and the numa_maps reading budget.

    ``read_timer`` times numa_maps reads in wall time: the privsep daemon
    reads in its own process, whose CPU time is not ours to see (wall >=
    CPU for the kernel's page walk). ``numa_maps_bound`` chooses which
    guests an observation reads (:mod:`agent.backend.observation`).
    """

    clock: typing.Callable[[], float] = time.monotonic
    sleep: typing.Callable[[float], None] = time.sleep
    rate_window: float = MIN_RATE_WINDOW
    read_timer: typing.Callable[[], float] = time.perf_counter
    numa_maps_bound: observation.NumaMapsBound = dataclasses.field(
        default_factory=observation.NumaMapsBound)


@dataclasses.dataclass(frozen=True)
class HostShare:
    """What of the host is the agent's to manage.

    Which guests (``agent_scope``), the CPUs nova's configuration gives
    them (``cpu_partition``), and how the host's uplinks are found.
    """

    agent_scope: scope.Scope = dataclasses.field(default_factory=scope.Scope)
    cpu_partition: scope.CpuPartition = dataclasses.field(
        default_factory=scope.CpuPartition)
    uplinks: discovery.Uplinks = dataclasses.field(
        default_factory=discovery.Uplinks)


@dataclasses.dataclass(frozen=True)
class Helpers:
    """The privileged daemons' clients, each None unless configured.

    ``page_mover`` (:class:`agent.backend.pagemoves.PageMover`) reads
    numa_maps and moves pages; ``monitor_groups`` and ``guest_samples``
    give the memory bandwidth and hardware-sampling signals; ``steering``
    carries out the I/O path. ``vf_traffic`` reads an SR-IOV VF's
    counters from its PF (:mod:`agent.sensors.vfstats`).
    ``access_monitor`` (:class:`agent.backend.accesses.AccessMonitor`)
    tells the tiering loop what tiered guests read.
    """

    page_mover: typing.Any = None
    access_monitor: typing.Any = None
    monitor_groups: typing.Any = None
    guest_samples: typing.Any = None
    steering: typing.Any = None
    vf_traffic: typing.Callable = vfstats.query
