"""A compute of the lab's cloud: nova-compute with our driver in a lab host.

:class:`ComputeHost` boots a lab host (tests/labhost) whose cloud NIC
reaches the control plane's ports of this machine's 127.0.0.1 at
``endpoints.GUEST_GATEWAY``, starts libvirtd in it, and runs
nova-compute there from the cloud's virtualenv, with
``compute_driver = numa_policy.NumaPolicyLibvirtDriver``::

    with ComputeHost('lab-compute-1', python, settings) as compute:
        compute.start()
        compute.wait_for_log('Created resource provider record')

Its nova.conf is written here, before the boot, from three parts:

* the control plane's settings for a compute (``settings``: the
  transport URL and keystoneauth sections whose endpoints are overridden
  to the gateway; :func:`stand_in_settings` has the same shape);
* the lab host's own: ``virt_type = qemu``, its host name, and state,
  instances and locks on its tmpfs;
* ours, exactly as devstack/plugin.sh writes them on a compute node:
  its ``stack:post-config`` phase runs against devstack's stubbed
  helpers (tests/devstack/run_plugin.sh) on that very file.

nova-compute runs as root in the lab host (root reaches libvirtd's
socket, and needs no sudo rule of its own). It still starts nova's
privileged helpers as a compute node does, through its root helper
``sudo nova-rootwrap /etc/nova/rootwrap.conf``: :func:`install_rootwrap`
puts nova's rootwrap in the lab host's /etc and /usr/bin, as nova's
packages (or devstack) do on a compute node.
Its log is in the lab host's shared directory, readable here at once.
"""

import ipaddress
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from tests.cloud import configs
from tests.cloud import endpoints
from tests.cloud import l2agent
from tests.labhost import deploy
from tests.labhost import machine
from tests.labhost import network
from tests.labhost import topology as topology_mod

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PLUGIN_RUNNER = os.path.join(ROOT, 'tests', 'devstack', 'run_plugin.sh')
# What devstack enables on a compute-only node: the plugin's agent and
# driver extension belong there, its collector and API do not.
COMPUTE_SERVICES = 'n-cpu,placement-client'
# Inside the lab host, on its tmpfs.
STATE_DIR = '/tmp/nova'
# In the lab host's shared directory (/run/lab inside, LabHost.share
# here): nova.conf, written here, and nova-compute's log and output.
SHARE_DIR = 'nova-compute'
GUEST_SHARE = '/run/lab'
L2_AGENT_LOG = 'neutron-openvswitch-agent.log'
# In the lab host: nova's key and client settings for the other compute.
MIGRATION_KEY = '/etc/nova/ssh/id_ed25519'
SSH_CLIENT_CONFIG = '/etc/ssh/ssh_config.d/nova-migration.conf'
# On the lab host's tmpfs: the sockets of the shared SSH connections.
SSH_CONTROL_PATH = '/tmp/ssh-nova-%C'
# How long a shared connection outlives its last user, in seconds.
SSH_CONTROL_PERSIST = 600
START_TIMEOUT = 600.0
# How long a SIGTERM'ed nova-compute may take to leave before SIGKILL.
# Seen: with no task in progress, nova's graceful shutdown (its
# graceful_shutdown_timeout is 180 s) still sat past 120 s.
STOP_TIMEOUT = 120
# Transparent huge pages, inside the lab host only.
THP_ENABLED = '/sys/kernel/mm/transparent_hugepage/enabled'
# In the shared directory: a start's own options, read after nova.conf.
EXTRA_CONF = 'nova-extra.conf'
# nova-compute's pgrep pattern, with a bracket: the shell running the
# command, whose own command line holds the pattern, does not match.
NOVA_COMPUTE_PATTERN = "'[b]in/nova-compute'"
# The stand-in's service account, as devstack names it.
SERVICE_PASSWORD = 'numa-cloud-service'


class ComputeError(Exception):
    """nova-compute did not do what was waited for; the log's end says."""


def _auth(user, address, password=SERVICE_PASSWORD):
    return {'auth_type': 'password',
            'auth_url': endpoints.url('keystone', address) + '/v3',
            'username': user, 'password': password,
            'user_domain_name': 'Default', 'project_name': 'service',
            'project_domain_name': 'Default', 'region_name': 'RegionOne'}


