"""Open vSwitch uplinks: the interfaces that carry each physnet.

The kernel does not know which OVS bridge a port belongs to; OVSDB does.
Which bridge carries a physnet is OVN's ``ovn-bridge-mappings`` (kept in
OVSDB itself) or, with the ML2/OVS agent, its ``[ovs] bridge_mappings``
(neutron's configuration, read when it is on the agent's command line).
The answer is ``(physnet, interface)`` pairs; the interfaces' NUMA nodes
come from sysfs like any other uplink's (:mod:`agent.sensors.discovery`).

Reading only: ``ovs-vsctl`` queries, never a change.
"""

import os
import subprocess

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

VSCTL = 'ovs-vsctl'
TIMEOUT_S = 5


def parse_mappings(text):
    """``physnet1:br-ex,physnet2:br-vlan`` as {physnet: bridge}."""
    mappings = {}
    for item in (text or '').strip().strip('"').split(','):
        physnet, _, bridge = item.strip().partition(':')
        if physnet and bridge:
            mappings[physnet] = bridge
    return mappings


class OvsdbUplinks:
    """The uplinks of the OVS bridges that carry physnets, from OVSDB.

    ``db`` is an OVSDB remote (``unix:/run/openvswitch/db.sock``),
    ``configured`` the ML2/OVS agent's bridge mappings, which win over
    OVN's for the same physnet.
    """

    def __init__(self, db, configured=None, run=subprocess.run,
                 exists=os.path.exists):
        self._db = db
        self._configured = dict(configured or {})
        self._run = run
        self._exists = exists

    def _socket_missing(self):
        """Why a local OVSDB cannot answer, or None.

        A host without Open vSwitch has no socket: said at once, rather
        than after starting ovs-vsctl to find out.
        """
        kind, _, path = self._db.partition(':')
        if kind == 'unix' and not self._exists(path):
            return f'no OVSDB socket at {path}'
        return None

    def _vsctl(self, *args):
        missing = self._socket_missing()
        if missing:
            raise OSError(missing)
        result = self._run(
            [VSCTL, f'--db={self._db}', f'--timeout={TIMEOUT_S}', *args],
            capture_output=True, text=True, timeout=TIMEOUT_S + 5)
        if result.returncode:
            raise OSError(result.stderr.strip() or f'exit {result.returncode}')
        return result.stdout

    def uplinks(self):
        """``(physnet, interface)`` pairs; [] when OVSDB cannot tell."""
        try:
            mappings = parse_mappings(self._vsctl(
                '--if-exists', 'get', 'Open_vSwitch', '.',
                'external_ids:ovn-bridge-mappings'))
            mappings.update(self._configured)
            pairs = []
            for physnet, bridge in sorted(mappings.items()):
                pairs.extend((physnet, name) for name in
                             self._vsctl('list-ifaces', bridge).split())
        except (OSError, subprocess.SubprocessError) as exc:
            LOG.info('Open vSwitch uplinks not read from %s (%s); name them '
                     'in [numa_policy_agent] physnet_interfaces if OVS '
                     'carries your physnets', self._db, exc)
            return []
        return pairs
