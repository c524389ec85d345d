"""Traffic of SR-IOV VFs passed to guests, from their PF's counters.

A guest's SR-IOV VF (nova's ``vnic_type=direct``, an ``<interface
type='hostdev'>``) bypasses the host's network stack: libvirt has no
interface statistics for it. The VF's physical function still counts
its traffic per VF where its driver keeps such counters; the kernel
gives them with the PF's link (rtnetlink ``RTM_GETLINK`` asked for VF
details: ``IFLA_VFINFO_LIST``, each VF's ``IFLA_VF_STATS``). A driver
that keeps none reports zeros, indistinguishable from silence.

Which PF and which VF index a guest's device is comes from sysfs: the
VF's PCI device links its PF (``physfn``), and the PF links each of its
VFs (``virtfn<N>``). The parsing is pure; :func:`query` talks to the
kernel and :func:`vf_of` reads sysfs from a root path, so tests read
fixture trees.
"""

import os
import socket
import struct
from xml.etree import ElementTree

PCI_DEVICES = 'sys/bus/pci/devices'

# rtnetlink, from linux/rtnetlink.h, linux/netlink.h and linux/if_link.h.
RTM_NEWLINK = 16  # the kernel's answer to RTM_GETLINK
RTM_GETLINK = 18
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
IFLA_IFNAME = 3
IFLA_VFINFO_LIST = 22
IFLA_EXT_MASK = 29
RTEXT_FILTER_VF = 1
IFLA_VF_INFO = 1
IFLA_VF_MAC = 1
IFLA_VF_STATS = 8
VF_STATS_RX_PACKETS = 0
VF_STATS_TX_PACKETS = 1
VF_STATS_RX_BYTES = 2
VF_STATS_TX_BYTES = 3
# The flag bits of an attribute's type (nested, network byte order).
NLA_TYPE_MASK = 0x3fff

_NLMSGHDR = struct.Struct('=IHHII')
_IFINFOMSG = struct.Struct('=BxHiII')
_RTATTR = struct.Struct('=HH')
_ERROR = struct.Struct('=i')
RECEIVE_BYTES = 1 << 20


def vf_addresses(xml):
    """PCI addresses (``0000:3b:02.1``) of the guest's VF interfaces."""
    root = ElementTree.fromstring(xml)
    found = []
    for address in root.findall(
            "./devices/interface[@type='hostdev']/source/address"):
        if address.get('type', 'pci') != 'pci':
            continue
        try:
            found.append('%04x:%02x:%02x.%x' % tuple(
                int(address.get(key, '0'), 16)
                for key in ('domain', 'bus', 'slot', 'function')))
        except ValueError:
            continue
    return found


def vf_of(root, address):
    """(PF interface name, VF index) of a VF's PCI address, or None.

    None when the device is no VF (no ``physfn``), or its PF has no
    network interface on the host.
    """
    device = os.path.join(root, PCI_DEVICES, address)
    pf = os.path.join(device, 'physfn')
    try:
        names = sorted(os.listdir(os.path.join(pf, 'net')))
        links = os.listdir(pf)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not names:
        return None
    target = os.path.realpath(device)
    for link in links:
        if link.startswith('virtfn') and link[6:].isdigit():
            if os.path.realpath(os.path.join(pf, link)) == target:
                return names[0], int(link[6:])
    return None


def _align(length):
    return (length + 3) & ~3


def attributes(data):
    """``{type: payload}`` of a run of netlink attributes: pure.

    A type repeated keeps its last payload; use :func:`attribute_list`
    where repeats matter.
    """
    return dict(attribute_list(data))


def attribute_list(data):
    """[(type, payload)] of a run of netlink attributes, in order: pure."""
    found = []
    offset = 0
    while offset + _RTATTR.size <= len(data):
        length, kind = _RTATTR.unpack_from(data, offset)
        if length < _RTATTR.size or offset + length > len(data):
            break
        found.append((kind & NLA_TYPE_MASK,
                      data[offset + _RTATTR.size:offset + length]))
        offset += _align(length)
    return found


def _u64(payload):
    return struct.unpack_from('=Q', payload)[0] if len(payload) >= 8 else 0


def vf_traffic(link_attributes):
    """``{VF index: (bytes, packets)}`` from a link's attributes: pure.

    ``link_attributes``: the payload after the link message's header.
    """
    vf_list = attributes(link_attributes).get(IFLA_VFINFO_LIST)
    if vf_list is None:
        return {}
    traffic = {}
    for kind, info in attribute_list(vf_list):
        if kind != IFLA_VF_INFO:
            continue
        fields = attributes(info)
        mac, stats = fields.get(IFLA_VF_MAC), fields.get(IFLA_VF_STATS)
        if mac is None or len(mac) < 4 or stats is None:
            continue
        (vf,) = struct.unpack_from('=I', mac)
        counters = attributes(stats)
        traffic[vf] = (
            sum(_u64(counters.get(k, b''))
                for k in (VF_STATS_RX_BYTES, VF_STATS_TX_BYTES)),
            sum(_u64(counters.get(k, b''))
                for k in (VF_STATS_RX_PACKETS, VF_STATS_TX_PACKETS)))
    return traffic


def _attribute(kind, payload):
    length = _RTATTR.size + len(payload)
    return (_RTATTR.pack(length, kind) + payload
            + bytes(_align(length) - length))


def request(ifname, seq=1):
    """The RTM_GETLINK message asking for ``ifname`` with its VFs: pure."""
    body = (_IFINFOMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)
            + _attribute(IFLA_IFNAME, ifname.encode() + b'\0')
            + _attribute(IFLA_EXT_MASK, struct.pack('=I', RTEXT_FILTER_VF)))
    return _NLMSGHDR.pack(_NLMSGHDR.size + len(body), RTM_GETLINK,
                          NLM_F_REQUEST, seq, 0) + body


def parse_reply(reply):
    """The link's attributes from the kernel's answer: pure.

    :raises OSError: with the kernel's errno when it refused (ENODEV for
        a link that does not exist).
    """
    if len(reply) < _NLMSGHDR.size:
        raise OSError(0, 'short netlink answer')
    length, kind, _, _, _ = _NLMSGHDR.unpack_from(reply)
    body = reply[_NLMSGHDR.size:length]
    if kind == NLMSG_ERROR:
        (error,) = _ERROR.unpack_from(body)
        raise OSError(-error, os.strerror(-error))
    if kind != RTM_NEWLINK:
        raise OSError(0, f'unexpected netlink message {kind}')
    return body[_IFINFOMSG.size:]


def query(ifname):
    """``{VF index: (bytes, packets)}`` of the PF ``ifname``, from the kernel.

    :raises OSError: when the kernel refuses (no such link).
    """
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW,
                       socket.NETLINK_ROUTE) as sock:
        sock.settimeout(2.0)
        sock.bind((0, 0))
        sock.send(request(ifname))
        return vf_traffic(parse_reply(sock.recv(RECEIVE_BYTES)))
