"""The kernel's memory tiers: which tier holds each node's memory.

Linux 6.1 and later group nodes by how fast their memory is, each tier
a directory ``memory_tier<N>`` under
``/sys/devices/virtual/memory_tiering`` listing its nodes, and reclaim
demotes pages to a lower tier when
``/sys/kernel/mm/numa/demotion_enabled`` says so, and NUMA balancing
promotes hot ones back when ``kernel.numa_balancing`` has its memory
tiering bit. The agent reads them
every period; the report says ranks rather than the kernel's numbers.

Parsing and ranking are pure and shared with the driver extension, which
reads the tiers at each boot: :mod:`nova_numa_policy.contracts.memtiers`.
The only I/O is :class:`TierSensor`'s, through :mod:`agent.sensors.sysfs`.
"""

from oslo_log import log as logging

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import memtiers as tier_files

from agent.sensors import sysfs

LOG = logging.getLogger(__name__)


class TierSensor:
    """Reads the memory tiers under ``root`` (``/`` on a host).

    Never raises into the period: what it cannot read it leaves unsaid,
    and warns once per part, not every period.
    """

    def __init__(self, root):
        self._root = root
        self._warned = set()

    def read(self):
        try:
            nodelists = sysfs.memory_tier_nodelists(self._root)
            demotion = sysfs.demotion_enabled(self._root)
            balancing = sysfs.numa_balancing(self._root)
        except ValueError as exc:
            # Bytes that are not text (UnicodeDecodeError): nothing the
            # kernel writes there; trust none of it.
            found, problems = backend.MemoryTiers(), {'tiers': str(exc)}
        else:
            found, problems = tier_files.memory_tiers(nodelists, demotion,
                                                      balancing)
        for part, why in sorted(problems.items()):
            if part not in self._warned:
                self._warned.add(part)
                LOG.warning('The kernel\'s memory %s cannot be read (%s): '
                            'reports leave it unsaid', part, why)
        return found
