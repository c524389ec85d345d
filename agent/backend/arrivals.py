"""Which live-migrated guests' arrivals the agent has handled.

The record a migration's source writes says it chose the placement
blind to this host's load (``chosen-by``, nova_numa_policy/virt/metadata.py);
the agent takes the home decision again once. The domain's own record is
the driver's and nova's to write (nova regenerates the XML; the agent
never calls virDomainSetMetadata), so "handled" is kept here instead, in
the agent's ``state_dir``, keyed by instance uuid and libvirt domain id:
the id is new each time the domain starts, so a guest started again from
the same definition (the migrated one, still marked) counts as arrived
anew, and entries of domains no longer running are dropped.
"""

import json
import os
import tempfile

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

RECORD_NAME = 'arrivals.json'
RECORD_VERSION = 1


class ArrivalRecord:
    """``{uuid: domain id}`` of the arrivals handled, in a JSON file.

    A file that cannot be read is said once and treated as empty: at
    worst an arrival is decided again, which the rule allows (it moves
    only to a clearly better node).
    """

    def __init__(self, state_dir):
        self.path = os.path.join(state_dir, RECORD_NAME)
        self._entries = None

    def _load(self):
        try:
            with open(self.path) as f:
                data = json.load(f)
            return {str(uuid): int(dom_id)
                    for uuid, dom_id in data['handled'].items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError,
                AttributeError) as exc:
            LOG.warning('Ignoring the arrivals record %s: %s', self.path,
                        exc)
            return {}

    def _entries_now(self):
        if self._entries is None:
            self._entries = self._load()
        return self._entries

    def handled(self, uuid, domain_id):
        return self._entries_now().get(uuid) == domain_id

    def keep(self, uuid, domain_id, running):
        """Record ``uuid``'s arrival as domain ``domain_id`` handled.

        ``running``: the uuids running now; the others are forgotten.
        """
        entries = {u: d for u, d in self._entries_now().items()
                   if u in running}
        entries[uuid] = domain_id
        self._write(entries)

    def _write(self, entries):
        data = {'version': RECORD_VERSION, 'handled': dict(sorted(
            entries.items()))}
        directory = os.path.dirname(self.path)
        try:
            os.makedirs(directory, mode=0o750, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=directory,
                                             prefix='.arrivals-')
            with os.fdopen(fd, 'w') as f:
                json.dump(data, f, indent=1)
            # Atomic: a reader (or a crash) sees the old record or the new.
            os.replace(temporary, self.path)
        except OSError as exc:
            # Kept in memory: this process will not decide it again; a
            # restarted one may, once.
            LOG.warning('Cannot keep the arrivals record %s: %s', self.path,
                        exc)
        self._entries = entries
