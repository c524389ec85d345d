"""``python -m tests.cloud.tempest_run``: tempest against the cloud tier.

Against a control plane started with ``python -m tests.cloud up
--detach --workdir DIR``::

    python -m tests.cloud.tempest_run --workdir DIR

makes what tempest needs in the cloud (two tiny raw images, two small
flavors, the shared flat network on physnet1; found again by name on a
second run), writes a tempest workspace in ``DIR/tempest`` with its
tempest.conf (tests/cloud/tempestconf.py, then the devstack plugin's
``stack:test-config`` phase for our plugin's group), and runs every test
of our plugin and a few of tempest's server tests. It prints tempest's
closing summary and every test that did not pass with its reason, and
exits nonzero when a test failed, skipped or did not finish.

Against a control plane alone, our plugin's ``[numa_policy] ssh_*``
options are left unset: no compute has an sshd to reach, and the domain
XML check skips (and so fails the run). The cloud tier's whole cloud
(tests/cloud/test_tempest.py) runs the same steps with its computes'
SSH settings (:func:`prepare`, :func:`run_selected`).
"""

import argparse
import os
import signal
import subprocess
import sys
import threading

from oslo_config import cfg

from tests.cloud import accounts
from tests.cloud import configs
from tests.cloud import endpoints
from tests.cloud import layout as lay
from tests.cloud import plugin
from tests.cloud import resources
from tests.cloud import services
from tests.cloud import tempest_results as results
from tests.cloud import tempestconf

WORKSPACE = 'tempest'
IMAGES = ('numa-tempest-raw', 'numa-tempest-raw-alt')
# (name, vCPUs, MiB of RAM, GiB of disk): flavor_ref and flavor_ref_alt.
FLAVORS = (('numa-tempest-64', 1, 64, 1), ('numa-tempest-128', 1, 128, 1))
NETWORK = 'physnet1-flat'


class RunnerError(Exception):
    """The cloud is not there, or what tempest needs could not be made."""


def parse_args(argv):
    parser = argparse.ArgumentParser(prog='python -m tests.cloud.tempest_run')
    parser.add_argument('--workdir', default=os.environ.get(
        'NUMA_CLOUD_WORKDIR', '/tmp/numa-cloud'),
        help='the work directory of a running control plane')
    parser.add_argument('--workspace',
                        help='tempest workspace (default: WORKDIR/tempest)')
    parser.add_argument('--regex', default=tempestconf.test_regex(),
                        help='tests to run (default: ours and a few of '
                             "tempest's server tests)")
    parser.add_argument('--driver-extension', default='True',
                        choices=('True', 'False'),
                        help='NUMA_POLICY_DRIVER_EXTENSION for the plugin: '
                             'whether the computes run our libvirt driver')
    parser.add_argument('--min-compute-nodes', type=int, default=1)
    parser.add_argument('--build-timeout', type=int, default=300,
                        help="tempest's [compute] build_timeout, seconds")
    parser.add_argument('--concurrency', type=int, default=1)
    parser.add_argument('--list', action='store_true',
                        help='list the selected tests, run nothing')
    return parser.parse_args(argv)


# -- the cloud ----------------------------------------------------------

def check_up(layout):
    if not os.path.exists(layout.state):
        raise RunnerError(f'no control plane in {layout.workdir} (no '
                          f'{layout.state}); start one with "python -m '
                          f'tests.cloud up --detach --workdir '
                          f'{layout.workdir}"')
    if not services.port_open(endpoints.PORTS['keystone']):
        raise RunnerError('keystone does not answer on '
                          f'{lay.keystone_url()}')


def _ok(response, what):
    if response.status_code >= 400:
        raise RunnerError(f'{what}: {response.status_code} {response.text}')
    return response


def ensure_image(session, name, scratch):
    base = endpoints.url('glance') + '/v2/images'
    found = _ok(session.get(base, params={'name': name},
                            raise_exc=False), 'list images').json()['images']
    active = [i for i in found if i['status'] == 'active']
    if active:
        return active[0]['id']
    path = resources.make_raw_image(os.path.join(scratch, name + '.raw'))
    return resources.upload_image(session, path, name=name)['id']


