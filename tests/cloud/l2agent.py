"""neutron's Open vSwitch agent on a compute lab host, for physnet1's ports.

ML2 binds a port on a provider network only for a host whose L2 agent
says it reaches the physnet. Of the two mechanisms the cloud could run,
Open vSwitch is the one a lab host can carry whole: Debian's
``openvswitch-switch`` (already on this machine for the agent's OVS
uplink tests) with the kernel's ``openvswitch`` module, and neutron's
``neutron-openvswitch-agent`` from the cloud's virtualenv. SR-IOV would
need a VF handed to a guest through VFIO and an emulated IOMMU under
TCG, for no more proof of where a guest lands.

In the lab host (:func:`start`):

* ``ovsdb-server`` on a fresh database in the lab host's tmpfs, on its
  own socket and on the lab host's loopback port 6640 (the ovsdb remote
  neutron's agent and nova's os-vif use by default), and
  ``ovs-vswitchd`` on the kernel datapath;
* ``br-physnet1`` with the lab host's NUMA NIC (``eth0``, on the node
  the topology gives it) as its port: the bridge mapping of physnet1,
  and the uplink our agent finds through it;
* the agent as root (as a compute node runs it, its root helper sudo),
  with two files as devstack writes them on a compute: neutron.conf
  (:func:`neutron_settings`: its host name, the broker at the control
  plane's gateway address, its log) and ``ml2_conf.ini``
  (:func:`ml2_settings`: the bridge mapping, no tunnels, no firewall of
  its own, ``noop``, since the cloud's guests talk to no one). Our agent
  reads the second one too, as the devstack plugin starts it.

Pure: :func:`neutron_settings`, :func:`ml2_settings`, :func:`ovs_script`.
At the edges: :func:`start`.
"""

import os
import shlex

from tests.cloud import configs
from tests.cloud import layout as lay
from tests.labhost import deploy

BRIDGE = f'br-{lay.PHYSNET}'
# In the lab host: where devstack keeps the ML2/OVS agent's options, so
# that our devstack plugin finds them there (devstack/lib/services).
CONF = '/etc/neutron/plugins/ml2/ml2_conf.ini'
NEUTRON_CONF = '/etc/neutron/neutron.conf'
STATE_DIR = '/tmp/neutron'
OVS_DIR = '/tmp/ovs'
OVS_RUN = '/run/openvswitch'
OVSDB_PORT = 6640
SCHEMA = '/usr/share/openvswitch/vswitch.ovsschema'
# What the agent prints, beside its log.
OUTPUT = 'l2-agent.out'
# The agent's process for pkill -f: the bracket keeps the pattern from
# matching the shell that runs pkill.
AGENT_PATTERN = '[b]in/neutron-openvswitch-agent'
# Seconds between the agent's loops (neutron's default: 2). Each loop
# asks OVSDB and OpenFlow whether anything changed; under emulation that
# made the agent the largest user of its lab host's one core while the
# cloud stood idle (13 s of 43 s of its CPU time, more than nova-compute).
# A new port is still seen within one loop of its creation.
POLLING_INTERVAL = 5


def neutron_settings(host, transport_url, log_file):
    """neutron.conf of the compute: {section: {option: value}}."""
    return {
        'DEFAULT': {
            'host': host,
            'transport_url': transport_url,
            # INFO: the ports it wires and binds are logged there. At
            # DEBUG each loop logged its iteration and OVSDB's replies,
            # each line written through the lab host's 9p share by an
            # emulated CPU that nova-compute and the guests share.
            'debug': 'False',
            'log_file': log_file,
            'state_path': STATE_DIR,
        },
        'oslo_concurrency': {'lock_path': os.path.join(STATE_DIR, 'lock')},
    }


