"""A lab host's cloud NIC, its link to another and the relay, unbooted."""

import os
import socket
import threading

from tests import base as test_base
from tests.cloud import endpoints
from tests.labhost import network
from tests.labhost import relay
from tests.labhost import topology

RELAY = ('/venv/bin/python', '-I', '-S', '/src/tests/labhost/relay.py')


def _option(args, flag, prefix):
    """Values of ``flag`` (e.g. -netdev) that start with ``prefix``."""
    return [args[i + 1] for i, a in enumerate(args)
            if a == flag and args[i + 1].startswith(prefix)]


class CloudNicTest(test_base.TestCase):

    def test_one_forward_per_port_to_the_relay(self):
        args = network.qemu_args(network.LabNetwork(
            cloud_ports=(5672, 5000), relay=RELAY))
        (netdev,) = _option(args, '-netdev', 'user,id=cloud')
        self.assertEqual(
            'user,id=cloud,restrict=on'
            ',guestfwd=tcp:10.0.2.100:5000-cmd:/venv/bin/python -I -S '
            '/src/tests/labhost/relay.py 5000'
            ',guestfwd=tcp:10.0.2.100:5672-cmd:/venv/bin/python -I -S '
            '/src/tests/labhost/relay.py 5672', netdev)
        self.assertEqual(
            ['virtio-net-pci,netdev=cloud,mac=52:54:00:c1:00:01,'
             'bus=pcie.0,romfile='], _option(args, '-device', 'virtio'))

    def test_the_gateway_is_the_one_the_cloud_names(self):
        self.assertEqual(endpoints.GUEST_GATEWAY, network.CLOUD_GATEWAY)
        args = network.qemu_args(network.cloud_network(
            endpoints.PORTS.values(), relay=RELAY))
        (netdev,) = _option(args, '-netdev', 'user')
        self.assertEqual(len(endpoints.PORTS), netdev.count('guestfwd='))
        self.assertEqual(len(endpoints.PORTS),
                         netdev.count('-cmd:/venv/bin/python'))

    def test_a_comma_in_the_relay_is_escaped_for_qemu(self):
        (netdev,) = _option(network.cloud_args(
            [80], ('/a,b/python', 'relay.py')), '-netdev', 'user')
        self.assertIn('-cmd:/a,,b/python relay.py 80', netdev)

    def test_a_relay_word_needing_quotes_is_refused(self):
        self.assertRaises(ValueError, network.cloud_args, [80],
                          ('/my venv/python', 'relay.py'))

    def test_no_relay_no_cloud_nic(self):
        self.assertRaises(ValueError, network.cloud_args, [80], ())

    def test_the_default_relay_is_this_interpreter_isolated(self):
        python, *options, script = network.python_relay('/x/python')
        self.assertEqual('/x/python', python)
        self.assertEqual(['-I', '-S'], options)
        self.assertTrue(os.path.exists(script))

    def test_off_the_numa_nic(self):
        # The topology's NIC sits behind the expander bridge of its node;
        # the cloud's and the link's NICs on the root bus, none of theirs.
        args = network.qemu_args(network.cloud_network(
            [5672], link=network.link_ends('/w/l.sock')[0], relay=RELAY))
        devices = _option(args, '-device', 'virtio-net-pci')
        self.assertEqual(2, len(devices))
        for device in devices:
            self.assertIn('bus=pcie.0', device)
        self.assertNotIn('net0', ' '.join(args))
        numa_nic = topology.nic_args(topology.TWO_NODES)
        self.assertEqual([], [a for a in args if a in numa_nic
                              and a not in ('-device', '-netdev')])


