"""Hardware sampling of memory accesses: which node served each vCPU's loads.

Where the CPU samples instructions and says where their data came from,
and at which physical address, each sample names the node that served
an access and the thread that made it. On AMD this is instruction-based
sampling of ops (IBS op, the ``ibs_op`` PMU). It samples whatever the CPU
runs, a guest's code included: a sample taken while a vCPU thread ran
its guest carries that thread's id and the address in host memory.

Intel's PEBS is not used: the kernel turns host PEBS off on every entry
into a guest (it would write its records while the guest runs), so from
the host it sees no guest access at all.

IBS events are opened per CPU, which every kernel takes (those up to
6.1 at least take no IBS event for one thread): one event per online
CPU samples every thread, and samples are counted per thread. IBS
cannot leave out guest mode, which is what is wanted here. Opening them
with physical addresses takes ``CAP_PERFMON``; they are held by a
privsep daemon with that capability alone (:data:`agent.privsep.sampler`),
which hands the agent counts per vCPU thread and node, for threads of
guests it checked itself, never an address. Three layers:

* pure: :func:`missing`, :func:`sampling_attr`, :class:`HostSampling`'s
  counting (records decoded by :mod:`agent.sensors.perfsamples`);
* privileged entry points: :func:`start`, :func:`drain`, :func:`stop`;
* :class:`agent.backend.samples.GuestSamples`, the backend's side.
"""

import errno
import logging
import os

from agent import privsep
from agent.privsep import trust
from agent.sensors import perfevents
from agent.sensors import perfsamples
from agent.sensors import sysfs

LOG = logging.getLogger(__name__)

IBS_OP = 'ibs_op'
# Where the daemon reads sysfs: the host's own.
ROOT = '/'
SAMPLE_TYPE = (perfsamples.SAMPLE_TID | perfsamples.SAMPLE_DATA_SRC
               | perfsamples.SAMPLE_PHYS_ADDR)
# Data pages per CPU's ring buffer: 512 KiB, what perf lets a user lock
# per online CPU by default (kernel.perf_event_mlock_kb, 516 KiB with
# the control page). At 32 bytes a sample, 16384 samples per CPU and
# period; more are dropped by the kernel and counted as lost.
RING_PAGES = 128
# Ops between samples: the kernel's bounds for IBS op are 16 ops apart,
# up to 1,048,560 (more where the CPU extends the counter).
MIN_PERIOD = 4096
MAX_PERIOD = 1 << 27
MAX_GUESTS = 1024  # per drain: more guests than a host runs

NO_PMU = ('the CPU offers no instruction sampling the host can read of '
          'its guests (AMD IBS op: /sys/bus/event_source/devices/ibs_op); '
          'Intel PEBS cannot sample a guest from the host, the kernel turns '
          'it off on guest entry')
NO_BLOCKS = ('the kernel lists no memory blocks per node '
             '(/sys/devices/system/node/node<N>/memory<M>): a physical '
             'address cannot be placed on a node')


def missing(root):
    """Why this host cannot sample its guests' accesses, or None."""
    if perfevents.pmu_type(root, IBS_OP) is None:
        return NO_PMU
    blocks, size = sysfs.memory_blocks(root)
    if not size or not any(blocks.values()):
        return NO_BLOCKS
    return None


def sampling_attr(root, period):
    """The IBS op event: count dispatched ops, memory misses where it can.

    ``cnt_ctl`` makes ``period`` count ops rather than cycles;
    ``l3missonly`` (Zen 4 and later) samples only ops that missed the last
    cache, the ones memory may serve; elsewhere the cache hits among the
    samples are told apart by their data source and not counted.
    """
    formats = perfevents.pmu_formats(root, IBS_OP)
    return perfevents.attr(
        perfevents.pmu_type(root, IBS_OP),
        config=perfevents.config_with(formats, cnt_ctl=1, l3missonly=1),
        sample_period=period, sample_type=SAMPLE_TYPE)


class HostSampling:
    """Open sampling events and what their samples say, per thread and node.

    ``rings``: :class:`agent.sensors.perfevents.Ring` of each event;
    ``ranges``: :class:`agent.sensors.perfsamples.NodeRanges` of the host.
    """

    def __init__(self, rings, ranges, sample_type=SAMPLE_TYPE):
        self.rings = rings
        self.ranges = ranges
        self.sample_type = sample_type

    def counts(self):
        """({tid: {node: samples}}, (samples read, samples lost)).

        Since the last call; every sample read is counted in the second,
        the accesses memory served alone in the first.
        """
        found, taken, lost = {}, 0, 0
        for ring in self.rings:
            samples, dropped = perfsamples.decode(ring.drain(),
                                                  self.sample_type)
            taken += len(samples)
            lost += dropped
            perfsamples.merge(found, perfsamples.tally(
                samples, self.ranges,
                memory_only=bool(self.sample_type
                                 & perfsamples.SAMPLE_DATA_SRC)))
        return found, (taken, lost)

    def close(self):
        for ring in self.rings:
            ring.close()
        self.rings = []