def stand_in_settings(address=endpoints.GUEST_GATEWAY,
                      vhost=endpoints.RABBIT_VHOST):
    """A control plane's settings for a compute, without one running.

    ``{section: {option: value}}``, the shape of the control plane's
    own (tests/cloud/control.py, ``compute_config``): the broker and
    every service at ``address``, since the catalog names 127.0.0.1.
    """
    def client(user, service, path=''):
        return {**_auth(user, address),
                'endpoint_override': endpoints.url(service, address) + path}

    port = endpoints.PORTS['rabbitmq']
    return {
        'DEFAULT': {'transport_url':
                    f'rabbit://guest:guest@{address}:{port}/{vhost}'},
        'placement': client(configs.NOVA_CLIENT_USER, 'placement'),
        'neutron': client(configs.NOVA_CLIENT_USER, 'neutron'),
        'glance': client('glance', 'glance'),
        'keystone': client('nova', 'keystone', '/v3'),
        'keystone_authtoken': _auth('nova', address),
        'service_user': {**_auth('nova', address),
                         'send_service_user_token': 'True'},
    }


# Seconds os-vif waits on ovsdb-server (os-vif's default is 120).
OVSDB_TIMEOUT = 300


def lab_settings(host, my_ip, state_dir=STATE_DIR, log_file=None,
                 link_address=None):
    """The lab host's own part of nova.conf.

    ``link_address``: the lab host's address on a link to another lab
    host, where libvirtd listens for TCP (tests/labhost/libvirt-up.sh):
    live migrations then go over it, libvirt to libvirt without TLS,
    their memory and disks to this address.
    """
    default = {'host': host, 'my_ip': my_ip, 'debug': 'True',
               'state_path': state_dir,
               'instances_path': os.path.join(state_dir, 'instances')}
    if log_file:
        default['log_file'] = log_file
    # TCG: nested KVM does not work on the CI machines.
    libvirt = {'virt_type': 'qemu', 'cpu_mode': 'none'}
    if link_address:
        libvirt.update(live_migration_scheme='tcp',
                       live_migration_inbound_addr=link_address)
    return {
        'DEFAULT': default,
        'oslo_concurrency': {'lock_path': os.path.join(state_dir, 'locks')},
        'libvirt': libvirt,
        # os-vif's wait on the lab host's ovsdb-server when it plugs a
        # port (120 s by default, os-vif's native transactions too):
        # with four boots at once under emulation a plug timed out and
        # nova rescheduled the boot to the other compute (CI run of
        # 2026-11-30 17:37), a boot more on a busy cloud.
        'os_vif_ovs': {'ovs_vsctl_timeout': str(OVSDB_TIMEOUT)},
        # No console proxy in the lab's cloud.
        'vnc': {'enabled': 'False'},
    }


def merge(*parts):
    """The sections of ``parts``; a later part's option wins."""
    merged = {}
    for part in parts:
        for section, options in part.items():
            merged.setdefault(section, {}).update(options)
    return merged


def render(sections):
    """INI text; a list value is a multi-valued option, a line each."""
    lines = []
    for section, options in sections.items():
        lines.append(f'[{section}]')
        for option, value in options.items():
            values = value if isinstance(value, list) else [value]
            lines += [f'{option} = {v}' for v in values]
        lines.append('')
    return '\n'.join(lines)


