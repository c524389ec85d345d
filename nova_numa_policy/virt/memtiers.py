"""The kernel's memory tiers, as the driver extension reads them at boot.

libvirt's host capabilities say nothing of memory tiers, so the driver
reads the kernel's own files on the compute node, as the agent does every
period, and ranks them with the same pure functions
(:mod:`nova_numa_policy.contracts.memtiers`). A boot never fails for
them: what cannot be read means no tiers, every node in the top tier,
and is logged once.
"""

import os

from oslo_log import log as logging

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import memtiers as tier_files

LOG = logging.getLogger(__name__)

# The root of the host's files: ``/`` on a compute node.
SYSFS_ROOT = '/'


def _read(path):
    """A file's text, or None where it cannot be read."""
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def tier_nodelists(root):
    """{tier directory name: its nodelist text or None}; None: no tiers.

    None when the kernel has none (before 6.1, or built without them):
    the directory is not there.
    """
    base = os.path.join(root, tier_files.MEMORY_TIERING_DIR)
    try:
        names = sorted(os.listdir(base))
    except (FileNotFoundError, NotADirectoryError):
        return None
    prefix = tier_files.MEMORY_TIER_PREFIX
    return {name: _read(os.path.join(base, name, 'nodelist'))
            for name in names if name.startswith(prefix)}


class TierReader:
    """Reads the kernel's memory tiers under ``root`` (:data:`SYSFS_ROOT`).

    Warns once for the life of the driver, not at every boot, when the
    tiers cannot be read.
    """

    def __init__(self, root=None):
        self._root = root
        self._warned = False

    def read(self):
        """The host's :class:`~backend.MemoryTiers`; never raises.

        Only the tiers: demotion is the agent's concern, not a boot's.
        """
        try:
            nodelists = tier_nodelists(self._root or SYSFS_ROOT)
        except Exception as exc:
            # A directory that cannot be listed, bytes that are not text
            # (UnicodeDecodeError), or whatever else: a boot never fails
            # for the tiers, and none of what was read is trusted.
            found, problems = backend.MemoryTiers(), {'tiers': str(exc)}
        else:
            found, problems = tier_files.memory_tiers(nodelists, None)
        if problems and not self._warned:
            self._warned = True
            LOG.warning('The kernel\'s memory tiers cannot be read (%s): '
                        'guests are placed as if every NUMA node were in '
                        'the top tier', problems['tiers'])
        return found
