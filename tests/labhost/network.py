"""A lab host's networks beyond its NUMA NIC, for the cloud tier.

Pure: a :class:`LabNetwork` in, QEMU arguments and the guest's settings
out. Two optional NICs, both on the root PCIe bus (no NUMA node of
their own), away from the NIC of the topology (``topology.nic_args``)
whose locality the host tier tests:

* **cloud**: QEMU's user-mode network, restricted (no route out of the
  lab host), where each TCP connection to ``GUEST_GATEWAY:port`` is
  relayed to ``127.0.0.1:port`` on this machine by a process QEMU
  starts for that connection (``guestfwd=...-cmd:``,
  ``tests/labhost/relay.py``). Nothing else of this machine, and
  nothing beyond it, is reachable.
* **link**: an Ethernet link between two lab hosts, carried by their
  two QEMU processes over a unix socket (``-netdev stream``): one
  listens, the other connects.

The cloud NIC may also carry, only when asked (:class:`SshAccess`), one
forward the other way: a port of a loopback address of this machine's
(127.0.0.2, 127.0.0.3, ...: one per lab host, the same port for all, as
tempest's single ``ssh_port`` wants) to the lab host's sshd, which
``guest.sh`` then starts. QEMU listens on that loopback address only.

Inside the lab host, ``guest.sh`` finds each NIC by its MAC address,
names it (``cloud0``, ``link0``) and gives it its static address.
"""

import dataclasses
import ipaddress
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RELAY = os.path.join(HERE, 'relay.py')
# QEMU's user-mode network: the guest's usual address in it, and the
# address QEMU answers for the forwarded ports (tests/cloud/endpoints.py).
CLOUD_ADDRESS = '10.0.2.15/24'
CLOUD_GATEWAY = '10.0.2.100'
CLOUD_NIC = 'cloud0'
LINK_NIC = 'link0'
# Locally administered MAC addresses (QEMU's own prefix), one per role.
CLOUD_MAC = '52:54:00:c1:00:01'
LINK_MAC_PREFIX = '52:54:00:c1:01:'
LINK_NETWORK = ipaddress.ip_network('192.168.77.0/24')
LOOPBACK = ipaddress.ip_network('127.0.0.0/8')
# 127.0.0.1 is this machine's own services' (the cloud's endpoints): lab
# hosts' sshd forwards start after it.
FIRST_SSH_LOOPBACK = ipaddress.ip_address('127.0.0.2')
SSH_PORT = 2222
GUEST_SSH_PORT = 22
# Where guest.sh keeps sshd's configuration, host key and the
# authorized key: the lab host's tmpfs, gone with it.
GUEST_SSH_DIR = '/run/lab-ssh'


@dataclasses.dataclass(frozen=True)
class LinkEnd:
    """One lab host's end of a link: the socket, its role, its address.

    ``address``: the lab host's address on the link, with its prefix.
    """

    socket: str
    server: bool
    address: str

    @property
    def ip(self):
        return str(ipaddress.ip_interface(self.address).ip)

    @property
    def mac(self):
        host = int(ipaddress.ip_interface(self.address).ip) & 0xff
        return f'{LINK_MAC_PREFIX}{host:02x}'


def link_ends(socket, count=2, network=LINK_NETWORK):
    """The ends of a link for ``count`` lab hosts: the first listens.

    More than two QEMU processes cannot share one stream socket; two is
    what a live migration needs.
    """
    if count != 2:
        raise ValueError('a link joins exactly two lab hosts')
    hosts = network.hosts()
    return tuple(LinkEnd(socket, i == 0,
                         f'{next(hosts)}/{network.prefixlen}')
                 for i in range(count))


def loopback_address(index):
    """The loopback address of the ``index``-th lab host's sshd forward."""
    address = FIRST_SSH_LOOPBACK + index
    if index < 0 or address not in LOOPBACK or address == LOOPBACK[-1]:
        raise ValueError(f'no loopback address for lab host {index}')
    return str(address)


