"""Where the lab's cloud listens: on this machine, and seen from a lab host.

The services bind 127.0.0.1 only. A lab host's user-mode network
(``-netdev user,restrict=on``) has no route out; QEMU forwards each
connection to ``GUEST_GATEWAY:port`` inside it to ``127.0.0.1:port``
here (``guestfwd``), so a compute's configuration names GUEST_GATEWAY
where this machine's names 127.0.0.1.
"""

HOST_ADDRESS = '127.0.0.1'
# An address of QEMU's user-mode network (10.0.2.0/24), answered by QEMU
# itself inside the lab host: it exists on no interface of this machine.
GUEST_GATEWAY = '10.0.2.100'

PORTS = {
    'keystone': 5000,
    'placement': 8778,
    'nova': 8774,
    'glance': 9292,
    'neutron': 9696,
    'numa-policy': 8799,
    'rabbitmq': 5672,
}

# Forwarded into each compute like a service's port, served by no
# service: tests/cloud/test_compute.py opens and closes it to see the
# forward reach this machine's loopback, and nothing when it is closed.
PROBE_PORT = 8797

# The cloud's own RabbitMQ virtual host: its RPC never meets the
# functional tiers' on the machine's broker.
RABBIT_VHOST = 'numa-cloud'


def url(service, address=HOST_ADDRESS):
    """http://address:port of ``service``."""
    return f'http://{address}:{PORTS[service]}'
