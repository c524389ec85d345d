"""gunicorn settings shared by the control plane's WSGI services.

Given to gunicorn with ``-c``; the rest of each service's settings are
on its command line (tests/cloud/services.py).
"""

import sys


def post_fork(server, worker):
    # keystone, nova, neutron and glance parse sys.argv with oslo.config
    # when their application is built, in the worker: gunicorn's own
    # arguments are not theirs.
    del sys.argv[1:]