@dataclasses.dataclass(frozen=True)
class SshAccess:
    """A forward from ``address``:``port`` of this machine to sshd.

    ``authorized_key``: the one public key (an OpenSSH line) that logs
    in, as root. ``sshd``, ``keygen``: the programs the lab host runs
    (tests/labhost/tools.py); ``library_path``: directories of the
    libraries sshd needs that this machine lacks ('' for none).
    """

    address: str
    port: int
    authorized_key: str
    sshd: str
    keygen: str
    library_path: str = ''

    def __post_init__(self):
        # A forward reachable from beyond this machine would let anyone
        # who has the key into a lab host: only loopback addresses.
        if ipaddress.ip_address(self.address) not in LOOPBACK:
            raise ValueError(f'{self.address}: a lab host\'s sshd is '
                             f'forwarded from a loopback address only')
        if not 0 < int(self.port) < 65536:
            raise ValueError(f'{self.port}: not a TCP port')
        key = self.authorized_key.strip()
        if not key or '\n' in key:
            raise ValueError('the authorized key is one OpenSSH line')


@dataclasses.dataclass(frozen=True)
class LabNetwork:
    """What a lab host is connected to besides its NUMA NIC.

    ``cloud_ports``: the ports of this machine's 127.0.0.1 the lab host
    reaches at CLOUD_GATEWAY (none: no cloud NIC). ``relay``: the
    command, as a tuple, that QEMU runs per connection with the port
    appended; its stdin and stdout are the guest's connection.
    """

    cloud_ports: tuple = ()
    relay: tuple = ()
    link: LinkEnd | None = None
    ssh: SshAccess | None = None

    @property
    def has_cloud_nic(self):
        return bool(self.cloud_ports) or self.ssh is not None


def python_relay(python=None):
    """The relay command: relay.py, isolated, in this machine's Python."""
    return (python or sys.executable, '-I', '-S', RELAY)


def cloud_network(ports, link=None, relay=None, ssh=None):
    """A LabNetwork reaching ``ports`` of 127.0.0.1 (and ``link``).

    ``ssh``: an :class:`SshAccess` to forward to the lab host's sshd;
    None (the default): no sshd, no forward into the lab host.
    """
    return LabNetwork(cloud_ports=tuple(sorted(set(ports))),
                      relay=tuple(relay or python_relay()), link=link,
                      ssh=ssh)


def qemu_escape(value):
    """``value`` inside a QEMU option list (a comma is doubled)."""
    return value.replace(',', ',,')


def relay_command(relay, port):
    """The command line QEMU's slirp runs for one forwarded connection.

    libslirp splits it the way a shell would (g_shell_parse_argv), and
    runs it without a shell.
    """
    words = [*relay, str(port)]
    for word in words:
        if any(c in word for c in ' \'"\\$`'):
            raise ValueError(f'{word!r}: the relay command words must '
                             f'need no quoting')
    return ' '.join(words)


def ssh_forward(ssh, guest=CLOUD_ADDRESS):
    """The hostfwd option of ``ssh``: its loopback port to sshd's."""
    inside = ipaddress.ip_interface(guest).ip
    return (f',hostfwd=tcp:{ssh.address}:{int(ssh.port)}'
            f'-{inside}:{GUEST_SSH_PORT}')


def cloud_args(ports, relay, gateway=CLOUD_GATEWAY, mac=CLOUD_MAC,
               ssh=None):
    """The cloud NIC: user-mode, restricted, one forward per port.

    restrict=on keeps the forwards asked for, and only them: the
    guest's connections to ``ports`` and, with ``ssh``, this machine's
    connections to the lab host's sshd.
    """
    if ports and not relay:
        raise ValueError('the cloud NIC needs a relay command')
    forwards = ''.join(
        f',guestfwd=tcp:{gateway}:{int(port)}-cmd:'
        f'{qemu_escape(relay_command(relay, int(port)))}'
        for port in sorted(set(ports)))
    if ssh is not None:
        forwards += ssh_forward(ssh)
    return ['-netdev', f'user,id=cloud,restrict=on{forwards}',
            '-device', f'virtio-net-pci,netdev=cloud,mac={mac},'
                       f'bus=pcie.0,romfile=']


