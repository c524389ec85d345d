"""Each guest's memory accesses per node, from the sampling daemon.

:class:`GuestSamples` is the backend's side of hardware sampling: it
starts the daemon's sampling, drains its counts per vCPU thread and node
each period and turns them into accesses per node and vCPU penalties.
The daemon's entry points are :mod:`agent.privsep.hwsampling`.
"""

from oslo_log import log as logging

from nova_numa_policy.contracts import locality

from agent import privsep
from agent.sensors import perfsamples

LOG = logging.getLogger(__name__)

# Share of a period's samples the kernel may drop (its buffers full)
# before the agent says the sampling period is too short.
LOST_WARNING = 0.1


def _host_sampling():
    # Imported at the first call: see agent.privsep.entry_points.
    return privsep.entry_points('hwsampling')


class Daemon:
    """The entry points, as :class:`GuestSamples` calls them."""

    def start(self, period):
        return _host_sampling().start(period)

    def drain(self, guests):
        return _host_sampling().drain(guests)

    def stop(self):
        return _host_sampling().stop()


class GuestSamples:
    """Accesses per guest and node, from the daemon's samples."""

    def __init__(self, root, period, daemon=None):
        self._root = root
        self.period = period
        self._daemon = daemon or Daemon()
        # Why the daemon cannot sample, once it said so: nothing is
        # sampled until the agent restarts.
        self._broken = None
        self._started = False
        # {uuid: {tid: {node: samples}}} of the last drain.
        self._counts = {}
        self._refused = set()
        self._warned_lost = False
        # What the host lacks, read once: its CPU's PMUs and its memory
        # blocks do not change while the agent runs, and listing every
        # node's blocks each period is thousands of entries on a large
        # host.
        self._lacks = ()

    def missing(self):
        """Why guests' accesses are not sampled here, or None."""
        if self._broken:
            return self._broken + '; restart the agent once fixed'
        if self._lacks == ():
            self._lacks = _host_sampling().missing(self._root)
        return self._lacks

    def collect(self, guests):
        """Drain the samples of one period; ``guests``: {uuid: (pid, tids)}.

        Returns False when the daemon cannot sample (:meth:`missing` then
        says why).
        """
        self._counts = {}
        try:
            if not self._started:
                cpus = self._daemon.start(self.period)
                self._started = True
                LOG.info('Sampling memory accesses on %d CPUs, one op in %d',
                         cpus, self.period)
            counts, refused, (taken, lost) = self._daemon.drain(
                [(pid, uuid, sorted(tids))
                 for uuid, (pid, tids) in sorted(guests.items()) if tids])
        except (OSError, ValueError, TypeError) + privsep.DAEMON_ERRORS as exc:
            self._broken = f'the sampling daemon cannot sample: {exc}'
            LOG.warning('No hardware samples: %s', self._broken)
            return False
        for uuid, triples in counts:
            per_tid = self._counts.setdefault(uuid, {})
            for tid, node, count in triples:
                per_tid.setdefault(tid, {})[node] = count
        for uuid, why in refused:
            if uuid not in self._refused:
                LOG.warning('No hardware samples for %s: %s', uuid, why)
        self._refused = {uuid for uuid, _ in refused}
        self._say_lost(taken, lost)
        return True

    def _say_lost(self, taken, lost):
        """Warn once when the kernel drops a share of the samples."""
        if not lost:
            return
        share = lost / (taken + lost)
        if share > LOST_WARNING and not self._warned_lost:
            self._warned_lost = True
            LOG.warning('The kernel dropped %d of %d samples in a period '
                        '(its buffers were full): raise [numa_policy_agent] '
                        'hardware_sample_period', lost, taken + lost)
        else:
            LOG.debug('The kernel dropped %d of %d samples', lost,
                      taken + lost)

    def measure(self, uuid, tids, topology, vcpu_cpus):
        """(accesses per node, vCPU penalties) of one period, or Nones.

        ``tids``: {vCPU thread id: vCPU}. Accesses are samples times the
        sampling period: memory accesses among the ops the CPU ran.
        """
        by_vcpu = {}
        for tid, per_node in self._counts.get(uuid, {}).items():
            if tid in tids:
                perfsamples.merge(by_vcpu, {tids[tid]: per_node})
        known = {node.id for node in topology.nodes}
        accesses = {}
        for per_node in by_vcpu.values():
            for node, count in per_node.items():
                if node in known:
                    accesses[node] = (accesses.get(node, 0)
                                      + count * self.period)
        if not accesses:
            # Nothing sampled: an idle guest, or one whose data the caches
            # hold. Not measured, rather than zero.
            return None, None
        return accesses, locality.vcpu_penalties(topology, vcpu_cpus,
                                                 by_vcpu)

    def idle(self):
        """Stop sampling while samples are not the host's signal."""
        if not self._started:
            return
        self._started = False
        try:
            self._daemon.stop()
        except (OSError,) + privsep.DAEMON_ERRORS as exc:
            LOG.warning('Could not stop hardware sampling: %s', exc)
