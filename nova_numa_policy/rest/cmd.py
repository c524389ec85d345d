"""Entry point ``numa-policy-api``: the API on a small threaded server.

For production, run :mod:`nova_numa_policy.rest.wsgi` under uWSGI or
mod_wsgi; this server suits devstack and tests.
"""

import socketserver
import sys
from wsgiref import simple_server

from oslo_log import log as logging

from nova_numa_policy.rest import wsgi

LOG = logging.getLogger(__name__)


class _ThreadingServer(socketserver.ThreadingMixIn,
                       simple_server.WSGIServer):
    daemon_threads = True


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, format, *args):
        # Requests are logged through oslo.log, not on stderr.
        LOG.debug('%s - %s', self.address_string(), format % args)


def make_server(host, port, application):
    """A threaded WSGI server on ``host:port`` that logs through oslo.log.

    Port 0 picks a free port; ``server_address`` says which.
    """
    return simple_server.make_server(
        host, port, application,
        server_class=_ThreadingServer, handler_class=_QuietHandler)


def main(argv=None):
    application = wsgi.init_application(
        sys.argv[1:] if argv is None else argv)
    conf = wsgi.nnp_conf.CONF.numa_policy_api
    server = make_server(conf.bind_host, conf.bind_port, application)
    LOG.info('numa-policy-api listening on %s:%s', conf.bind_host,
             conf.bind_port)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
