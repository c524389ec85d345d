"""numa-policy-agent as an operator first runs it, on a real host."""

import os
import shlex
import sys

from nova_numa_policy.objects import wire as report_wire
from tests.host import base

AGENT = os.path.join(os.path.dirname(sys.executable), 'numa-policy-agent')


class FirstRunTest(base.LabTestCase):

    def agent(self, *args, config=None):
        command = shlex.quote(AGENT) + ' ' + ' '.join(args)
        if config is not None:
            self.lab.run(f'cat > /tmp/agent-cli.conf <<"EOF"\n{config}EOF')
            self.addCleanup(self.lab.run, 'rm -f /tmp/agent-cli.conf')
            command += ' --config-file /tmp/agent-cli.conf'
        return self.lab.run(command, user='nova', check=False, timeout=600)

    def test_without_libvirtd_one_line_says_what_is_missing(self):
        self.lab.run('pkill -x libvirtd; while pidof libvirtd; do sleep 0.2;'
                     ' done')
        self.addCleanup(self.lab.start_libvirtd)
        # The default configuration: no file at all.
        result = self.agent('--once', '--dry-run')
        self.assertEqual(1, result.rc, result.stderr)
        self.assertEqual('', result.stdout)
        self.assertNotIn('Traceback', result.stderr)
        lines = [line for line in result.stderr.splitlines()
                 if ' ERROR ' in line or line.startswith('libvirt:')]
        self.assertEqual(1, len(lines), result.stderr)
        self.assertIn('No libvirt at qemu:///system: Failed to connect '
                      'socket', lines[0])

    def test_the_first_report_has_the_nics_node_and_the_nodes_loads(self):
        self.busy(self.node_cpus(1))
        result = self.agent(
            '--once', '--dry-run',
            config='[numa_policy_agent]\nphysnet_interfaces = '
                   'physnet1:eth0\n')
        self.assertEqual(0, result.rc, result.stderr)
        report = report_wire.report_from_json(result.stdout, 1 << 20)
        self.assertEqual([('eth0', self.TOPOLOGY.nic_node)],
                         [(n.name, n.numa_node) for n in report.nics])
        loads = {n.id: n.cpu_load for n in report.numa_nodes}
        # Node 1's two CPUs spin; node 0 runs the agent and little else.
        self.assertGreater(loads[1], 0.8, loads)
        self.assertLess(loads[0], loads[1], loads)