def ml2_settings():
    """The ML2/OVS agent's options (``ml2_conf.ini``)."""
    return {
        'agent': {'tunnel_types': '',
                  'polling_interval': str(POLLING_INTERVAL)},
        'ovs': {
            'bridge_mappings': f'{lay.PHYSNET}:{BRIDGE}',
            'integration_bridge': 'br-int',
            'datapath_type': 'system',
            'ovsdb_connection': f'tcp:127.0.0.1:{OVSDB_PORT}',
        },
        'securitygroup': {'firewall_driver': 'noop'},
    }


def ovs_script(nic):
    """Shell: Open vSwitch up, ``nic`` the uplink of physnet1's bridge."""
    db = os.path.join(OVS_DIR, 'conf.db')
    sock = os.path.join(OVS_RUN, 'db.sock')
    return '\n'.join([
        'set -e',
        'modprobe openvswitch',
        # os-vif creates each guest's tap device through /dev/net/tun
        # (nova-compute then hands it to QEMU): without it, "No such
        # file or directory" from netlink.
        'modprobe tun',
        '[ -e /dev/net/tun ] || { mkdir -p /dev/net && '
        'mknod /dev/net/tun c 10 200; }',
        f'mkdir -p {OVS_RUN} {OVS_DIR} {STATE_DIR}',
        f'ovsdb-tool create {db} {SCHEMA}',
        f'ovsdb-server {db} --remote=punix:{sock} '
        f'--remote=ptcp:{OVSDB_PORT}:127.0.0.1 '
        f'--pidfile={OVS_RUN}/ovsdb-server.pid --detach '
        f'--log-file={OVS_DIR}/ovsdb-server.log',
        'ovs-vsctl --no-wait init',
        f'ovs-vswitchd unix:{sock} --pidfile={OVS_RUN}/ovs-vswitchd.pid '
        f'--detach --log-file={OVS_DIR}/ovs-vswitchd.log',
        'ovs-vsctl --may-exist add-br br-int',
        f'ovs-vsctl --may-exist add-br {BRIDGE}',
        f'ovs-vsctl --may-exist add-port {BRIDGE} {shlex.quote(nic)}',
        f'ip link set {shlex.quote(nic)} up',
        f'ip link set {BRIDGE} up',
    ])


def start(lab, python, host, transport_url, log_file, nic='eth0'):
    """Open vSwitch and the agent in ``lab``; returns once it is started.

    ``log_file``: the agent's log as the lab host names it (in its
    shared directory, readable here at once).
    """
    files = ((NEUTRON_CONF, neutron_settings(host, transport_url, log_file)),
             (CONF, ml2_settings()))
    lab.run(ovs_script(nic) + '\n' + deploy.files_script(
        (path, configs.render(sections)) for path, sections in files))
    launch(lab, python, log_file)


def launch(lab, python, log_file):
    """The agent's process, on the files :func:`start` wrote."""
    command = os.path.join(os.path.dirname(python),
                           'neutron-openvswitch-agent')
    output = os.path.join(os.path.dirname(log_file), OUTPUT)
    lab.run(f'cd / && setsid {shlex.quote(command)} --config-file '
            f'{NEUTRON_CONF} --config-file {CONF} '
            f'>> {shlex.quote(output)} 2>&1 < /dev/null &')


def restart(lab, python, log_file):
    """The agent killed and launched again; Open vSwitch is left as it is.

    SIGKILL: the stall this is for (:class:`Stall`) was an eventlet
    process that logged nothing more, which may heed no other signal.
    """
    lab.run(f'pkill -KILL -f {shlex.quote(AGENT_PATTERN)}', check=False)
    launch(lab, python, log_file)


class Stall:
    """Whether an agent's log has stopped growing for ``seconds``.

    ``seen(size, now)`` with the log's size in bytes at ``now`` (a
    monotonic clock): True once the same size has been seen for longer
    than ``seconds``. Silent stretches of over two minutes are normal
    under emulation (its imports, seen: 147 s), so ``seconds`` is well
    above.
    """

    def __init__(self, seconds):
        self.seconds = seconds
        self.size = None
        self.since = None

    def seen(self, size, now):
        if size != self.size:
            self.size, self.since = size, now
            return False
        return now - self.since > self.seconds
