"""Horizon's settings for the lab's cloud, with our panel enabled.

Horizon's own ``openstack_dashboard.settings`` (as a package install has
it), our panel added the way its "enabled" file adds it on a deployment
(devstack copies it into ``openstack_dashboard/local/enabled``), and what
a ``local_settings.py`` would say for this cloud: keystone on the
loopback, sessions in signed cookies, a cache in memory. Our panel finds
our API in keystone's catalog, as deployed.

Read from the environment (tests/cloud/horizon/__init__.py sets it):
``NUMA_CLOUD_HORIZON_SECRET`` and ``NUMA_CLOUD_HORIZON_STATIC``.
"""

import os

from openstack_dashboard.settings import *  # noqa: F403,H303

from nova_numa_policy.dashboard import plugging  # noqa: E402

INSTALLED_APPS = plugging.add_our_panel(HORIZON_CONFIG,  # noqa: F405
                                        INSTALLED_APPS)  # noqa: F405

DEBUG = False
ALLOWED_HOSTS = ['127.0.0.1']
SECRET_KEY = os.environ['NUMA_CLOUD_HORIZON_SECRET']
OPENSTACK_KEYSTONE_URL = 'http://127.0.0.1:5000/v3'
OPENSTACK_KEYSTONE_DEFAULT_DOMAIN = 'Default'
OPENSTACK_ENDPOINT_TYPE = 'publicURL'
SESSION_ENGINE = 'django.contrib.sessions.backends.signed_cookies'
CACHES = {'default': {
    'BACKEND': 'django.core.cache.backends.locmem.LocMemCache'}}
# Compiled from Horizon's SCSS at the first page, into the cloud's work
# directory (deployments compress offline, ahead of time).
STATIC_ROOT = os.environ['NUMA_CLOUD_HORIZON_STATIC']
COMPRESS_ROOT = STATIC_ROOT
COMPRESS_OFFLINE = False
COMPRESS_ENABLED = True
