"""The cloud's admin session against a server that drops a request.

What gunicorn does to a request sent on a keep-alive connection it is
closing: the connection ends with no answer (RemoteDisconnected). The
server is a process of its own: in a thread of the test's process it
never answered under the unit tier's runner (whose process imports
nova's eventlet-patched modules).
"""

import http.server
import subprocess
import sys

from keystoneauth1 import exceptions as ks_exceptions

from tests import base as test_base
from tests.cloud import accounts


class _DropsEveryOtherRequest(http.server.BaseHTTPRequestHandler):
    """Closes the connection unanswered on odd requests, answers even ones.

    Prints each request's method, a line each, as it comes.
    """

    requests = 0

    def _serve(self):
        print(self.command, flush=True)
        type(self).requests += 1
        if type(self).requests % 2:
            self.close_connection = True
            return
        body = b'{}'
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_HEAD = do_POST = _serve

    def log_message(self, *args):
        pass


def serve():
    """Serve on a free loopback port; its number is the first line out."""
    server = http.server.HTTPServer(('127.0.0.1', 0),
                                    _DropsEveryOtherRequest)
    print(server.server_address[1], flush=True)
    server.serve_forever()


class ReadRetryingSessionTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.server = subprocess.Popen(
            [sys.executable, '-m', __name__], stdout=subprocess.PIPE,
            text=True)
        self.addCleanup(self._stop)
        port = int(self.server.stdout.readline())
        self.url = f'http://127.0.0.1:{port}/x'
        self.session = accounts.ReadRetryingSession()

    def _stop(self):
        if self.server.poll() is None:
            self.server.kill()
            self.server.communicate()

    def seen(self):
        """The methods the server was sent, once it is stopped."""
        self.server.kill()
        out, _ = self.server.communicate()
        return out.split()

    def test_a_dropped_read_is_sent_again_and_answered(self):
        answer = self.session.get(self.url, authenticated=False)
        self.assertEqual(200, answer.status_code)
        self.assertEqual(['GET', 'GET'], self.seen())

    def test_a_dropped_write_is_not_sent_again(self):
        self.assertRaises(ks_exceptions.ConnectFailure, self.session.post,
                          self.url, json={}, authenticated=False)
        self.assertEqual(['POST'], self.seen())

    def test_a_caller_may_still_ask_for_no_retry(self):
        self.assertRaises(ks_exceptions.ConnectFailure, self.session.get,
                          self.url, authenticated=False, connect_retries=0)
        self.assertEqual(['GET'], self.seen())


if __name__ == '__main__':
    serve()
