"""A guest's network packet rate, from libvirt's interface counters: pure.

virDomainInterfaceStats gives cumulative counters per interface device
(``<interface><target dev=...>``); the rate is their delta over the
agent's period. Counters start again at zero when a guest restarts or an
interface is replugged; a period in which the total went down has no
rate rather than a negative one.
"""

from xml.etree import ElementTree

# Positions in virDomainInterfaceStats' tuple.
RX_PACKETS = 1
TX_PACKETS = 5


def interface_devices(xml):
    """Host-side device names of the guest's interfaces, in XML order."""
    root = ElementTree.fromstring(xml)
    return [target.get('dev')
            for target in root.findall('./devices/interface/target')
            if target.get('dev')]


def packets(stats):
    """Packets received and sent, from one interfaceStats tuple."""
    return stats[RX_PACKETS] + stats[TX_PACKETS]


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


def packet_rate(previous, current):
    """Packets per second between two (time, total packets) samples."""
    if previous is None or current is None:
        return 0.0
    elapsed = current[0] - previous[0]
    delta = current[1] - previous[1]
    if elapsed <= 0 or delta < 0:
        return 0.0
    return delta / elapsed
