"""One direction of a TCP forwarder, shared by the tests' forwarders.

tests/functional/collector/fixtures.py (``TcpProxy``, in process) and
tests/cloud/faults/dbgate.py (a process of its own) each pump both
directions of a forwarded connection with it.
"""

import socket

CHUNK = 65536


def pump(source, sink):
    """Copy ``source`` to ``sink`` until either ends; then shut both."""
    try:
        while True:
            data = source.recv(CHUNK)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    for sock in (source, sink):
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