def open_per_cpu(event_attr, cpus, pages=RING_PAGES):
    """One event and ring per CPU of ``cpus``; all closed if one fails."""
    rings = []
    try:
        for cpu in sorted(cpus):
            fd = perfevents.open_event(event_attr, pid=-1, cpu=cpu)
            try:
                rings.append(perfevents.Ring(fd, pages))
            except BaseException:
                os.close(fd)
                raise
    except BaseException:
        for ring in rings:
            ring.close()
        raise
    return rings


def node_ranges(root):
    blocks, size = sysfs.memory_blocks(root)
    return perfsamples.NodeRanges(blocks, size or 1)


# The daemon's sampling, once started: (period, HostSampling).
_host = None


@privsep.sampler.entrypoint
def start(period):
    """Sample every online CPU, one op in ``period``; say what runs.

    Started once; a second call with the same period changes nothing, a
    different one reopens the events.
    """
    global _host
    period = trust.integer(period, 'sample period', MIN_PERIOD, MAX_PERIOD)
    privsep.checked_pid_dir(privsep.SAMPLER_SECTION)
    why = missing(ROOT)
    if why:
        raise OSError(errno.ENODEV, why)
    if _host is not None and _host[0] == period:
        return len(_host[1].rings)
    stop()
    rings = open_per_cpu(sampling_attr(ROOT, period), sysfs.online_cpus(ROOT))
    _host = (period, HostSampling(rings, node_ranges(ROOT)))
    return len(rings)


def _checked_guests(guests):
    """[(pid, uuid, tids)] of the caller's list; refuse a malformed one."""
    if not isinstance(guests, (list, tuple)) or len(guests) > MAX_GUESTS:
        raise ValueError(f'a list of at most {MAX_GUESTS} guests')
    checked = []
    for entry in guests:
        if not isinstance(entry, (list, tuple)) or len(entry) != 3:
            raise ValueError('each guest is (pid, uuid, thread ids)')
        pid, uuid, tids = entry
        checked.append((trust.pid(pid), trust.instance_uuid(uuid),
                        trust.thread_ids(tids)))
    return checked


def _threads_of(pid, uuid, tids):
    """The threads among ``tids`` of guest ``pid``, checked to be ``uuid``.

    Raises when ``pid`` is not that guest. A thread id that is not one of
    its threads is left out: its samples are not the caller's to see.
    """
    guest = privsep.checked_guest(pid, privsep.SAMPLER_SECTION)
    if not trust.carries_uuid(guest.read_bytes('cmdline'), uuid):
        raise trust.NotAGuest(f'process {guest.pid} is not guest {uuid}')
    own = []
    for tid in tids:
        try:
            guest.read_bytes(f'task/{tid}/comm')
        except ProcessLookupError:
            continue
        own.append(tid)
    return own


@privsep.sampler.entrypoint
def drain(guests):
    """Samples since the last drain of each guest's threads, per node.

    ``guests``: [(pid, uuid, [thread id])]. Returns (counts, refused,
    (read, lost)): counts ``[(uuid, [(tid, node, samples)])]`` for each
    guest that checked out, ``[(uuid, why)]`` for each that did not, how
    many samples were read and how many the kernel dropped. Samples of
    every other thread of the host are dropped here.
    """
    guests = _checked_guests(guests)
    if _host is None:
        raise OSError(errno.ENODATA, 'sampling has not started')
    found, totals = _host[1].counts()
    counts, refused = [], []
    for pid, uuid, tids in guests:
        try:
            own = _threads_of(pid, uuid, tids)
        except (OSError, ValueError) as exc:
            refused.append((uuid, str(exc)))
            continue
        counts.append((uuid, [(tid, node, count) for tid in own
                              for node, count in found.get(tid, {}).items()]))
    return counts, refused, totals


@privsep.sampler.entrypoint
def stop():
    """Close every event: nothing is sampled until started again."""
    global _host
    if _host is not None:
        _host[1].close()
        _host = None
