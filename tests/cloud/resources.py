"""Things a test makes in the cloud: an image, a provider network.

Each takes a keystoneauth session (``ControlPlane.admin_session()``)
and talks to the service's API at 127.0.0.1.
"""

import os
import struct
import time

from tests.cloud import endpoints
from tests.cloud import layout as lay

IMAGE_MIB = 4
# TEST-NET-2 (RFC 5737): addresses no network uses. The subnet is only
# a record in neutron here; nothing on this machine gets an address in it.
DEFAULT_CIDR = '198.51.100.0/24'


class ResourceError(Exception):
    """A resource did not reach the state a test needs."""


# The boot sector's code: ``cli; hlt; jmp $-1``. The guest's CPU stops
# for good once the firmware hands over, so QEMU's emulation thread
# sleeps: a guest that found nothing to boot runs the firmware's retry
# loop instead, and under TCG in a TCG lab host that took the lab host's
# whole CPU from nova-compute and our agent.
HALT_CODE = bytes((0xFA, 0xF4, 0xEB, 0xFD))
SECTOR = 512
PARTITION_TABLE = 446
PARTITION_START = 2048
LINUX_PARTITION = 0x83
BOOT_SIGNATURE = b'\x55\xaa'


def halting_boot_sector(mib):
    """A master boot record that halts the CPU, with one partition.

    The partition is there for glance's and nova's format inspectors:
    a boot signature without a partition is refused as a broken
    partition table; with one, the disk is a whole-disk image they
    accept as ``raw``.
    """
    sector = bytearray(SECTOR)
    sector[:len(HALT_CODE)] = HALT_CODE
    sectors = mib * 1024 * 1024 // SECTOR
    entry = struct.pack('<B3BB3BII', 0x80, 0, 0, 0, LINUX_PARTITION,
                        0, 0, 0, PARTITION_START,
                        sectors - PARTITION_START)
    sector[PARTITION_TABLE:PARTITION_TABLE + len(entry)] = entry
    sector[SECTOR - 2:] = BOOT_SIGNATURE
    return bytes(sector)


def make_raw_image(path, mib=IMAGE_MIB):
    """A raw disk of ``mib`` MiB that boots into a halted CPU.

    It boots no OS: nova needs a disk to copy, the tests a QEMU process
    whose memory and threads the kernel places.
    """
    with open(path, 'wb') as f:
        f.write(halting_boot_sector(mib))
        f.truncate(mib * 1024 * 1024)
    return path


def raw_image(session, workdir, name):
    """A halting raw disk made in ``workdir`` and uploaded as ``name``."""
    return upload_image(session, make_raw_image(
        os.path.join(workdir, f'{name}.raw')), name=name)


def upload_image(session, path, name='numa-cloud-raw', timeout=60):
    """Upload the raw disk at ``path`` to glance; the image once active.

    Its guests are powered off at once (``os_shutdown_timeout`` 0): a
    halted CPU never answers ACPI's power button, and nova would wait
    its ``shutdown_timeout`` (60 s) for it before each cold migration
    and resize.
    """
    base = endpoints.url('glance') + '/v2/images'
    image = session.post(base, json={
        'name': name, 'disk_format': 'raw', 'container_format': 'bare',
        'visibility': 'public', 'os_shutdown_timeout': '0'}).json()
    with open(path, 'rb') as f:
        session.put(f'{base}/{image["id"]}/file', data=f,
                    headers={'Content-Type': 'application/octet-stream',
                             'Content-Length': str(os.path.getsize(path))})
    return wait_for(lambda: session.get(f'{base}/{image["id"]}').json(),
                    lambda body: body['status'] == 'active',
                    f'image {image["id"]} active', timeout)


def create_provider_network(session, name='physnet1-flat',
                            cidr=DEFAULT_CIDR, physnet=lay.PHYSNET,
                            shared=True):
    """A flat network on ``physnet`` with one subnet, no DHCP.

    Shared with every project unless ``shared`` is false: then only the
    session's project (the admin's) sees it, and a server that names no
    network (tempest's) never has two to choose from.
    Returns ``(network, subnet)`` as neutron shows them.
    """
    base = endpoints.url('neutron') + '/v2.0'
    network = session.post(f'{base}/networks', json={'network': {
        'name': name, 'shared': shared,
        'provider:network_type': 'flat',
        'provider:physical_network': physnet}}).json()['network']
    subnet = session.post(f'{base}/subnets', json={'subnet': {
        'name': f'{name}-subnet', 'network_id': network['id'],
        'ip_version': 4, 'cidr': cidr, 'gateway_ip': None,
        'enable_dhcp': False}}).json()['subnet']
    return network, subnet


def provider_network(session, name='physnet1-flat'):
    """The shared flat network on physnet1: found, or made as ``name``.

    neutron refuses a second flat network on a physnet, so whichever a
    test made first is the one every other uses.
    """
    found = session.get(
        endpoints.url('neutron') + '/v2.0/networks', params={
            'provider:physical_network': lay.PHYSNET,
            'provider:network_type': 'flat'}).json()['networks']
    if found:
        return found[0]
    network, _subnet = create_provider_network(session, name)
    return network


def delete_network(session, network_id):
    """Delete the network (its subnets go with it)."""
    session.delete(f"{endpoints.url('neutron')}/v2.0/networks/{network_id}")


def port_of(session, server_id):
    """The server's one port, as neutron shows it (its binding too)."""
    (port,) = session.get(
        endpoints.url('neutron') + '/v2.0/ports',
        params={'device_id': server_id}).json()['ports']
    return port


def wait_for(fetch, done, what, timeout, interval=0.5):
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise ResourceError(f'{what}: not after {timeout} s '
                                f'(last seen: {value})')
        time.sleep(interval)
