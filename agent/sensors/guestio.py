"""A guest's network request rate, from libvirt's interface counters: pure.

virDomainInterfaceStats gives cumulative byte and packet counters per
interface device (``<interface><target dev=...>``); the rate is their
delta over the agent's period. Counters start again at zero when a guest
restarts or an interface is replugged; a period in which a total went
down has no rate rather than a negative one.

What a host can count is packets and bytes, not requests; the rate is an
estimate of requests per second from both (:func:`request_rate`): every
packet counts as one, and so does every full frame's worth of bytes. The
bytes are needed because the host-side device of a virtio NIC counts the
large segments segmentation offload hands it (up to 64 KiB each), not
the frames on the wire: a bulk transfer moves 40 times more frames than
it shows packets. A small request (an RPC, a key-value get) is a packet
or two each way, so for request/response traffic the estimate counts
packets, as the seed's request rate did.
"""

from xml.etree import ElementTree

# Positions in virDomainInterfaceStats' tuple.
RX_BYTES = 0
RX_PACKETS = 1
TX_BYTES = 4
TX_PACKETS = 5
# The bytes one request stands for in a bulk transfer: a full Ethernet
# frame's payload at the usual MTU.
FRAME_BYTES = 1500


def interface_devices(xml):
    """Host-side device names of the guest's interfaces, in XML order.

    An SR-IOV VF (``type='hostdev'``) has none: its traffic never
    crosses the host's network stack (see :mod:`agent.sensors.vfstats`).
    """
    root = ElementTree.fromstring(xml)
    return [target.get('dev')
            for interface in root.findall('./devices/interface')
            if interface.get('type') != 'hostdev'
            for target in interface.findall('target')
            if target.get('dev')]


def traffic(stats):
    """(bytes, packets) received and sent, from one interfaceStats tuple."""
    return (stats[RX_BYTES] + stats[TX_BYTES],
            stats[RX_PACKETS] + stats[TX_PACKETS])


def add(totals):
    """(bytes, packets) summed over several interfaces' traffic."""
    return (sum(t[0] for t in totals), sum(t[1] for t in totals))


def windowed(window, sample, rate_of, min_seconds):
    """Advance a rate window by one (time, value) sample.

    ``window`` is (baseline sample, last rate) or None. A sample less than
    ``min_seconds`` after the baseline keeps both: the agent observes
    again within a period after it acted, and a rate over a few
    milliseconds is noise, or zero when the clock has not moved.
    Returns the new window; its second item is the rate to use.
    """
    if window is not None and sample[0] - window[0][0] < min_seconds:
        return window
    baseline = None if window is None else window[0]
    return sample, rate_of(baseline, sample)


def request_rate(previous, current):
    """Estimated requests per second between two (time, traffic) samples.

    Traffic is (bytes, packets); the estimate is the larger of packets
    and full frames (``FRAME_BYTES``) per second, see the module's text.
    """
    if previous is None or current is None:
        return 0.0
    elapsed = current[0] - previous[0]
    sent_bytes = current[1][0] - previous[1][0]
    sent_packets = current[1][1] - previous[1][1]
    if elapsed <= 0 or sent_bytes < 0 or sent_packets < 0:
        return 0.0
    return max(sent_packets, sent_bytes / FRAME_BYTES) / elapsed


# The element and attribute naming the host side of an interface, per
# type: a Linux or OVS bridge, the device a macvtap sits on, a libvirt
# network (whose bridge only libvirt knows).
_SOURCES = {'bridge': 'bridge', 'direct': 'dev', 'network': 'network'}


def interface_sources(xml):
    """(type, name) of each interface's host side, in XML order.

    ``('bridge', 'br0')``, ``('direct', 'ens1f0')`` (macvtap),
    ``('network', 'default')``; other types (``hostdev``: see
    :func:`agent.sensors.vfstats.vf_addresses`, ``vhostuser``,
    ``ethernet``) have none here.
    """
    root = ElementTree.fromstring(xml)
    found = []
    for interface in root.findall('./devices/interface'):
        kind = interface.get('type')
        source = interface.find('source')
        if kind in _SOURCES and source is not None:
            name = source.get(_SOURCES[kind])
            if name:
                found.append((kind, name))
    return found


def uses_vhost(xml):
    """Whether any interface may have vhost workers: virtio on a tap.

    A virtio interface of type bridge, network, direct or ethernet gets
    vhost-net unless ``<driver name='qemu'>`` says otherwise; a VF, a
    vhost-user port or another model has none.
    """
    root = ElementTree.fromstring(xml)
    for interface in root.findall('./devices/interface'):
        if interface.get('type') not in ('bridge', 'network', 'direct',
                                         'ethernet'):
            continue
        model = interface.find('model')
        driver = interface.find('driver')
        if model is None or model.get('type') != 'virtio':
            continue
        if driver is None or driver.get('name') != 'qemu':
            return True
    return False