class LinkTest(test_base.TestCase):

    def test_the_first_end_listens_the_second_connects(self):
        first, second = network.link_ends('/w/link.sock')
        self.assertEqual(
            ['stream,id=link,server=on,addr.type=unix,'
             'addr.path=/w/link.sock'],
            _option(network.link_args(first), '-netdev', 'stream'))
        self.assertEqual(
            ['stream,id=link,server=off,addr.type=unix,'
             'addr.path=/w/link.sock'],
            _option(network.link_args(second), '-netdev', 'stream'))

    def test_each_end_its_address_and_mac(self):
        first, second = network.link_ends('/w/link.sock')
        self.assertEqual(('192.168.77.1/24', '192.168.77.1',
                          '52:54:00:c1:01:01'),
                         (first.address, first.ip, first.mac))
        self.assertEqual(('192.168.77.2/24', '192.168.77.2',
                          '52:54:00:c1:01:02'),
                         (second.address, second.ip, second.mac))

    def test_a_link_joins_two(self):
        self.assertRaises(ValueError, network.link_ends, '/w/l', count=3)


class GuestSettingsTest(test_base.TestCase):

    def test_no_network_changes_nothing(self):
        self.assertEqual({}, network.guest_settings(None))
        self.assertEqual([], network.qemu_args(None))
        self.assertEqual({}, network.guest_settings(network.LabNetwork()))
        self.assertEqual([], network.qemu_args(network.LabNetwork()))

    def test_cloud_and_link(self):
        link = network.link_ends('/w/l.sock')[1]
        self.assertEqual(
            {'LAB_CLOUD_MAC': '52:54:00:c1:00:01', 'LAB_CLOUD_NIC': 'cloud0',
             'LAB_CLOUD_ADDRESS': '10.0.2.15/24',
             'LAB_LINK_MAC': '52:54:00:c1:01:02', 'LAB_LINK_NIC': 'link0',
             'LAB_LINK_ADDRESS': '192.168.77.2/24'},
            network.guest_settings(network.cloud_network(
                [5672], link=link, relay=RELAY)))


class RelayTest(test_base.TestCase):
    """relay.py between a socket pair and a listener on 127.0.0.1."""

    def _listener(self):
        server = socket.create_server(('127.0.0.1', 0))
        self.addCleanup(server.close)
        return server

    def _relay(self, port):
        guest, inner = socket.socketpair()
        self.addCleanup(guest.close)
        self.addCleanup(inner.close)
        result = []
        thread = threading.Thread(target=lambda: result.append(
            relay.relay(port, inner.fileno(), inner.fileno())))
        thread.start()
        return guest, thread, result

    def test_bytes_both_ways_until_the_service_closes(self):
        server = self._listener()
        guest, thread, result = self._relay(server.getsockname()[1])
        conn, _ = server.accept()
        guest.sendall(b'ping')
        self.assertEqual(b'ping', conn.recv(4))
        conn.sendall(b'pong')
        self.assertEqual(b'pong', guest.recv(4))
        conn.close()
        thread.join(10)
        self.assertEqual([0], result)

    def test_the_guest_closing_lets_the_service_answer(self):
        server = self._listener()
        guest, thread, result = self._relay(server.getsockname()[1])
        conn, _ = server.accept()
        guest.sendall(b'request')
        guest.shutdown(socket.SHUT_WR)
        received = b''
        while True:
            data = conn.recv(64)
            if not data:
                break
            received += data
        self.assertEqual(b'request', received)
        conn.sendall(b'answer')
        conn.close()
        self.assertEqual(b'answer', guest.recv(64))
        thread.join(10)
        self.assertEqual([0], result)

    def test_nothing_listening_closes_the_guest(self):
        server = self._listener()
        port = server.getsockname()[1]
        server.close()
        self.assertEqual(1, relay.relay(port, 0, 1))


KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK0 nova-numa-policy-lab'


def _access(address='127.0.0.2', port=2222, key=KEY):
    return network.SshAccess(address=address, port=port,
                             authorized_key=key, sshd='/c/usr/sbin/sshd',
                             keygen='/c/usr/bin/ssh-keygen',
                             library_path='/c/usr/lib')