def link_args(end):
    """The link NIC: a stream over ``end.socket``, listening or not."""
    server = 'on' if end.server else 'off'
    return ['-netdev', f'stream,id=link,server={server},addr.type=unix,'
                       f'addr.path={qemu_escape(end.socket)}',
            '-device', f'virtio-net-pci,netdev=link,mac={end.mac},'
                       f'bus=pcie.0,romfile=']


def qemu_args(network):
    """Every QEMU argument ``network`` adds to a lab host's."""
    if network is None:
        return []
    args = []
    if network.has_cloud_nic:
        args += cloud_args(network.cloud_ports, network.relay,
                           ssh=network.ssh)
    if network.link is not None:
        args += link_args(network.link)
    return args


def guest_settings(network):
    """config.sh values for guest.sh: none when there is no network."""
    if network is None:
        return {}
    values = {}
    if network.has_cloud_nic:
        values.update(LAB_CLOUD_MAC=CLOUD_MAC, LAB_CLOUD_NIC=CLOUD_NIC,
                      LAB_CLOUD_ADDRESS=CLOUD_ADDRESS)
    if network.link is not None:
        values.update(LAB_LINK_MAC=network.link.mac, LAB_LINK_NIC=LINK_NIC,
                      LAB_LINK_ADDRESS=network.link.address)
    if network.ssh is not None:
        values.update(ssh_settings(network.ssh, link=network.link))
    return values


def sshd_config(guest=CLOUD_ADDRESS, directory=GUEST_SSH_DIR, link=None):
    """The lab host's sshd_config: root, by the one key, on the cloud NIC.

    And on the link's address, port 22, when the lab host has a link:
    nova-compute's cold migration and resize reach the other compute by
    ``ssh <its address>`` (``mkdir``, ``touch``, ``scp`` of the disks).

    No PAM: the lab host has no PAM stack of its own to trust, and a
    key is the only way in (no password, no keyboard-interactive).
    Only an ed25519 host key: generating RSA keys costs seconds under
    emulation, and tempest's client (paramiko) accepts ed25519.
    """
    inside = ipaddress.ip_interface(guest).ip
    # scp speaks SFTP: sshd's own, with no sftp-server program to find.
    on_link = () if link is None else (f'ListenAddress {link.ip}:22',
                                       'Subsystem sftp internal-sftp')
    return '\n'.join((
        f'ListenAddress {inside}:{GUEST_SSH_PORT}', *on_link,
        f'HostKey {directory}/ssh_host_ed25519_key',
        f'PidFile {directory}/sshd.pid',
        f'AuthorizedKeysFile {directory}/authorized_keys',
        'PermitRootLogin prohibit-password',
        'AllowUsers root',
        'PubkeyAuthentication yes',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'PermitEmptyPasswords no',
        'UsePAM no',
        # The lab host has no resolver to ask for the client's name.
        'UseDNS no',
        'AllowTcpForwarding no',
        'X11Forwarding no',
        'LogLevel VERBOSE',
        '')) + '\n'


def ssh_settings(ssh, directory=GUEST_SSH_DIR, link=None):
    """config.sh values that have guest.sh start sshd for ``ssh``."""
    return {'LAB_SSH_DIR': directory,
            'LAB_SSH_SSHD': ssh.sshd,
            'LAB_SSH_KEYGEN': ssh.keygen,
            'LAB_SSH_LIBRARY_PATH': ssh.library_path,
            'LAB_SSH_AUTHORIZED_KEY': ssh.authorized_key.strip(),
            'LAB_SSH_CONFIG': sshd_config(directory=directory, link=link)}
