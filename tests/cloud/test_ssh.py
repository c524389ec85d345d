"""SSH into a compute through this machine's loopback, as tempest does.

The whole cloud's first compute (tests/cloud/cloud.py, shared by the
modules of the test process), its sshd (tests/labhost/ssh.py) and the
forward from 127.0.0.2 to it; paramiko (tempest's SSH client) logs in
with the settings our tempest plugin's ``[numa_policy]`` group is given.
"""

import socket

import paramiko

from tests import base as test_base
from tests.cloud import cloud as cloud_mod
from tests.labhost import network
from tests.labhost import ssh

HOSTNAME = cloud_mod.COMPUTES[0][0]
ADDRESS = network.loopback_address(0)
# Key exchange and sshd's re-execution per connection, under TCG on a
# busy machine.
CONNECT_TIMEOUT = 120
CLOUD = None


def setUpModule():
    global CLOUD
    CLOUD = cloud_mod.for_test_module()


def _connect(settings, **credentials):
    client = paramiko.SSHClient()
    # As tempest's client does: a lab host's key is new at each boot.
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    host = dict(pair.split(':') for pair in
                settings['ssh_hosts'].split(','))[HOSTNAME]
    client.connect(host, port=int(settings['ssh_port']),
                   username=settings['ssh_user'], look_for_keys=False,
                   allow_agent=False, timeout=CONNECT_TIMEOUT,
                   banner_timeout=CONNECT_TIMEOUT,
                   auth_timeout=CONNECT_TIMEOUT, **credentials)
    return client


def _exec(client, command):
    _, stdout, stderr = client.exec_command(command,
                                            timeout=CONNECT_TIMEOUT)
    rc = stdout.channel.recv_exit_status()
    return rc, stdout.read().decode(), stderr.read().decode()


class SshTest(test_base.TestCase):
    """Root by the run's key at 127.0.0.2, never by password."""

    def setUp(self):
        super().setUp()
        self.host = CLOUD.computes[HOSTNAME]
        self.lab = self.host.lab
        self.key_path = CLOUD.ssh_key
        self.access = CLOUD.ssh_accesses[HOSTNAME]
        self.settings = CLOUD.tempest_ssh_settings()

    def _client(self, **credentials):
        client = _connect(self.settings, **credentials)
        self.addCleanup(client.close)
        return client

    def test_tempest_reaches_it_at_the_second_loopback_address(self):
        self.assertEqual('127.0.0.2', ADDRESS)
        self.assertEqual(
            {'ssh_user': 'root', 'ssh_private_key_path': self.key_path,
             'ssh_port': str(network.SSH_PORT),
             'ssh_hosts': ','.join(
                 f'{name}:{network.loopback_address(i)}'
                 for i, (name, _) in enumerate(cloud_mod.COMPUTES)),
             'virsh_command': 'virsh'}, self.settings)

    def test_root_by_key_runs_virsh_on_the_lab_hosts_libvirt(self):
        client = self._client(key_filename=self.key_path)
        rc, out, err = _exec(client, 'hostname')
        self.assertEqual((0, HOSTNAME), (rc, out.strip()), err)
        rc, out, err = _exec(
            client, f'{self.settings["virsh_command"]} -c qemu:///system '
                    f'version')
        self.assertEqual(0, rc, err)
        self.assertIn('Running hypervisor: QEMU', out)
        rc, out, err = _exec(client, 'id -u')
        self.assertEqual((0, '0'), (rc, out.strip()), err)

    def test_a_password_is_refused(self):
        error = self.assertRaises(
            paramiko.BadAuthenticationType, _connect, self.settings,
            password='password')
        self.assertEqual(['publickey'], error.allowed_types)

    def test_another_key_is_refused(self):
        stranger = paramiko.RSAKey.generate(2048)
        self.assertRaises(paramiko.AuthenticationException, _connect,
                          self.settings, pkey=stranger)

    def test_the_forward_listens_on_its_loopback_address_only(self):
        # QEMU binds 127.0.0.2:port, not the wildcard: the same port of
        # 127.0.0.1 (and of every other address) is not the lab host's.
        with socket.socket() as s:
            s.settimeout(5)
            self.assertNotEqual(0, s.connect_ex(('127.0.0.1',
                                                 self.access.port)))
        self.assertFalse(ssh.port_free(ADDRESS, self.access.port))
        self.assertTrue(ssh.port_free('127.0.0.8', self.access.port))

    def test_sshd_listens_on_the_cloud_nic_and_the_link_only(self):
        listening = self.lab.run('ss -ltnH').stdout
        self.assertIn(f'{network.CLOUD_ADDRESS.split("/")[0]}:22',
                      listening)
        # The link's, for nova's ssh and scp of a cold migration.
        self.assertIn(f'{self.host.link.ip}:22 ', listening)
        self.assertNotIn('0.0.0.0:22 ', listening)
