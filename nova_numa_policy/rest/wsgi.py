"""WSGI entry for uWSGI / mod_wsgi: ``nova_numa_policy.rest.wsgi:application``.

The configuration files are the usual ones of the project
(``/etc/nova-numa-policy/nova-numa-policy.conf``), or those named in the
``NUMA_POLICY_API_CONFIG`` environment variable (comma separated).
"""

import os

from oslo_log import log as logging

from nova_numa_policy.collector import db
from nova_numa_policy import conf as nnp_conf
from nova_numa_policy.rest import app


def init_application(argv=None, config_files=None):
    conf = nnp_conf.CONF
    logging.register_options(conf)
    conf(argv or [], project='nova-numa-policy',
         default_config_files=config_files)
    logging.setup(conf, 'nova-numa-policy')
    return app.build_app(conf, db.Storage.from_conf(conf))


def _config_files():
    files = os.environ.get('NUMA_POLICY_API_CONFIG')
    return files.split(',') if files else None


if os.environ.get('NUMA_POLICY_API_WSGI'):
    # Only under a WSGI server that asks for it, so importing the module
    # (docs, tests) does not parse the command line or open the database.
    application = init_application(config_files=_config_files())