def plugin_environment(nova_conf, workdir, state_dir=STATE_DIR,
                       base_env=None):
    """What devstack gives the plugin on a compute node, for the stubs.

    The plugin's files other than nova.conf (the agent's, the call log)
    go to ``workdir``; no kernel is read here (the lab host's is not
    this machine's).
    """
    env = dict(base_env if base_env is not None else os.environ)
    env.update({
        'DEST': os.path.join(workdir, 'opt'),
        'DATA_DIR': os.path.join(workdir, 'data'),
        'SERVICE_PROTOCOL': 'http',
        'SERVICE_HOST': endpoints.GUEST_GATEWAY,
        'SERVICE_TIMEOUT': '60',
        'STACK_USER': 'stack',
        'REGION_NAME': 'RegionOne',
        'NOVA_CONF': nova_conf,
        'NOVA_CPU_CONF': nova_conf,
        'NOVA_STATE_PATH': state_dir,
        'TEMPEST_CONFIG': os.path.join(workdir, 'tempest.conf'),
        'LIBVIRT_GROUP': 'libvirt',
        'HORIZON_DIR': os.path.join(workdir, 'horizon'),
        'VIRT_DRIVER': 'libvirt',
        'ENABLE_DEBUG_LOG_LEVEL': 'True',
        'ENABLED_SERVICES': COMPUTE_SERVICES,
        'NUMA_POLICY_DRIVER_EXTENSION': 'True',
        'NUMA_POLICY_DIR': ROOT,
        'NUMA_POLICY_CONF_DIR': os.path.join(workdir, 'etc'),
        'NUMA_POLICY_TEST_CALL_LOG': os.path.join(workdir, 'calls.log'),
        'NUMA_POLICY_TEST_BIN_DIR': os.path.join(workdir, 'bin'),
        'NUMA_POLICY_PROC_DIR': os.path.join(workdir, 'no-proc'),
        'NUMA_POLICY_SYSFS_DIR': os.path.join(workdir, 'no-sys'),
    })
    return env


def apply_plugin(nova_conf, workdir, state_dir=STATE_DIR):
    """devstack/plugin.sh's ``stack:post-config`` on ``nova_conf``.

    Returns the calls the stubs recorded (name and arguments), among
    them the driver shim the plugin runs on a compute node.
    """
    env = plugin_environment(nova_conf, workdir, state_dir)
    os.makedirs(env['DATA_DIR'], exist_ok=True)
    result = subprocess.run(['bash', PLUGIN_RUNNER, 'stack:post-config'],
                            env=env, capture_output=True, text=True,
                            timeout=120)
    if result.returncode:
        raise ComputeError(f'devstack plugin post-config failed '
                           f'({result.returncode}):\n'
                           f'{result.stderr[-3000:]}')
    try:
        with open(env['NUMA_POLICY_TEST_CALL_LOG']) as f:
            return [tuple(line.rstrip('\n').split('\t')) for line in f]
    except FileNotFoundError:
        return []


def write_nova_conf(path, settings, lab, workdir, state_dir=STATE_DIR):
    """The compute's nova.conf at ``path``: ``settings``, ``lab``, ours."""
    with open(path, 'w') as f:
        f.write(render(merge(settings, lab)))
    return apply_plugin(path, workdir, state_dir)