def ensure_flavor(session, name, vcpus, ram, disk):
    base = endpoints.url('nova') + '/v2.1/flavors'
    listed = _ok(session.get(base + '/detail', params={'is_public': 'None'},
                             raise_exc=False),
                 'list flavors').json()['flavors']
    for flavor in listed:
        if flavor['name'] == name:
            return flavor['id']
    return _ok(session.post(base, json={'flavor': {
        'name': name, 'vcpus': vcpus, 'ram': ram, 'disk': disk}},
        raise_exc=False), f'create flavor {name}').json()['flavor']['id']


def ensure_network(session):
    """The name of the shared flat network on physnet1 (made if none)."""
    network = resources.provider_network(session, NETWORK)
    if not network.get('shared'):
        raise RunnerError(f'network {network["name"]} on {lay.PHYSNET} is '
                          'not shared: tempest\'s projects cannot use it')
    return network['name']


def catalog_types(session):
    access = session.auth.get_access(session)
    return frozenset(access.service_catalog.get_endpoints())


def nova_filters(layout):
    parsed = {}
    cfg.ConfigParser(layout.conf('nova'), parsed).parse()
    values = parsed.get('filter_scheduler', {}).get('enabled_filters')
    if not values:
        return ()
    return tuple(f.strip() for f in values[-1].split(',') if f.strip())


def cloud_facts(layout, session, scratch, args):
    images = [ensure_image(session, name, scratch) for name in IMAGES]
    flavors = [ensure_flavor(session, *flavor) for flavor in FLAVORS]
    return tempestconf.CloudFacts(
        auth_url=lay.keystone_url() + '/v3',
        region=lay.REGION,
        admin_username='admin',
        admin_password=lay.ADMIN_PASSWORD,
        admin_project='admin',
        admin_domain=lay.DOMAIN,
        image_ref=images[0],
        image_ref_alt=images[1],
        flavor_ref=flavors[0],
        flavor_ref_alt=flavors[1],
        network_name=ensure_network(session),
        catalog_types=catalog_types(session),
        min_compute_nodes=args.min_compute_nodes,
        enabled_filters=nova_filters(layout),
        build_timeout=args.build_timeout)


# -- the workspace ------------------------------------------------------

def write_workspace(workspace, facts, plugin_settings=None, features=None):
    """tempest.conf; ``plugin_settings``: options of our plugin's group.

    ``features``: ``[compute-feature-enabled]`` overrides
    (tempestconf.sections).
    """
    for path in (workspace.logs, workspace.lock):
        os.makedirs(path, exist_ok=True)
    sections = tempestconf.sections(facts, workspace, features)
    if plugin_settings:
        sections[tempestconf.PLUGIN_GROUP] = dict(plugin_settings)
    configs.write(workspace.conf, sections)


def plugin_test_config(layout, workspace, driver_extension):
    """Our plugin's group, written by devstack/plugin.sh's test-config."""
    env = plugin.environment(layout)
    env.update({
        'ENABLED_SERVICES': plugin.SERVICES + ',tempest',
        'TEMPEST_CONFIG': workspace.conf,
        'NUMA_POLICY_DRIVER_EXTENSION': driver_extension,
        # Its own call log: the control plane's is what it started.
        'NUMA_POLICY_TEST_CALL_LOG': os.path.join(
            workspace.logs, 'devstack-test-config-calls.log'),
    })
    log_path = os.path.join(workspace.logs, 'devstack-test-config.log')
    with open(log_path, 'w') as log:
        result = subprocess.run(plugin.command(['stack:test-config']),
                                env=env, stdout=log,
                                stderr=subprocess.STDOUT, timeout=120)
    if result.returncode:
        raise RunnerError(f'devstack plugin stack:test-config failed '
                          f'({result.returncode}):\n{services.tail(log_path)}')


# -- tempest ------------------------------------------------------------

def tempest_command(workspace, regex, concurrency, list_only=False):
    argv = [lay.bin_path('tempest'), 'run', '--config-file', workspace.conf,
            '--regex', regex]
    if list_only:
        return argv + ['--list-tests']
    if concurrency <= 1:
        return argv + ['--serial']
    return argv + ['--concurrency', str(concurrency)]


# tempest's lines in our output are marked (as they go) and indented
# (in the summary): CI adds up the tiers' own "Ran N tests" and
# " - Passed: N" lines, which tempest prints in the same form.
RELAYED = 'tempest| '
QUOTED = '    '


