"""Each guest's memory bandwidth per node, as the libvirt backend reads it.

What is kept between periods lives here: each guest's last reading of
its resctrl monitoring group (:mod:`agent.sensors.resctrl`), which threads are
known to be in it, which guests could not be monitored, and the cache
domain map of the host's topology. Groups are made and removed through
the monitoring daemon's client, :class:`MonitorGroups` (its entry points:
:mod:`agent.privsep.monitorgroups`).
"""

from oslo_log import log as logging

from nova_numa_policy.contracts import errors
from nova_numa_policy.contracts import locality

from agent import privsep
from agent.sensors import resctrl

LOG = logging.getLogger(__name__)


def _monitor_daemon():
    # Imported at the first call: see agent.privsep.entry_points.
    return privsep.entry_points('monitorgroups')


class MonitorUnavailable(errors.NotEnforceable):
    """The monitoring daemon did not start (sudo or rootwrap not set up)."""


class MonitorGroups:
    """The backend's side: every call goes to the monitor daemon."""

    def join(self, pid, uuid, tids):
        """Threads joined; raise NotEnforceable when they cannot."""
        try:
            return _monitor_daemon().join(pid, uuid, sorted(tids))
        except ProcessLookupError as exc:
            raise errors.DomainGone(f'guest {uuid}: {exc}') from exc
        except (OSError, ValueError, TypeError) as exc:
            # ENOSPC: the CPU has no monitoring id left for another group.
            raise errors.NotEnforceable(
                f'cannot monitor the bandwidth of guest {uuid}: {exc}'
            ) from exc
        except privsep.DAEMON_ERRORS as exc:
            raise MonitorUnavailable(
                f'the monitoring daemon is unavailable: {exc}') from exc

    def leave(self, uuid):
        try:
            return _monitor_daemon().leave(uuid)
        except (OSError, ValueError, TypeError) + privsep.DAEMON_ERRORS as exc:
            LOG.warning('Could not remove the bandwidth monitoring group of '
                        '%s: %s', uuid, exc)
            return False


class GuestBandwidth:
    """Bytes per guest and node, from one monitoring group per guest."""

    def __init__(self, root, monitor_groups):
        self._root = root
        self._groups = monitor_groups
        # Why the daemon cannot serve, once it said so: no guest can be
        # measured until the agent restarts.
        self._broken = None
        # Per guest: its last reading; the threads known to be in its
        # group; the threads it could not have monitored, not asked again
        # until they change.
        self._bytes = {}
        self._joined = {}
        self._unmonitored = {}
        # (topology, {cache domain: node} or None, why not).
        self._domains = (None, None, None)

    def missing(self, topology):
        """Why bandwidth per guest is not read on this host, or None."""
        if self._broken:
            return self._broken + '; restart the agent once fixed'
        return resctrl.missing(self._root) or self._domain_nodes(topology)[1]

    def _domain_nodes(self, topology):
        """({cache domain: node} or None, why not), kept per topology."""
        if self._domains[0] is not topology:
            self._domains = (topology,) + resctrl.domain_nodes(self._root,
                                                               topology)
        return self._domains[1:]

    def measure(self, pid, uuid, tids, topology, vcpu_cpus, memory,
                memory_mode=None):
        """(accesses per node, vCPU penalties) of one period, or Nones.

        ``tids``: the guest's vCPU threads; ``memory``: its memory per
        node; ``memory_mode``: its ``<numatune>`` mode (memory a policy
        placed draws remote bytes only as it lies).
        """
        if not tids or not self._monitored(pid, uuid, frozenset(tids)):
            self._bytes.pop(uuid, None)
            return None, None
        now = resctrl.read_group(self._root, uuid,
                                 self._domain_nodes(topology)[0])
        if now is None:
            # Unreadable, or the group was removed: look again next time.
            self._joined.pop(uuid, None)
        moved = resctrl.moved(self._bytes.get(uuid), now)
        self._bytes[uuid] = now
        # No difference yet (the group's first reading, or one made anew)
        # reads as nothing moved: not measured.
        return locality.measured_from_bandwidth(
            topology, vcpu_cpus, moved or {}, memory, memory_mode)

    def _monitored(self, pid, uuid, tids):
        """Whether the guest's vCPU threads are all in its group.

        Puts them there when they are not; a refusal is said once and not
        asked again until the guest's threads change.
        """
        if self._joined.get(uuid) == tids:
            return True
        if tids <= (resctrl.members(self._root, uuid) or frozenset()):
            # Threads stay in a group until moved: its tasks file, which
            # the kernel answers by walking every thread of the host, is
            # read again only when the guest's threads change.
            self._joined[uuid] = tids
            return True
        if self._unmonitored.get(uuid) == tids:
            return False
        try:
            self._groups.join(pid, uuid, tids)
        except errors.DomainGone:
            return False
        except MonitorUnavailable as exc:
            self._broken = str(exc)
            return False
        except errors.NotEnforceable as exc:
            self._unmonitored[uuid] = tids
            LOG.warning('No memory bandwidth for %s: %s', uuid, exc)
            return False
        # Counts of threads that just joined start now: this reading is
        # the baseline of the next.
        self._joined[uuid] = tids
        self._bytes.pop(uuid, None)
        return True

    def sweep(self, keep):
        """Remove the monitoring groups of ours not in ``keep``.

        A group holds one of the CPU's few monitoring ids: guests gone,
        and every guest while bandwidth is not the signal, give theirs
        back. Groups left by an earlier agent are found by their names.
        """
        for uuid in resctrl.our_groups(self._root) - keep:
            self._groups.leave(uuid)
            self._bytes.pop(uuid, None)
            self._joined.pop(uuid, None)

    def forget_all_but(self, live):
        """Drop what is kept for guests no longer running."""
        for kept in (self._bytes, self._joined, self._unmonitored):
            for uuid in set(kept) - live:
                del kept[uuid]
