"""One forwarded connection of a lab host, relayed to this machine's loopback.

QEMU's user-mode network starts this for each TCP connection a lab host
opens to a forwarded port (``guestfwd=...-cmd:``, tests/labhost/
network.py), with the guest's connection as stdin and stdout. It
connects to ``127.0.0.1:<port>`` and copies bytes both ways until
either side closes. The address is fixed here: whatever a lab host is
given, a forward reaches this machine's loopback and nothing else.

The standard library only, so that ``python -I -S`` runs it: a
connection costs one small interpreter start, and no package (socat)
is needed.
"""

import os
import selectors
import socket
import sys

LOOPBACK = '127.0.0.1'
CHUNK = 65536


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def relay(port, guest_in=0, guest_out=1):
    """Copy between the guest's descriptors and 127.0.0.1:``port``."""
    try:
        upstream = socket.create_connection((LOOPBACK, port))
    except OSError:
        return 1
    selector = selectors.DefaultSelector()
    selector.register(upstream, selectors.EVENT_READ)
    selector.register(guest_in, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is upstream:
                data = upstream.recv(CHUNK)
                if not data:
                    return 0
                _write_all(guest_out, data)
            else:
                data = os.read(guest_in, CHUNK)
                if not data:
                    # The guest closed its side: the service may still
                    # answer what it was sent.
                    selector.unregister(guest_in)
                    upstream.shutdown(socket.SHUT_WR)
                    continue
                upstream.sendall(data)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    # stderr is the guest's connection too: nothing may be written there.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        return relay(int(argv[0]))
    except OSError:
        return 1


if __name__ == '__main__':
    sys.exit(main())
