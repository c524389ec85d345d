"""OVS bridges' uplinks, asked of a real OVSDB.

An ovsdb-server of this test's own (Open vSwitch's schema, a socket in a
temporary directory) holds bridges as an OVN chassis or the ML2/OVS
agent would set them up; no vswitchd or kernel datapath is needed to
read them. The interfaces' nodes come from a sysfs fixture.
"""

import os
import shutil
import subprocess

import fixtures
import testtools

from agent.sensors import discovery
from agent.sensors import ovs
from tests import base as test_base
from tests import fixtures as host_fixtures

SCHEMA = '/usr/share/openvswitch/vswitch.ovsschema'


@testtools.skipUnless(
    shutil.which('ovsdb-server') and shutil.which(ovs.VSCTL)
    and os.path.exists(SCHEMA),
    'Open vSwitch is not installed (Debian: openvswitch-switch; .ci/run '
    'installs it)')
class OvsdbUplinksTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        db = os.path.join(self.dir, 'conf.db')
        subprocess.run(['ovsdb-tool', 'create', db, SCHEMA], check=True)
        self.remote = f'unix:{self.dir}/db.sock'
        pidfile = os.path.join(self.dir, 'ovsdb.pid')
        subprocess.run(['ovsdb-server', db, f'--remote=p{self.remote}',
                        f'--pidfile={pidfile}', '--detach', '--no-chdir',
                        f'--unixctl={self.dir}/ctl',
                        f'--log-file={self.dir}/ovsdb.log'], check=True)
        self.addCleanup(self.stop, pidfile)
        self.vsctl('init')
        self.root = host_fixtures.two_sockets_nic_on_node1(
            os.path.join(self.dir, 'root'))
        # A bond of two ports on node 0 in br-ex, a patch port beside.
        host_fixtures.write_nic(self.root, 'ens1f0', 0, '0-3')
        host_fixtures.write_nic(self.root, 'ens1f1', 0, '0-3')
        self.vsctl('add-br', 'br-ex', '--', 'add-bond', 'br-ex', 'bond0',
                   'ens1f0', 'ens1f1', '--', 'add-port', 'br-ex', 'patch-int',
                   '--', 'set', 'Interface', 'patch-int', 'type=patch')
        # ens2f0, the 25G NIC on node 1, in br-vlan.
        self.vsctl('add-br', 'br-vlan', '--', 'add-port', 'br-vlan',
                   'ens2f0')

    def stop(self, pidfile):
        with open(pidfile) as f:
            os.kill(int(f.read()), 15)

    def vsctl(self, *args):
        subprocess.run([ovs.VSCTL, f'--db={self.remote}', '--no-wait',
                        *args], check=True, capture_output=True)

    def nics(self, configured=None):
        found = ovs.OvsdbUplinks(self.remote, configured).uplinks()
        return {(n.name, n.physnet, n.numa_node) for n in discovery.discover(
            '<capabilities/>', self.root, {}, {}, found=found).nics}

    def test_ovn_bridge_mappings_name_the_bridges(self):
        self.vsctl('set', 'Open_vSwitch', '.',
                   'external_ids:ovn-bridge-mappings='
                   '"physnet1:br-vlan,physnet2:br-ex"')
        self.assertEqual({('ens2f0', 'physnet1', 1),
                          ('ens1f0', 'physnet2', 0),
                          ('ens1f1', 'physnet2', 0)}, self.nics())

    def test_the_ml2_agents_mappings_win_for_their_physnets(self):
        self.vsctl('set', 'Open_vSwitch', '.',
                   'external_ids:ovn-bridge-mappings=physnet1:br-ex')
        self.assertEqual({('ens2f0', 'physnet1', 1)},
                         self.nics({'physnet1': 'br-vlan'}))

    def test_an_unreachable_database_finds_nothing_and_says_so(self):
        log = self.useFixture(fixtures.FakeLogger())
        self.assertEqual([], ovs.OvsdbUplinks(
            f'unix:{self.dir}/nothing.sock').uplinks())
        self.assertIn('Open vSwitch uplinks not read', log.output)
