"""The privileged helper as deployed, probed by the agent's own user.

The lab host has the project's sudoers rule installed and the agent's
configuration in /etc/nova; the probes run as nova, the user a
compromised agent would run as, against the real privsep daemon that
sudo starts. The account it runs as is the default: QEMU's.
"""

import functools
import shlex

from tests.host import base
from tests.labhost import deploy

SOCKET = '/tmp/tmpabcd_123/privsep.sock'
HELPER = ['/usr/bin/privsep-helper', '--config-file', deploy.NOVA_CONF,
          '--config-file', deploy.AGENT_CONF, '--privsep_context',
          'agent.privsep.pages', '--privsep_sock_path', SOCKET]
# The same with neutron's ML2 file between nova's and ours, as devstack
# starts the agent where neutron's ML2/OVS agent runs.
ML2_CONF = '/etc/neutron/plugins/ml2/ml2_conf.ini'
HELPER_WITH_ML2 = HELPER[:3] + ['--config-file', ML2_CONF] + HELPER[3:]
EVIL_CONF = """\
[numa_policy_privileged]
user = root
group = root
capabilities = CAP_SYS_ADMIN,CAP_DAC_READ_SEARCH,CAP_SYS_PTRACE
guest_pid_dir = /tmp
"""


def _fields(status):
    """/proc/<pid>/status as a dict of its fields' texts."""
    return dict(line.split(':\t', 1) for line in status.splitlines()
                if ':\t' in line)


class PrivilegedHelperTest(base.LabTestCase):

    def setUp(self):
        super().setUp()
        deploy.write_config(self.lab, self.agent_config(page_migration=True))
        # Any other process of QEMU's user: what a pid could name instead.
        self.other = int(self.lab.run(
            'setpriv --reuid=libvirt-qemu --regid=libvirt-qemu '
            '--clear-groups sleep 600 >/dev/null 2>&1 & echo $!').stdout)
        self.addCleanup(self.lab.run, f'kill {self.other}', check=False)

    @functools.cached_property
    def guest(self):
        """A paused guest, started when a test first asks for it.

        Three of the tests never name a guest: they need no domain, and
        a domain's start costs seconds of the lab host's emulated CPUs.
        """
        return self.start_guest({}, memory_mb=64, paused=True)

    def probe(self, *probes, helper_command=None, user='nova'):
        return self.probe_daemons(*probes, helper_command=helper_command,
                                  user=user)['answers']

    def probe_daemons(self, *probes, helper_command=None, user='nova'):
        return self.lab.call('tests.labhost.inside:privsep_probes',
                             deploy.CONFIG_FILES, [list(p) for p in probes],
                             helper_command=helper_command, user=user,
                             timeout=300)

    def write_evil_conf(self):
        self.lab.run(f'cat > /tmp/evil.conf <<"EOF"\n{EVIL_CONF}EOF',
                     user='nova')
        self.addCleanup(self.lab.run, 'rm -f /tmp/evil.conf')

    def sudo(self, args, listing=False):
        line = ' '.join(shlex.quote(a) for a in args)
        return self.lab.run(f'sudo -n {"-l " if listing else ""}{line}',
                            user='nova', check=False)

    def test_the_guest_is_served_by_a_daemon_as_qemus_user(self):
        result = self.probe_daemons(('read_numa_maps', [self.guest.pid]))
        self.assertEqual(['served'], [a[0] for a in result['answers']])
        (status,) = result['daemons']
        self.addDetail('daemon-status', base.text(status))
        daemon = _fields(status)
        qemu = _fields(self.lab.run(f'cat /proc/{self.guest.pid}/status')
                       .stdout)
        # Real, effective, saved and file system ids: the guest's QEMU's.
        for ids in ('Uid', 'Gid'):
            self.assertEqual(qemu[ids], daemon[ids])
            self.assertEqual(1, len(set(daemon[ids].split())), ids)
        self.assertNotEqual('0', daemon['Uid'].split()[0])
        cap_sys_nice = 1 << 23
        self.assertEqual(cap_sys_nice, int(daemon['CapEff'], 16))
        self.assertEqual(cap_sys_nice, int(daemon['CapPrm'], 16))

    def test_a_path_in_place_of_a_pid_reads_nothing(self):
        answers = self.probe(
            ('read_numa_maps', ['1/root/../../../etc/shadow']),
            ('read_mappings', ['self/root/etc/shadow']),
            ('read_numa_maps', [str(self.guest.pid)]),
            ('read_numa_maps', [True]))
        self.assertEqual(['TypeError'] * 4, [a[0] for a in answers])
        for _, message in answers:
            self.assertNotIn('root:', message)

    def test_a_process_that_is_no_guest_is_refused(self):
        (answer,) = self.probe(('read_numa_maps', [self.other]))
        self.assertEqual('NotAGuest', answer[0])
        self.assertIn('no pidfile', answer[1])
        (answer,) = self.probe(('move_addresses', [self.other, [4096], 0]))
        self.assertEqual('NotAGuest', answer[0])

    def test_a_recycled_pid_is_refused(self):
        # A stale pidfile of a domain gone, its pid now another process.
        stale = '/run/libvirt/qemu/instance-gone.pid'
        self.lab.run(f'echo {self.other} > {stale}')
        self.addCleanup(self.lab.run, f'rm -f {stale}')
        (answer,) = self.probe(('read_numa_maps', [self.other]))
        self.assertEqual('NotAGuest', answer[0])
        self.assertIn('stale', answer[1])

    def test_extra_arguments_to_an_entry_point_are_refused(self):
        answers = self.probe(
            ('read_numa_maps', [self.guest.pid, 'environ']),
            ('move_addresses', [self.guest.pid, ['4096'], 0]),
            ('move_window', [self.guest.pid, 0, 16, 4096, 1 << 40]))
        self.assertEqual(['TypeError', 'TypeError', 'ValueError'],
                         [a[0] for a in answers])

    def test_sudo_admits_the_agents_command_line_only(self):
        self.assertEqual(0, self.sudo(HELPER, listing=True).rc)
        self.assertEqual(0, self.sudo(HELPER_WITH_ML2, listing=True).rc)
        self.write_evil_conf()
        for line in (
                HELPER + ['--config-file', '/tmp/evil.conf'],
                HELPER[:3] + ['--config-file', '/tmp/evil.conf'] + HELPER[3:],
                HELPER_WITH_ML2 + ['--config-file', '/tmp/evil.conf'],
                HELPER[:-1] + [SOCKET + ' --config-file /tmp/evil.conf'],
                HELPER[:2] + ['/tmp/evil.conf'] + HELPER[3:],
                HELPER[:6] + ['os_brick.privileged.default'] + HELPER[7:],
                HELPER[:-1] + ['/run/evil/privsep.sock']):
            refused = self.sudo(line)
            self.assertEqual(1, refused.rc, line)
            self.assertIn('password is required', refused.stderr)

    def test_a_configuration_the_caller_wrote_serves_nothing(self):
        # As oslo.rootwrap would let through: privsep-helper as root with
        # a --config-file of the agent's user's own appended.
        self.write_evil_conf()
        helper = ' '.join(HELPER[:5] + ['--config-file', '/tmp/evil.conf'])
        (answer,) = self.probe(('read_numa_maps', [self.guest.pid]),
                               helper_command=helper, user=None)
        self.assertEqual('PermissionError', answer[0])
        self.assertIn('/tmp/evil.conf, which someone other than root',
                      answer[1])
