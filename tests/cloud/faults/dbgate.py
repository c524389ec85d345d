"""A gate between some of the cloud's services and its database.

A TCP forwarder on 127.0.0.1, a process of its own: the services given
its address reach MariaDB through it while it runs. Closed, the process
is killed, so every connection through it is cut and new ones are
refused, as a database host that went away does; opened again, it
listens on the same port. The other services keep their own connections
to MariaDB and notice nothing.

A process, not threads of the test's: the test process may have
eventlet's monkey-patching (nova's package does it when imported), under
which blocking sockets in plain threads stall.
"""

import os
import signal
import socket
import subprocess
import sys
import threading

from tests import forwarding

ADDRESS = '127.0.0.1'
START_TIMEOUT = 30
# Where ``python -m`` finds this module: the checkout's root.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


class DatabaseGate:
    """Forwards ADDRESS:``port`` to ADDRESS:``target_port`` while open."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.port = None
        self._process = None

    def open(self):
        """Start forwarding (on the same port after a close): the port."""
        if self._process is not None:
            return self.port
        process = subprocess.Popen(
            [sys.executable, '-m', __name__, str(self.port or 0),
             str(self.target_port)],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
            cwd=ROOT)
        line = process.stdout.readline()
        if not line.strip().isdigit():
            process.kill()
            process.wait(START_TIMEOUT)
            raise RuntimeError(f'the database gate did not start: {line!r}')
        self.port = int(line)
        self._process = process
        return self.port

    def close(self):
        """Cut every connection through the gate and refuse new ones."""
        process, self._process = self._process, None
        if process is not None:
            process.send_signal(signal.SIGKILL)
            process.wait(START_TIMEOUT)
            process.stdout.close()


# -- the forwarding process ---------------------------------------------

def serve(port, target_port):
    """Listen on ADDRESS:``port`` (0: any), print the port, forward."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((ADDRESS, port))
    listener.listen(64)
    print(listener.getsockname()[1], flush=True)
    while True:
        client, _ = listener.accept()
        try:
            server = socket.create_connection((ADDRESS, target_port))
        except OSError:
            client.close()
            continue
        for source, sink in ((client, server), (server, client)):
            threading.Thread(target=forwarding.pump, args=(source, sink),
                             daemon=True).start()


if __name__ == '__main__':
    serve(int(sys.argv[1]), int(sys.argv[2]))
