"""The lab's sshd: tempest's settings, the fetch's libraries, unbooted."""

import os
import socket
import subprocess

import fixtures

from tests import base as test_base
from tests.labhost import network
from tests.labhost import ssh
from tests.labhost import tools

KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK0 lab'


def _access(address, port=2222):
    return network.SshAccess(address=address, port=port, authorized_key=KEY,
                             sshd='/s', keygen='/k')


class TempestSettingsTest(test_base.TestCase):

    def test_one_port_each_host_its_address(self):
        self.assertEqual(
            {'ssh_user': 'root', 'ssh_private_key_path': '/w/id_ed25519',
             'ssh_port': '2222',
             'ssh_hosts': 'lab-a:127.0.0.2,lab-b:127.0.0.3',
             'virsh_command': 'virsh'},
            ssh.tempest_settings({'lab-b': _access('127.0.0.3'),
                                  'lab-a': _access('127.0.0.2')},
                                 '/w/id_ed25519'))

    def test_ports_that_differ_are_refused(self):
        self.assertRaises(ValueError, ssh.tempest_settings,
                          {'a': _access('127.0.0.2'),
                           'b': _access('127.0.0.3', port=2223)}, '/k')
        self.assertRaises(ValueError, ssh.tempest_settings, {}, '/k')


class PortFreeTest(test_base.TestCase):

    def test_a_listener_holds_the_port_a_closed_one_does_not(self):
        server = socket.create_server(('127.0.0.1', 0))
        port = server.getsockname()[1]
        self.assertFalse(ssh.port_free('127.0.0.1', port))
        server.close()
        self.assertTrue(ssh.port_free('127.0.0.1', port))


LDD = """\
\tlinux-vdso.so.1 (0x00007ffd)
\tlibwrap.so.0 => not found
\tlibcrypt.so.1 => /lib/x86_64-linux-gnu/libcrypt.so.1 (0x00007f10)
\tlibnsl.so.2 => not found
\tlibwrap.so.0 => not found
"""


class SshdLibrariesTest(test_base.TestCase):

    def test_the_missing_sonames_once_each(self):
        self.assertEqual(['libwrap.so.0', 'libnsl.so.2'],
                         tools.missing_libraries(LDD))
        self.assertEqual([], tools.missing_libraries(''))

    def test_their_packages(self):
        self.assertEqual(('libwrap0', 'libnsl2'), tools.packages_for(
            ['libwrap.so.0', 'libnsl.so.2']))

    def test_an_unknown_library_is_named(self):
        error = self.assertRaises(ValueError, tools.packages_for,
                                  ['libwrap.so.0', 'libnew.so.9'])
        self.assertIn('libnew.so.9', str(error))

    def test_the_fetch_unpacks_what_ldd_finds_missing(self):
        cache = self.useFixture(fixtures.TempDir()).path
        calls = []
        answers = iter([LDD, ''])

        def run(cmd, **kwargs):
            calls.append(cmd)
            if cmd[0] == 'ldd':
                return subprocess.CompletedProcess(cmd, 0, next(answers))
            return subprocess.CompletedProcess(cmd, 0)

        def unpack(suite, packages, root, run):
            calls.append(('unpack', packages))
            os.makedirs(os.path.join(root, 'usr/sbin'))
            open(os.path.join(root, 'usr/sbin/sshd'), 'w').close()
            return root

        self.useFixture(fixtures.MonkeyPatch(
            'tests.labhost.emulator.unpack', unpack))
        sshd = tools.fetch_sshd(cache, run=run)
        self.assertEqual(os.path.join(tools.ssh_dir(cache), 'usr/sbin/sshd'),
                         sshd)
        self.assertEqual(
            [('unpack', ('openssh-server', 'openssh-client')),
             ['ldd', sshd], ('unpack', ('libwrap0', 'libnsl2')),
             ['ldd', sshd]], calls)
        self.assertFalse(os.path.exists(tools.ssh_dir(cache) + '.libraries'))

    def test_the_tools_say_how_to_fetch_them(self):
        cache = self.useFixture(fixtures.TempDir()).path
        from tests.labhost import initramfs
        error = self.assertRaises(initramfs.LabUnavailable,
                                  tools.ssh_tools, cache)
        self.assertIn('tests.labhost.emulator fetch', str(error))