def run_tempest(workspace, argv, deadline=None):
    """Run tempest in the workspace, its output to ours and its log.

    Each line reaches our output marked with :data:`RELAYED`, and the
    log as tempest wrote it. A run still going after ``deadline``
    seconds is killed with its workers (its own session) and returns
    ``tempest_results.STOPPED``, with a line saying so.
    """
    collected = []
    with open(workspace.run_log, 'w') as log:
        process = subprocess.Popen(argv, cwd=workspace.path,
                                   stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True,
                                   errors='replace', start_new_session=True)
        stopped = threading.Event()
        timer = _deadline_timer(process, deadline, stopped)
        try:
            for line in process.stdout:
                _relay(line, log, collected)
            returncode = process.wait()
        finally:
            if timer:
                timer.cancel()
        # A run that ended by itself as the timer fired keeps its code.
        if stopped.is_set() and returncode == -signal.SIGKILL:
            returncode = results.STOPPED
            _relay(f'tempest_run: stopped, still running after its '
                   f'deadline of {deadline} s\n', log, collected)
    return returncode, ''.join(collected)


def _relay(line, log, collected):
    sys.stdout.write(RELAYED + line)
    sys.stdout.flush()
    log.write(line)
    collected.append(line)


def _deadline_timer(process, deadline, stopped):
    """A started timer that kills ``process``'s session at ``deadline``."""
    if deadline is None:
        return None

    def stop():
        stopped.set()
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(deadline, stop)
    timer.daemon = True
    timer.start()
    return timer


def last_run(workspace):
    """The subunit stream of the workspace's last run."""
    return subprocess.run([lay.bin_path('stestr'), 'last', '--subunit'],
                          cwd=workspace.path, stdout=subprocess.PIPE,
                          check=False).stdout


def prepare(layout, workspace, args, plugin_settings=None, features=None):
    """The cloud's resources for tempest, and the workspace's tempest.conf.

    ``plugin_settings``: options of our plugin's group that the cloud
    knows and the devstack plugin cannot (the computes' SSH access);
    the plugin's ``stack:test-config`` phase then adds its own.
    ``features``: ``[compute-feature-enabled]`` overrides.
    """
    check_up(layout)
    os.makedirs(workspace.path, exist_ok=True)
    facts = cloud_facts(layout, accounts.admin_session(), workspace.path,
                        args)
    write_workspace(workspace, facts, plugin_settings, features)
    plugin_test_config(layout, workspace, args.driver_extension)


def summary(outcome, returncode, output):
    """(passed, text): what the run did, for the tier's output.

    tempest's closing lines, each test, those that did not pass, and the
    verdict.
    """
    text = ['== tempest closing summary ==',
            *(QUOTED + line for line in results.closing_lines(output)),
            '', '== each test ==', *results.outcomes(outcome)]
    lines = results.report(outcome)
    if lines:
        text += ['', '== tests that did not pass ==', *lines]
    ok, why = results.verdict(outcome, returncode)
    text += ['', f'cloud tier tempest: {"PASSED" if ok else "FAILED"} '
                 f'({why})']
    return ok, '\n'.join(text)


def run_parsed(workspace, regex, concurrency, deadline=None):
    """Run the selected tests: (tempest's exit code, output, results).

    The results are every test's outcome from the run's subunit stream
    (tempest_results.parse), for callers that count them themselves.
    """
    returncode, output = run_tempest(
        workspace, tempest_command(workspace, regex, concurrency), deadline)
    if returncode == results.STOPPED:
        # A killed run is not in stestr's repository: its "last" would
        # be the run before.
        return returncode, output, []
    return returncode, output, results.parse(last_run(workspace))


def run_selected(workspace, regex, concurrency, deadline=None):
    """Run the selected tests: (passed, the summary's text)."""
    returncode, output, outcome = run_parsed(workspace, regex, concurrency,
                                             deadline)
    return summary(outcome, returncode, output)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    layout = lay.Layout(os.path.abspath(args.workdir))
    workspace = tempestconf.Workspace(os.path.abspath(
        args.workspace or os.path.join(layout.workdir, WORKSPACE)))
    try:
        prepare(layout, workspace, args)
    except (RunnerError, resources.ResourceError) as exc:
        print(f'tempest_run: {exc}', file=sys.stderr)
        return 2
    print(f'tempest.conf: {workspace.conf}', flush=True)
    if args.list:
        return run_tempest(workspace, tempest_command(
            workspace, args.regex, args.concurrency, list_only=True))[0]
    ok, text = run_selected(workspace, args.regex, args.concurrency)
    print('\n' + text)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
