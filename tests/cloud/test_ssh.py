"""SSH into a lab host through this machine's loopback, as tempest would.

One lab host with sshd (tests/labhost/ssh.py) and the forward from
127.0.0.7 to it; paramiko (tempest's SSH client) logs in with the
settings tempest's ``[numa_policy]`` group would be given. Skipped
where a lab host cannot boot or no sshd was fetched
(``python -m tests.labhost.emulator fetch``), failed instead with
NUMA_POLICY_REQUIRE_LAB=1.
"""

import shutil
import socket
import tempfile

import paramiko
import testtools

from tests.labhost import initramfs
from tests.labhost import machine
from tests.labhost import network
from tests.labhost import ssh

HOSTNAME = 'lab-ssh'
# Its loopback address's index (127.0.0.7): clear of the whole cloud's
# computes (127.0.0.2 and .3), which may be up in the same test process.
SSH_INDEX = 5
# Key exchange and sshd's re-execution per connection, under TCG on a
# busy machine.
CONNECT_TIMEOUT = 120


def _skip_unless_required(exc):
    if machine.required():
        raise exc
    raise testtools.TestCase.skipException(str(exc))


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


class SshTest(testtools.TestCase):
    """Root by the run's key at 127.0.0.7, never by password."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.dir = tempfile.mkdtemp(prefix='numa-lab-ssh-')
        cls.lab = None
        try:
            cls.key_path, public = ssh.make_key_pair(cls.dir)
            cls.access = ssh.access(SSH_INDEX, public)
            cls.settings = ssh.tempest_settings({HOSTNAME: cls.access},
                                                cls.key_path)
            # Booted from this (the test runner's main) thread, which
            # outlives it: QEMU dies with the thread that started it.
            cls.lab = machine.LabHost(
                network=network.LabNetwork(ssh=cls.access),
                hostname=HOSTNAME)
            cls.lab.boot()
            cls.lab.start_libvirtd()
        except initramfs.LabUnavailable as exc:
            cls._clean()
            _skip_unless_required(exc)
        except BaseException:
            cls._clean()
            raise

    @classmethod
    def _clean(cls):
        if cls.lab is not None:
            cls.lab.shutdown()
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def tearDownClass(cls):
        cls._clean()
        super().tearDownClass()

    def _client(self, **credentials):
        client = _connect(self.settings, **credentials)
        self.addCleanup(client.close)
        return client

    def test_tempest_reaches_it_at_the_second_loopback_address(self):
        self.assertEqual(
            {'ssh_user': 'root', 'ssh_private_key_path': self.key_path,
             'ssh_port': str(network.SSH_PORT),
             'ssh_hosts': f'{HOSTNAME}:127.0.0.7',
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
        # QEMU binds 127.0.0.7:port, not the wildcard: the same port of
        # 127.0.0.1 (and of every other address) is not the lab host's.
        with socket.socket() as s:
            s.settimeout(5)
            self.assertNotEqual(0, s.connect_ex(('127.0.0.1',
                                                 self.access.port)))
        self.assertFalse(ssh.port_free('127.0.0.7', self.access.port))
        self.assertTrue(ssh.port_free('127.0.0.8', self.access.port))

    def test_sshd_listens_on_the_cloud_nic_only(self):
        listening = self.lab.run('ss -ltnH').stdout
        self.assertIn(f'{network.CLOUD_ADDRESS.split("/")[0]}:22',
                      listening)
        self.assertNotIn('0.0.0.0:22 ', listening)
