"""The host's locality signal, and each guest's accesses measured by it.

Where the kernel's NUMA balancing runs, its hinting faults per vCPU
thread (:mod:`agent.sensors.numafaults`); where it does not, the CPU's
samples of memory accesses through the sampling daemon
(:mod:`agent.backend.samples`) or, where the CPU monitors memory
bandwidth, the bytes each guest's threads moved per node
(:mod:`agent.backend.bandwidth`). Each gives a guest's accesses per node
and its vCPUs' penalties.
"""

import dataclasses
import typing

from oslo_log import log as logging

from nova_numa_policy.contracts import locality

from agent.backend import bandwidth
from agent.sensors import numafaults

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class GuestThreads:
    """A guest as a signal measures it: its process, threads and memory.

    ``tids`` and ``faults`` read the guest's vCPU threads (``{tid: vCPU}``)
    and their hinting faults only when a signal asks.
    """

    uuid: str
    pid: typing.Optional[int]
    topology: object
    vcpu_cpus: tuple
    memory: dict
    memory_mode: typing.Optional[str]
    tids: typing.Callable[[], dict]
    faults: typing.Callable[[], list]


class LocalitySignal:
    """Which signal the host gives now, and what it measures per guest.

    ``monitor_groups``: the monitoring daemon's client, or None when
    bandwidth is not read; ``guest_samples``: the sampling daemon's side
    (:class:`agent.backend.samples.GuestSamples`), or None.
    """

    def __init__(self, root, clock, rate_window, monitor_groups=None,
                 guest_samples=None):
        self._root = root
        self._clock = clock
        self._rate_window = rate_window
        self._bandwidth = (bandwidth.GuestBandwidth(root, monitor_groups)
                           if monitor_groups is not None else None)
        self._samples = guest_samples
        self._samples_drained_at = None
        # (time, (accesses, penalties)) of each guest's last bandwidth
        # reading: one within a rate window of it is not read anew.
        self._bandwidth_read = {}
        # The last signal said, and why there was none.
        self._said = ()

    def choose(self, topology):
        """The host's signal, or None.

        While the kernel's NUMA balancing runs it moves pages itself and
        its samples are the signal: the loops bound where it may move
        them rather than fight it. Without it, the loops own page
        placement, on what the CPU measures where it is turned on: its
        samples of memory accesses first (each names the node that served
        it), then memory bandwidth (where remote bytes went is inferred on
        more than two nodes). Read at each call: an operator may turn
        ``kernel.numa_balancing`` on or off, or mount resctrl, while the
        agent runs. A host of one node has nothing to measure.
        """
        if len(topology.nodes) < 2:
            return None
        mode = numafaults.balancing_mode(self._root)
        if numafaults.samples_locality(mode):
            signal, why = locality.SIGNAL_HINTING_FAULTS, None
        else:
            signal, why = self._measured_by_cpu(topology)
        self._say(signal, why)
        return signal

    def samples_missing(self):
        """Why the guests' memory accesses are not sampled here, or None."""
        if self._samples is None:
            return ('hardware sampling is off ([numa_policy_agent] '
                    'hardware_sampling)')
        return self._samples.missing()

    def bandwidth_missing(self, topology):
        """Why memory bandwidth per guest is not read here, or None."""
        if self._bandwidth is None:
            return ('bandwidth monitoring is off ([numa_policy_agent] '
                    'bandwidth_monitoring)')
        return self._bandwidth.missing(topology)

    def collect(self, signal, vcpu_threads):
        """Drain the period's samples of the guests whose threads we know.

        ``vcpu_threads``: {uuid: (pid, {tid: vCPU})}. A guest met for the
        first time has its threads listed while it is observed: it is
        measured from the next period on. An observation within a rate
        window of the last drain (the one after an action, for the
        report) keeps the last samples, as rates do: draining then would
        read milliseconds as a period. Returns the period's signal: None
        when the daemon failed (the next period says why).
        """
        if self._samples is None:
            return signal
        if signal != locality.SIGNAL_SAMPLES:
            self._samples.idle()
            self._samples_drained_at = None
            return signal
        now = self._clock()
        if (self._samples_drained_at is not None
                and now - self._samples_drained_at < self._rate_window):
            return signal
        if self._samples.collect(vcpu_threads):
            self._samples_drained_at = now
            return signal
        self._said = ()
        return None

    def measure(self, signal, guest):
        """(accesses per node, vCPU penalties) of a guest, or Nones.

        ``guest``: a :class:`GuestThreads` view of the guest being
        observed.
        """
        if signal == locality.SIGNAL_HINTING_FAULTS:
            return self._faulted(guest)
        if signal == locality.SIGNAL_SAMPLES:
            return self._samples.measure(guest.uuid, guest.tids(),
                                         guest.topology, guest.vcpu_cpus)
        if signal == locality.SIGNAL_BANDWIDTH:
            return self._bandwidth_of(guest)
        return None, None

    def sweep(self, live, signal):
        """Forget guests gone; leave monitoring groups unused this period."""
        for uuid in set(self._bandwidth_read) - live:
            del self._bandwidth_read[uuid]
        if self._bandwidth is not None:
            self._bandwidth.forget_all_but(live)
            self._bandwidth.sweep(
                live if signal == locality.SIGNAL_BANDWIDTH else set())

    def _measured_by_cpu(self, topology):
        """(hardware samples or memory bandwidth or None, why neither)."""
        no_samples = self.samples_missing()
        if no_samples is None:
            return locality.SIGNAL_SAMPLES, None
        no_bandwidth = self.bandwidth_missing(topology)
        if no_bandwidth is None:
            return locality.SIGNAL_BANDWIDTH, None
        return None, (f'hardware sampling: {no_samples}; memory bandwidth: '
                      f'{no_bandwidth}')

    def _say(self, signal, why):
        """Log the signal when it changes, and why there is none."""
        if (signal, why) == self._said:
            return
        self._said = (signal, why)
        if signal:
            LOG.info('Locality signal: %s', signal)
        else:
            LOG.warning('No locality signal: the kernel\'s NUMA balancing '
                        'is off, and neither hardware samples nor memory '
                        'bandwidth are read (%s); the loops fall back to '
                        'memory per node', why)

    def _faulted(self, guest):
        """The guest's accesses per node and vCPU penalties, sampled."""
        threads = guest.faults()
        known = {n.id for n in guest.topology.nodes}
        accesses = {node: count for node, count in
                    numafaults.add(threads).items() if node in known}
        if not accesses:
            # Nothing sampled: the kernel does not scan memory under an
            # explicit policy, and an idle guest faults on nothing. Not
            # measured, rather than zero.
            return None, None
        return accesses, locality.vcpu_penalties(
            guest.topology, guest.vcpu_cpus,
            {t.vcpu: t.per_node for t in threads})

    def _bandwidth_of(self, guest):
        """The guest's accesses per node and vCPU penalties, from bytes.

        Read again only a rate window after the last reading: an
        observation right after it (the one after an action, for the
        report) would count milliseconds of bytes as a period's.
        """
        now = self._clock()
        last = self._bandwidth_read.get(guest.uuid)
        if last is not None and now - last[0] < self._rate_window:
            return last[1]
        measured = self._bandwidth.measure(
            guest.pid, guest.uuid, guest.tids(), guest.topology,
            guest.vcpu_cpus, guest.memory, guest.memory_mode)
        self._bandwidth_read[guest.uuid] = (now, measured)
        return measured
