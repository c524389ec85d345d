"""Our pieces' settings, written by devstack/plugin.sh itself.

tests/devstack/run_plugin.sh runs the plugin's phases against devstack's
stubbed helpers, as the unit tests do, with tests/cloud/devstack.sh's
answering for this cloud, ``NOVA_CONF`` at this
cloud's nova.conf and ``NUMA_POLICY_CONF`` at ours: the plugin appends
our filters and weighers to nova.conf, writes our file, and runs the
collector's schema sync. What it would start (``run_process``) or
register in keystone is recorded in a call log, which this module reads
back so the control plane does exactly that.
"""

import os
import shlex
import subprocess

from tests.cloud import endpoints
from tests.cloud import layout as lay
from tests.cloud import services

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(os.path.dirname(HERE), 'devstack', 'run_plugin.sh')
HELPERS = os.path.join(HERE, 'devstack.sh')
# The controller of a devstack cloud: no nova-compute, so no agent (the
# lab hosts run it); the settings enable the collector and the API.
SERVICES = 'key,mysql,rabbit,n-api,n-cond,n-sch,placement-api,g-api,' \
           'neutron-api'
# Seconds the scheduler and our API heed a report (devstack's
# NUMA_POLICY_REPORT_TTL): twelve of the agents' 5 s periods, so that a
# stopped agent is seen within a test's patience (tests/cloud/faults),
# and a period slowed by emulation does not make a host look silent.
REPORT_TTL = 60
# Before the control plane's databases exist: configuration only.
CONFIGURE = ('stack:install', 'stack:post-config')
# Once the collector's database exists: its schema, then the services.
START = ('stack:extra',)


class PluginError(Exception):
    """A phase of devstack/plugin.sh failed."""


def environment(layout, base_env=None):
    """The variables devstack would give the plugin, for this cloud."""
    data = layout.data
    env = dict(base_env if base_env is not None else os.environ)
    env.update({
        'DEST': os.path.join(layout.workdir, 'opt'),
        'DATA_DIR': data,
        'SERVICE_PROTOCOL': 'http',
        'SERVICE_HOST': endpoints.HOST_ADDRESS,
        'SERVICE_TIMEOUT': '60',
        'STACK_USER': 'stack',
        'REGION_NAME': lay.REGION,
        'NOVA_CONF': layout.conf('nova'),
        'NOVA_CPU_CONF': layout.conf('nova', 'nova-cpu.conf'),
        'NOVA_STATE_PATH': layout.data_dir('nova'),
        'TEMPEST_CONFIG': os.path.join(layout.etc, 'tempest.conf'),
        'LIBVIRT_GROUP': 'libvirt',
        'HORIZON_DIR': os.path.join(layout.workdir, 'opt', 'horizon'),
        'VIRT_DRIVER': 'libvirt',
        'ENABLE_DEBUG_LOG_LEVEL': 'True',
        'ENABLED_SERVICES': SERVICES,
        'NUMA_POLICY_DIR': ROOT,
        'NUMA_POLICY_CONF_DIR': os.path.dirname(layout.numa_policy_conf),
        'NUMA_POLICY_CONF': layout.numa_policy_conf,
        'NUMA_POLICY_DB_NAME': lay.db_name('numa_policy'),
        'NUMA_POLICY_API_LISTEN_ADDRESS': endpoints.HOST_ADDRESS,
        'NUMA_POLICY_API_PORT': str(endpoints.PORTS['numa-policy']),
        'NUMA_POLICY_REPORT_TTL': str(REPORT_TTL),
        'NUMA_POLICY_BIN_DIR': os.path.dirname(lay.bin_path('python')),
        'NUMA_POLICY_TEST_CALL_LOG': call_log(layout),
        'NUMA_POLICY_TEST_HELPERS': HELPERS,
        'NUMA_POLICY_TEST_BIN_DIR': os.path.join(layout.workdir, 'opt',
                                                 'bin'),
        # No kernel of a compute is configured here.
        'NUMA_POLICY_PROC_DIR': os.path.join(data, 'no-proc'),
        'NUMA_POLICY_SYSFS_DIR': os.path.join(data, 'no-sys'),
        # What devstack.sh's helpers answer with.
        'NUMA_CLOUD_BIN_DIR': os.path.dirname(lay.bin_path('python')),
        'NUMA_CLOUD_TRANSPORT_URL': lay.transport_url(),
        'NUMA_CLOUD_DATABASE_URL_PREFIX': (
            f'mysql+pymysql://root@{endpoints.HOST_ADDRESS}:'
            f'{lay.MYSQL_PORT}/'),
        'KEYSTONE_SERVICE_URI': lay.keystone_url(),
        'SERVICE_PASSWORD': lay.SERVICE_PASSWORD,
        'SERVICE_DOMAIN_NAME': lay.DOMAIN,
        'SERVICE_PROJECT_NAME': lay.SERVICE_PROJECT,
    })
    return env


def call_log(layout):
    return os.path.join(layout.data, 'devstack-plugin-calls.log')


def command(steps):
    return ['bash', RUNNER, *steps]


def run(layout, steps):
    """Run the plugin's ``steps``; its trace goes to the plugin's log."""
    log_path = layout.log('devstack-plugin')
    with open(log_path, 'a') as log:
        result = subprocess.run(command(steps),
                                env=environment(layout), stdout=log,
                                stderr=subprocess.STDOUT, timeout=300)
    if result.returncode:
        raise PluginError(
            f'devstack plugin {" ".join(steps)} failed '
            f'({result.returncode}); end of {log_path}:\n'
            f'{services.tail(log_path)}')


def read_calls(layout):
    """The recorded calls: tuples of the helper's name and arguments."""
    try:
        with open(call_log(layout)) as f:
            return [tuple(line.rstrip('\n').split('\t')) for line in f]
    except FileNotFoundError:
        return []


def started(calls):
    """{service: argv} of what the plugin asked run_process to start."""
    return {call[1]: shlex.split(call[2]) for call in calls
            if call[0] == 'run_process'}


def registrations(calls):
    """What the plugin registers in keystone.

    ``(users, services, endpoints)``: service user names, ``(name,
    type, description)`` and ``(type, region, url)`` tuples.
    """
    users = [call[1] for call in calls if call[0] == 'create_service_user']
    services = [tuple(call[1:4]) for call in calls
                if call[0] == 'get_or_create_service']
    urls = [tuple(call[1:4]) for call in calls
            if call[0] == 'get_or_create_endpoint']
    return users, services, urls
