"""Each guest's network request rate: libvirt's counters and its VFs' PF.

A guest's interfaces are counted by libvirt (virDomainInterfaceStats on
the host-side device); an SR-IOV VF's traffic never crosses the host's
stack, so it is its PF's per-VF counters (:mod:`agent.sensors.vfstats`),
asked once per PF and observation. The rate is measured over a window
of at least ``rate_window`` (:func:`agent.sensors.guestio.windowed`).
"""

import dataclasses

import libvirt
from oslo_log import log as logging

from agent.backend import connection as connection_mod
from agent.sensors import guestio
from agent.sensors import vfstats

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class _Links:
    """A guest's network links, as its domain XML names them."""

    # Host-side interface devices, in XML order.
    devices: list
    # (PF interface, VF index) of each SR-IOV VF interface.
    vfs: list
    # ((time, (bytes, packets)), request rate) of its last window.
    window: tuple = None


class GuestTraffic:
    """The links and last measured window of every guest."""

    def __init__(self, root, clock, rate_window, vf_traffic=vfstats.query):
        self._root = root
        self._clock = clock
        self._rate_window = rate_window
        self._vf_traffic = vf_traffic
        self._guests = {}  # uuid: _Links
        # Each PF's {VF: (bytes, packets)}, asked of the kernel once per
        # observation, and the PFs that would not answer.
        self._pf_counters = {}
        self._pf_warned = set()

    def learn(self, uuid, xml):
        """Find the guest's devices and VFs in its (new) domain XML."""
        vfs = [vf for vf in (vfstats.vf_of(self._root, address)
                             for address in vfstats.vf_addresses(xml))
               if vf is not None]
        known = self._guests.get(uuid)
        self._guests[uuid] = _Links(guestio.interface_devices(xml), vfs,
                                    known.window if known else None)

    def new_observation(self):
        """Ask each PF afresh from now on: a new period's counters."""
        self._pf_counters = {}

    def start(self, dom, uuid):
        """The guest's first sample: its rate is measured from here."""
        links = self._guests[uuid]
        links.window = ((self._clock(), self._now(dom, uuid)), 0.0)

    def rate(self, dom, uuid):
        """The guest's requests per second over its last window."""
        links = self._guests[uuid]
        links.window = guestio.windowed(
            links.window, (self._clock(), self._now(dom, uuid)),
            guestio.request_rate, self._rate_window)
        return links.window[1]

    def forget_all_but(self, live):
        for uuid in set(self._guests) - live:
            del self._guests[uuid]

    def _now(self, dom, uuid):
        """(bytes, packets) the guest's interfaces received and sent."""
        links = self._guests[uuid]
        totals = []
        for dev in links.devices:
            try:
                totals.append(guestio.traffic(dom.interfaceStats(dev)))
            except libvirt.libvirtError as exc:
                if connection_mod.is_connection_error(exc):
                    raise
                # An interface being unplugged: counted from next period.
                LOG.debug('No stats for %s of %s: %s', dev, uuid, exc)
        for pf, vf in links.vfs:
            totals.append(self._pf_traffic(pf).get(vf, (0, 0)))
        return guestio.add(totals)

    def _pf_traffic(self, pf):
        """{VF index: (bytes, packets)} of a PF, asked once per period."""
        if pf not in self._pf_counters:
            try:
                self._pf_counters[pf] = self._vf_traffic(pf)
            except OSError as exc:
                # Said once per PF: the guests on its VFs read as silent.
                log = LOG.debug if pf in self._pf_warned else LOG.warning
                self._pf_warned.add(pf)
                log('No VF counters from %s: %s', pf, exc)
                self._pf_counters[pf] = {}
        return self._pf_counters[pf]
