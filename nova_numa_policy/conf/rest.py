"""Options of the ``[numa_policy_api]`` group: the read-only REST API."""

from oslo_config import cfg

from nova_numa_policy.conf import base

GROUP = cfg.OptGroup(
    'numa_policy_api',
    title='NUMA policy REST API',
    help='The read-only REST API over the collector database.')

AUTH_STRATEGIES = ('keystone', 'noauth')

OPTS = [
    cfg.HostAddressOpt(
        'bind_host',
        default='127.0.0.1',
        help='''
Address ``numa-policy-api`` listens on.

Possible values:

* An IP address or host name.

Related options:

* ``bind_port``. Under a WSGI server (uWSGI, mod_wsgi) the server's own
  setting applies instead.
'''),
    cfg.PortOpt(
        'bind_port',
        default=8799,
        help='''
TCP port ``numa-policy-api`` listens on.

Possible values:

* A port number.

Related options:

* ``bind_host``
'''),
    cfg.StrOpt(
        'auth_strategy',
        default='keystone',
        choices=AUTH_STRATEGIES,
        help='''
How API requests are authenticated.

``keystone`` validates tokens with keystonemiddleware (configured in
``[keystone_authtoken]``). ``noauth`` trusts the ``X-Roles``,
``X-User-Id`` and ``X-Project-Id`` request headers and is for tests only.

Possible values:

* keystone, noauth

Related options:

* ``[keystone_authtoken]``, ``[oslo_policy] policy_file``
'''),
    cfg.IntOpt(
        'default_limit',
        default=100,
        min=1,
        help='''
Items per page when a request gives no ``limit``.

Possible values:

* A positive integer no greater than ``max_limit``.

Related options:

* ``max_limit``
'''),
    cfg.IntOpt(
        'max_limit',
        default=1000,
        min=1,
        help='''
Largest ``limit`` a request may ask for; larger values are refused with
400.

Possible values:

* A positive integer.

Related options:

* ``default_limit``
'''),
]


register_opts, list_opts = base.group_functions(GROUP, OPTS)
