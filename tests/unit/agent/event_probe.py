"""Time from a domain start to the agent's lifecycle callback.

Run as ``python -m tests.unit.agent.event_probe``: libvirt's event loop is
a native thread, and a test process that imported nova has eventlet's
monkey patching in place, under which that thread and a waiting
``threading.Event`` never meet. A fresh interpreter is what the agent
itself runs in (it never imports nova).
"""

import json
import sys
import tempfile
import threading
import time

from agent.backend import connection
from tests import fixtures as host_fixtures
from tests.unit.agent import base


def main():
    connection.start_event_loop()
    seen = threading.Event()
    events = []

    def on_event(uuid, what):
        events.append([uuid, what, time.monotonic()])
        seen.set()

    with tempfile.TemporaryDirectory() as tmp:
        # Its own host file: events of test:///default are shared between
        # connections of the process.
        uri = 'test://' + host_fixtures.write_host_xml(tmp + '/h.xml', [])
        conn = connection.Connection(uri, on_domain_event=on_event)
        try:
            raw = conn.get()
            started_at = time.monotonic()
            raw.createXML(host_fixtures.domain_xml(
                9, base.NO_POLICY).replace(
                    " xmlns:test='http://libvirt.org/schemas/domain/test/1.0'",
                    ''), 0)
            seen.wait(5.0)
        finally:
            conn.close()
    json.dump({'events': [[u, w, t - started_at] for u, w, t in events]},
              sys.stdout)
    return 0


if __name__ == '__main__':
    sys.exit(main())
