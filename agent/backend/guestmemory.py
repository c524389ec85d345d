"""A guest's memory per node, read from its numa_maps within a budget.

Which guests an observation reads is the bound's choice
(:class:`agent.backend.observation.NumaMapsBound`): a guest not read
this round keeps its last reading, reported as it was; a change of its
live definition, or pages moved, forces a read.
"""

from oslo_log import log as logging

from nova_numa_policy.contracts import errors

from agent.sensors import numamaps

LOG = logging.getLogger(__name__)


class GuestMemory:
    """Reads numa_maps under ``root``, or through ``page_mover`` if given.

    ``timing``: :class:`agent.backend.settings.Timing`, whose
    ``read_timer`` times each read and whose ``numa_maps_bound`` is the
    bound this starts with.
    """

    def __init__(self, root, page_mover, timing):
        self._root = root
        self._page_mover = page_mover
        self._read_timer = timing.read_timer
        self.bound = timing.numa_maps_bound
        self._warned = False

    def _numa_maps(self, pid):
        if self._page_mover is not None:
            # qemu runs as its own user: only the privsep daemon may read.
            return self._page_mover.numa_maps(pid)
        return numamaps.read(self._root, pid)

    def per_node(self, pid, uuid, definition):
        """``{node: MB}`` of the guest; ``definition``: its live XML."""
        if pid is None:
            return {}
        bound = self.bound
        if not bound.due(uuid, pid, definition):
            return bound.last(uuid)
        start = self._read_timer()
        try:
            text = self._numa_maps(pid)
        except (OSError, errors.HostError) as exc:
            bound.failed(uuid)
            # Not this period's business to fail for: the report just
            # lacks the guest's memory placement. Said once loudly (a
            # deployment problem: privsep, users), then quietly.
            log = LOG.debug if self._warned else LOG.warning
            self._warned = True
            log('No numa_maps for %s (pid %s): %s', uuid, pid, exc)
            return {}
        memory = numamaps.memory_mb_from_text(text)
        if text is None:
            bound.failed(uuid)
        else:
            bound.read(uuid, pid, memory, self._read_timer() - start,
                       definition)
        return memory

    def moved(self, pid):
        """Its pages moved: read the guest of ``pid`` at the next round."""
        self.bound.moved(pid)