class SshForwardTest(test_base.TestCase):

    def test_off_by_default(self):
        args = network.qemu_args(network.cloud_network([5672], relay=RELAY))
        self.assertNotIn('hostfwd', ' '.join(args))
        self.assertNotIn('LAB_SSH_SSHD', network.guest_settings(
            network.cloud_network([5672], relay=RELAY)))

    def test_the_loopback_port_to_sshd_on_the_cloud_nic(self):
        args = network.qemu_args(network.cloud_network(
            [5672], relay=RELAY, ssh=_access()))
        (netdev,) = _option(args, '-netdev', 'user,id=cloud')
        self.assertTrue(netdev.startswith('user,id=cloud,restrict=on,'))
        self.assertTrue(netdev.endswith(
            ',hostfwd=tcp:127.0.0.2:2222-10.0.2.15:22'))
        self.assertEqual(1, netdev.count('hostfwd='))
        self.assertEqual(1, netdev.count('guestfwd='))

    def test_a_cloud_nic_for_ssh_alone_needs_no_relay(self):
        args = network.qemu_args(network.LabNetwork(ssh=_access()))
        self.assertEqual(
            ['-netdev', 'user,id=cloud,restrict=on'
             ',hostfwd=tcp:127.0.0.2:2222-10.0.2.15:22',
             '-device', 'virtio-net-pci,netdev=cloud,'
             'mac=52:54:00:c1:00:01,bus=pcie.0,romfile='], args)
        settings = network.guest_settings(network.LabNetwork(ssh=_access()))
        self.assertEqual('cloud0', settings['LAB_CLOUD_NIC'])

    def test_only_a_loopback_address(self):
        for address in ('0.0.0.0', '10.0.2.2', '192.168.1.5', '::1',
                        '128.0.0.1'):
            self.assertRaises(ValueError, _access, address=address)
        self.assertEqual('127.3.0.9', _access(address='127.3.0.9').address)

    def test_a_port_and_one_key_line(self):
        self.assertRaises(ValueError, _access, port=0)
        self.assertRaises(ValueError, _access, port=65536)
        self.assertRaises(ValueError, _access, key='')
        self.assertRaises(ValueError, _access, key=KEY + '\n' + KEY)

    def test_one_loopback_address_per_lab_host_after_127_0_0_1(self):
        self.assertEqual(['127.0.0.2', '127.0.0.3', '127.0.1.1'],
                         [network.loopback_address(i) for i in (0, 1, 255)])
        self.assertRaises(ValueError, network.loopback_address, -1)
        self.assertRaises(ValueError, network.loopback_address, 2 ** 24)

    def test_guest_settings_start_sshd(self):
        settings = network.guest_settings(network.LabNetwork(ssh=_access()))
        self.assertEqual(
            {'LAB_SSH_DIR': '/run/lab-ssh',
             'LAB_SSH_SSHD': '/c/usr/sbin/sshd',
             'LAB_SSH_KEYGEN': '/c/usr/bin/ssh-keygen',
             'LAB_SSH_LIBRARY_PATH': '/c/usr/lib',
             'LAB_SSH_AUTHORIZED_KEY': KEY},
            {k: v for k, v in settings.items()
             if k.startswith('LAB_SSH_') and k != 'LAB_SSH_CONFIG'})

    def test_sshd_lets_root_in_by_key_only_on_the_cloud_nic(self):
        lines = network.sshd_config().splitlines()
        for line in ('ListenAddress 10.0.2.15:22',
                     'PermitRootLogin prohibit-password',
                     'PasswordAuthentication no',
                     'KbdInteractiveAuthentication no',
                     'AuthorizedKeysFile /run/lab-ssh/authorized_keys',
                     'HostKey /run/lab-ssh/ssh_host_ed25519_key'):
            self.assertIn(line, lines)
        self.assertEqual(1, sum(line.startswith('HostKey') for line in lines))
        self.assertEqual(1, sum(line.startswith('ListenAddress')
                                for line in lines))

    def test_sshd_also_listens_on_the_link_for_nova_between_computes(self):
        (first, _) = network.link_ends('/tmp/l.sock')
        settings = network.guest_settings(network.LabNetwork(
            ssh=_access(), link=first))
        listening = [line for line in settings['LAB_SSH_CONFIG'].splitlines()
                     if line.startswith('ListenAddress')]
        self.assertEqual(['ListenAddress 10.0.2.15:22',
                          f'ListenAddress {first.ip}:22'], listening)
        # nova's scp of the disks speaks SFTP.
        self.assertIn('Subsystem sftp internal-sftp',
                      settings['LAB_SSH_CONFIG'].splitlines())
