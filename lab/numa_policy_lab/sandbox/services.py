"""The collector and the read-only REST API, as fixtures of the sandbox."""

import json
import threading
import urllib.request

import fixtures
import oslo_messaging

from nova_numa_policy.collector import cmd as collector_cmd
from nova_numa_policy.collector import db
from nova_numa_policy.collector import migration
from nova_numa_policy.rest import app as rest_app
from nova_numa_policy.rest import cmd as rest_cmd

# The API runs with noauth: these headers make the caller an admin.
ADMIN_HEADERS = {'X-Roles': 'admin', 'X-Project-Id': 'sandbox',
                 'X-User-Id': 'sandbox'}


class Collector(fixtures.Fixture):
    """The production collector (listener + SQL storage) on ``conf``."""

    def __init__(self, conf):
        super().__init__()
        self._conf = conf

    def _setUp(self):
        migration.upgrade_url(self._conf.numa_policy_collector.connection)
        transport = oslo_messaging.get_notification_transport(self._conf)
        self.addCleanup(transport.cleanup)
        self.collector = collector_cmd.Collector(self._conf,
                                                 transport=transport)
        self.collector.start()
        self.addCleanup(self.collector.stop)

    @property
    def counters(self):
        return self.collector.endpoint.counters


class ApiServer(fixtures.Fixture):
    """The REST API on 127.0.0.1 and a free port.

    The port closes at cleanup, whatever happened in between.
    """

    def __init__(self, conf, port=0):
        super().__init__()
        self._conf = conf
        self._port = port

    def _setUp(self):
        storage = db.Storage.from_conf(self._conf)
        self.addCleanup(storage.dispose)
        application = rest_app.build_app(self._conf, storage)
        # The production server: requests go to the debug log, so the
        # sandbox's output stays its summary, not an access log.
        server = rest_cmd.make_server('127.0.0.1', self._port, application)
        self.addCleanup(server.server_close)
        thread = threading.Thread(target=server.serve_forever,
                                  name='numa-policy-api', daemon=True)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(server.shutdown)
        self.port = server.server_address[1]
        self.url = f'http://127.0.0.1:{self.port}'

    def get(self, path):
        request = urllib.request.Request(self.url + path,
                                         headers=ADMIN_HEADERS)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read().decode('utf-8'))

    def get_all(self, path, key):
        """Every item of a paged listing, following its ``next`` links."""
        items = []
        body = self.get(path)
        while True:
            items.extend(body[key])
            nexts = [link['href'] for link in body.get('links', ())
                     if link['rel'] == 'next']
            if not nexts:
                return items
            body = self.get(nexts[0][len(self.url):])