def purelib(python):
    """Where ``python`` installs packages."""
    return subprocess.run(
        [python, '-I', '-c',
         'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
        capture_output=True, text=True, check=True).stdout.strip()


def prepare_environment(python):
    """The virtualenv as nova-compute in a lab host needs it, done here.

    The driver shim devstack's plugin runs on a compute
    (``numa-policy-nova-driver-shim``: nova/virt/numa_policy.py), and
    every module compiled to bytecode: the lab host's root is read-only,
    so an uncompiled module would be compiled under emulation at every
    start. Up-to-date files are left alone.
    """
    subprocess.run([python, '-m', 'nova_numa_policy.virt.shim'],
                   check=True, capture_output=True)
    subprocess.run([python, '-m', 'compileall', '-q', '-j0',
                    purelib(python)], check=True, capture_output=True)


def rootwrap_commands(python):
    """Shell commands installing nova's rootwrap from ``python``'s venv.

    What a compute node has from nova's packages, or devstack makes of
    nova's own files: ``/usr/bin/nova-rootwrap``, and
    ``/etc/nova/rootwrap.conf`` reading the filters in
    ``/etc/nova/rootwrap.d``. nova-compute's root helper is
    ``sudo nova-rootwrap /etc/nova/rootwrap.conf`` unless
    ``[workarounds] disable_rootwrap``; without these files sudo
    answered "nova-rootwrap: command not found", exit 1, and nova raised
    FailedToDropPrivileges at a server's first privileged call.

    The virtualenv's bin directory comes first in ``exec_dirs`` (devstack
    appends nova's): rootwrap runs the first ``privsep-helper`` it finds
    there, and /usr/bin's may be linked from another virtualenv
    (tests/labhost/deploy.py links the agent's) that cannot import nova.
    """
    bin_dir = os.path.dirname(python)
    etc = os.path.join(os.path.dirname(bin_dir), 'etc', 'nova')
    q = shlex.quote
    return (
        f'set -e\nmkdir -p /etc/nova/rootwrap.d\n'
        f'cp {q(etc)}/rootwrap.d/*.filters /etc/nova/rootwrap.d/\n'
        f'sed -e "s|^filters_path=.*|filters_path=/etc/nova/rootwrap.d|" '
        f'-e "s|^exec_dirs=|exec_dirs={bin_dir},|" '
        f'{q(os.path.join(etc, "rootwrap.conf"))} > /etc/nova/rootwrap.conf\n'
        f'chmod 0644 /etc/nova/rootwrap.conf /etc/nova/rootwrap.d/*\n'
        f'ln -sf {q(os.path.join(bin_dir, "nova-rootwrap"))} '
        f'/usr/bin/nova-rootwrap\n')


def migration_ssh_commands(key_path, link_address):
    """Shell: root's ssh in the lab host reaches the link's other end.

    nova-compute (root here) runs ``ssh -o BatchMode=yes <address> ...``
    and ``scp`` to the destination's address for a cold migration or a
    resize, as compute nodes whose nova user shares a key do. root's
    home is this machine's, read-only: the key is copied into the lab
    host's /etc, and a client configuration for the link's addresses
    names it. Host keys are made at each boot: none is pinned.

    One connection per destination is shared by the ``ssh`` and ``scp``
    runs of a move (``ControlMaster``), as operators configure nova's
    SSH between computes: under emulation each new connection's key
    exchange took 5 to 19 s, and a cold migration makes four.
    """
    network = ipaddress.ip_interface(link_address).network
    if network.prefixlen % 8:
        raise ValueError(f'link {network}: not on an octet boundary')
    octets = str(network.network_address).split('.')[:network.prefixlen // 8]
    q = shlex.quote
    config = '\n'.join((
        f'Host {".".join(octets + ["*"])}',
        '    User root',
        f'    IdentityFile {MIGRATION_KEY}',
        '    IdentitiesOnly yes',
        '    StrictHostKeyChecking no',
        '    UserKnownHostsFile /dev/null',
        '    LogLevel ERROR',
        '    ControlMaster auto',
        f'    ControlPath {SSH_CONTROL_PATH}',
        f'    ControlPersist {SSH_CONTROL_PERSIST}'))
    return (f'set -e\nmkdir -p {os.path.dirname(MIGRATION_KEY)}\n'
            f'install -m 0600 {q(key_path)} {MIGRATION_KEY}\n'
            + deploy.files_script(((SSH_CLIENT_CONFIG, config),)))


def install_rootwrap(lab, python):
    """nova's rootwrap in the lab host (its /etc and /usr/bin overlays)."""
    lab.run(rootwrap_commands(python))


# -- run inside a lab host (LabHost.call) -------------------------------------

def http_get(url, timeout=60):
    """Status and body of a GET, from inside a lab host."""
    import urllib.request
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return answer.status, answer.read().decode(errors='replace')


def amqp_handshake(url, timeout=60):
    """What the broker at ``url`` says of itself once connected."""
    import kombu
    connection = kombu.Connection(url, connect_timeout=timeout)
    try:
        connection.connect()
        properties = connection.connection.server_properties
        return {'product': properties.get('product'),
                'version': properties.get('version')}
    finally:
        connection.release()


class ComputeHost:
    """A lab host running nova-compute; a context manager."""

    def __init__(self, name, python=None, settings=None,
                 topology=topology_mod.TWO_NODES, link=None,
                 start_timeout=START_TIMEOUT, state_disk_gb=None, ssh=None,
                 ssh_key=None):
        self.name = name
        # A network.SshAccess: sshd in the lab host, for tempest's
        # domain XML check (tests/labhost/ssh.py) and, on the link, for
        # the other compute's nova; None: no sshd. ``ssh_key``: the
        # private key of the run, which nova-compute here uses to reach
        # the other compute over the link (cold migration, resize).
        self.ssh = ssh
        self.ssh_key = ssh_key
        # None: the state directory on the lab host's /tmp, a tmpfs of
        # half its RAM, which nova reports as 0 GB of disk (DISK_GB):
        # enough to start, none for a flavor with a disk. A number: a
        # tmpfs of its own that size (a limit, not memory taken).
        self.state_disk_gb = state_disk_gb
        self.python = python or sys.executable
        self.settings = settings or stand_in_settings()
        self.topology = topology
        self.link = link
        self.start_timeout = start_timeout
        self.lab = None
        self.workdir = None
        self.plugin_calls = None
        self.started_at = None

    @property
    def my_ip(self):
        if self.link is not None:
            return self.link.ip
        return network.CLOUD_ADDRESS.split('/')[0]

    def _guest(self, *parts):
        return os.path.join(GUEST_SHARE, SHARE_DIR, *parts)

    def _here(self, *parts):
        return os.path.join(self.lab.share, SHARE_DIR, *parts)

    def boot(self):
        self.launch()
        return self.finish_boot()

    def launch(self):
        """Write nova.conf and start the lab host's QEMU; returns at once.

        QEMU dies with the calling thread; :meth:`finish_boot` may run in
        another.
        """
        self.workdir = tempfile.mkdtemp(prefix='numa-compute-')
        with machine.undone_on_error(self.shutdown):
            prepare_environment(self.python)
            conf = os.path.join(self.workdir, 'nova.conf')
            self.plugin_calls = write_nova_conf(
                conf, self.settings,
                lab_settings(self.name, self.my_ip,
                             log_file=self._guest_log(),
                             link_address=self.link and self.link.ip),
                os.path.join(self.workdir, 'plugin'))
            self.lab = machine.LabHost(
                self.topology, python=self.python, hostname=self.name,
                network=network.cloud_network(
                    (*endpoints.PORTS.values(), endpoints.PROBE_PORT),
                    link=self.link, ssh=self.ssh))
            self.lab.launch()
        return self

    def finish_boot(self):
        """Once the lab host answers: rootwrap, nova.conf, libvirtd."""
        with machine.undone_on_error(self.shutdown):
            self.lab.wait_booted()
            install_rootwrap(self.lab, self.python)
            os.makedirs(self._here())
            shutil.copy(os.path.join(self.workdir, 'nova.conf'),
                        self._here('nova.conf'))
            # No private /dev per domain: libvirt's mount namespace made
            # without the host's /dev/urandom under the lab host's root
            # (QEMU: "Could not open '/dev/urandom'"), and nova gives
            # every guest a virtio RNG backed by it.
            self.lab.run("echo 'namespaces = []' >> /etc/libvirt/qemu.conf")
            # nova gives every guest a serial console on a PTY: the lab
            # host mounts no devpts of its own otherwise.
            self.lab.run('mountpoint -q /dev/pts || { mkdir -p /dev/pts && '
                         'mount -t devpts -o ptmxmode=0666 devpts /dev/pts; }')
            # Guest RAM in base pages: the kernel interleaves a huge page
            # at a time, and a tiny guest touches two or three, which a
            # huge page's allocation falling back to another node can
            # leave on one node; base pages show the policy's spread.
            self.lab.run(f'echo never > {THP_ENABLED}')
            if self.link is not None and self.ssh_key is not None:
                # Through the shared directory: the lab host's /tmp is
                # its own tmpfs, not this machine's.
                shutil.copy(self.ssh_key, self._here('migration_key'))
                self.lab.run(migration_ssh_commands(
                    self._guest('migration_key'), self.link.address))
            self.lab.start_libvirtd()
        return self

    def _guest_log(self):
        return os.path.join(GUEST_SHARE, SHARE_DIR, 'nova-compute.log')

    @property
    def nova_conf(self):
        """nova.conf as the lab host reads it."""
        with open(self._here('nova.conf')) as f:
            return f.read()

    def start(self, extra_config=None):
        """Start nova-compute in the background; returns at once.

        ``extra_config``, ``{section: {option: value}}``: a file of its
        own (:data:`EXTRA_CONF`, in the shared directory) read after
        nova.conf, for this start only: another ``compute_driver``, say,
        without touching the file devstack's plugin wrote.
        """
        command = os.path.join(os.path.dirname(self.python), 'nova-compute')
        files = [self._guest('nova.conf')]
        if extra_config:
            with open(self._here(EXTRA_CONF), 'w') as f:
                f.write(render(extra_config))
            files.append(self._guest(EXTRA_CONF))
        config = ' '.join(f'--config-file {shlex.quote(path)}'
                          for path in files)
        if self.state_disk_gb:
            self.lab.run(f'mkdir -p {STATE_DIR} && (mountpoint -q '
                         f'{STATE_DIR} || mount -t tmpfs -o '
                         f'size={int(self.state_disk_gb)}g tmpfs '
                         f'{STATE_DIR})')
        self.lab.run(
            f'mkdir -p {STATE_DIR}/instances {STATE_DIR}/locks && cd / && '
            f'setsid {shlex.quote(command)} {config} '
            f'> {shlex.quote(self._guest("output"))} 2>&1 < /dev/null &')
        self.started_at = time.monotonic()

    def stop(self, timeout=STOP_TIMEOUT):
        """Stop nova-compute: SIGTERM, then SIGKILL after ``timeout`` s.

        TERM first, so that nova-compute leaves as a restarted service
        does (its RPC consumers closed); KILL if it is still there, as a
        test's next start must not meet a second one.
        """
        self.lab.run(f'pkill -TERM -f {NOVA_COMPUTE_PATTERN}', check=False)
        deadline = time.monotonic() + timeout
        while self.running():
            if time.monotonic() > deadline:
                self.lab.run(f'pkill -KILL -f {NOVA_COMPUTE_PATTERN}',
                             check=False)
                deadline = time.monotonic() + timeout
            time.sleep(1)

    def start_l2_agent(self):
        """Open vSwitch and neutron's agent for physnet1 (l2agent.py)."""
        l2agent.start(self.lab, self.python, self.name,
                      self.settings['DEFAULT']['transport_url'],
                      self._guest(L2_AGENT_LOG))

    def restart_l2_agent(self):
        """neutron's agent killed and started again (l2agent.restart)."""
        l2agent.restart(self.lab, self.python, self._guest(L2_AGENT_LOG))

    def l2_agent_log_size(self):
        """Bytes of neutron's agent's log and output so far."""
        return sum(os.path.getsize(self._here(name))
                   for name in (L2_AGENT_LOG, l2agent.OUTPUT)
                   if os.path.exists(self._here(name)))

    def l2_agent_log(self):
        """neutron's agent's log so far (and what it printed)."""
        return self._read_shared(L2_AGENT_LOG, l2agent.OUTPUT)

    def _read_shared(self, *names):
        text = ''
        for name in names:
            try:
                with open(self._here(name), errors='replace') as f:
                    text += f.read()
            except FileNotFoundError:
                pass
        return text

    def log(self):
        """nova-compute's log so far (and what it printed)."""
        return self._read_shared('nova-compute.log', 'output')

    def log_size(self):
        """Characters in nova-compute's log file now: a later ``since``."""
        return len(self._read_shared('nova-compute.log'))

    def wait_for_log(self, pattern, timeout=None, since=None):
        """Seconds since start() until ``pattern`` (a regex) is logged.

        ``since``: only what the log file holds past that many
        characters (:meth:`log_size` before a restart) counts, not what
        an earlier run of nova-compute logged.
        """
        deadline = time.monotonic() + (timeout or self.start_timeout)
        regex = re.compile(pattern)
        while True:
            text = (self.log() if since is None else
                    self._read_shared('nova-compute.log')[since:])
            if regex.search(text):
                return time.monotonic() - self.started_at
            if time.monotonic() > deadline:
                tail = '\n'.join(self.log().splitlines()[-40:])
                raise ComputeError(f'nova-compute in {self.name} did not '
                                   f'log {pattern!r}; its log ends:\n{tail}')
            time.sleep(1)

    def running(self):
        """Whether a nova-compute process runs in the lab host."""
        return self.lab.run(f'pgrep -f {NOVA_COMPUTE_PATTERN}',
                            check=False).ok

    def shutdown(self):
        if self.lab is not None:
            self.lab.shutdown()
            self.lab = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self):
        return self.boot()

    def __exit__(self, *exc):
        self.shutdown()
