"""The agent's and the collector's processes as the lab tiers drive them.

The cloud tier starts ``numa-policy-agent`` and ``numa-policy-collector``
in the background, waits for the collector's "Collecting reports from
topic" line, and stops every service with SIGTERM (SIGKILL after a
while). Each process here is started the same way, on libvirt's test
driver and oslo.messaging's in-process transport, then stopped with
SIGTERM: it must log its start, stop promptly, say so and exit 0.
"""

import os
import signal
import subprocess
import sys
import time

import fixtures

from nova_numa_policy.objects import report as report_obj
from tests import base as test_base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# Importing nova's and oslo's modules takes seconds on a loaded machine.
START_TIMEOUT = 120
# What "promptly" means: well within the cloud tier's SIGKILL deadline.
STOP_TIMEOUT = 15


class ServiceProcess:
    """One service's process, its log in a file; killed at the test's end."""

    def __init__(self, test, module, config):
        folder = test.useFixture(fixtures.TempDir()).path
        conf = os.path.join(folder, 'service.conf')
        with open(conf, 'w') as conf_file:
            conf_file.write(config.format(folder=folder))
        self.log_path = os.path.join(folder, 'service.log')
        with open(self.log_path, 'w') as log_file:
            self.process = subprocess.Popen(
                [sys.executable, '-m', module, '--config-file', conf],
                stdout=log_file, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, cwd=ROOT)
        test.addCleanup(self._kill)

    def _kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def log(self):
        with open(self.log_path) as log_file:
            return log_file.read()

    def wait_for_log(self, text, timeout=START_TIMEOUT):
        """Until ``text`` is logged; AssertionError if the process ends."""
        for _ in range(int(timeout / 0.2)):
            if text in self.log():
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f'no {text!r} (exit code '
                             f'{self.process.poll()}):\n{self.log()}')

    def terminate(self):
        """SIGTERM; the exit code and the seconds it took to exit."""
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(STOP_TIMEOUT)
        return code, time.monotonic() - started


AGENT_CONFIG = """[DEFAULT]
transport_url = fake:/
[oslo_messaging_notifications]
driver = noop
[numa_policy_agent]
libvirt_uri = test:///default
host = cn-signals
period = 1
state_dir = {folder}/state
"""

COLLECTOR_CONFIG = """[DEFAULT]
transport_url = fake:/
[numa_policy_collector]
connection = sqlite:///{folder}/collector.db
"""


class AgentProcessTest(test_base.TestCase):

    def test_sigterm_stops_the_agent_promptly_and_cleanly(self):
        agent = ServiceProcess(self, 'agent.service.cmd', AGENT_CONFIG)
        agent.wait_for_log(
            'numa-policy-agent starting on cn-signals (libvirt '
            'test:///default, period 1.0s, reports at version '
            f'{report_obj.NumaHostReport.VERSION})')
        code, seconds = agent.terminate()
        self.assertEqual(0, code, agent.log())
        self.assertLess(seconds, STOP_TIMEOUT)
        self.assertIn('numa-policy-agent stopped', agent.log())
        self.assertNotIn('Traceback', agent.log())

    def test_a_second_agent_on_the_host_exits_saying_why(self):
        first = ServiceProcess(self, 'agent.service.cmd', AGENT_CONFIG)
        first.wait_for_log('numa-policy-agent starting on cn-signals')
        # The first's state directory: the same host.
        state = os.path.join(os.path.dirname(first.log_path), 'state')
        second = ServiceProcess(
            self, 'agent.service.cmd',
            AGENT_CONFIG.replace('{folder}/state', state))
        self.assertEqual(1, second.process.wait(START_TIMEOUT),
                         second.log())
        self.assertIn(f'another numa-policy-agent (pid {first.process.pid})'
                      f' runs on this host', second.log())
        self.assertNotIn('Traceback', second.log())
        # The first acts on, and stops as ever.
        self.assertIsNone(first.process.poll())
        self.assertEqual(0, first.terminate()[0], first.log())


class CollectorProcessTest(test_base.TestCase):

    def test_sigterm_stops_the_collector_promptly_and_cleanly(self):
        collector = ServiceProcess(self, 'nova_numa_policy.collector.cmd',
                                   COLLECTOR_CONFIG)
        collector.wait_for_log('Collecting reports from topic')
        code, seconds = collector.terminate()
        self.assertEqual(0, code, collector.log())
        self.assertLess(seconds, STOP_TIMEOUT)
        self.assertIn('Collector stopped; counters: {}', collector.log())
        self.assertNotIn('Traceback', collector.log())
