"""The agent's and the collector's processes as the lab tiers drive them.

The cloud tier starts ``numa-policy-agent`` and ``numa-policy-collector``
in the background, waits for the collector's "Collecting reports from
topic" line, and stops every service with SIGTERM (SIGKILL after a
while). Each process here is started the same way, on libvirt's test
driver and oslo.messaging's in-process transport, then stopped with
SIGTERM: it must log its start, stop promptly, say so and exit 0. The
signals are oslo.service's to handle (nova_numa_policy/launcher): SIGINT
and SIGHUP must end each service in the same order, and the process a
deployment starts must be the one that works, not a supervisor of it.
"""

import os
import signal
import subprocess
import sys
import time

import fixtures
import psutil

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

    def terminate(self, signum=signal.SIGTERM):
        """SIGTERM (or ``signum``); the exit code and the seconds to exit."""
        started = time.monotonic()
        self.process.send_signal(signum)
        code = self.process.wait(STOP_TIMEOUT)
        return code, time.monotonic() - started

    def forks_of_itself(self):
        """Child processes running this process's own command line."""
        parent = psutil.Process(self.process.pid)
        command = parent.cmdline()
        return [child.pid for child in parent.children(recursive=True)
                if child.cmdline() == command]


def assert_ended_in_order(test, service, signum, last_words):
    """``signum`` ends ``service`` promptly, in order, saying so."""
    code, seconds = service.terminate(signum)
    test.assertEqual(0, code, service.log())
    test.assertLess(seconds, STOP_TIMEOUT)
    test.assertIn(last_words, service.log())
    test.assertNotIn('Traceback', service.log())


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

    def started_agent(self):
        agent = ServiceProcess(self, 'agent.service.cmd', AGENT_CONFIG)
        agent.wait_for_log(
            'numa-policy-agent starting on cn-signals (libvirt '
            'test:///default, period 1.0s, reports at version '
            f'{report_obj.NumaHostReport.VERSION})')
        return agent

    def assert_stopped_in_order(self, agent, signum):
        assert_ended_in_order(self, agent, signum,
                              'numa-policy-agent stopped')

    def test_sigterm_stops_the_agent_promptly_and_cleanly(self):
        agent = self.started_agent()
        # oslo.service runs it in the process that was started: no
        # supervisor between a service manager and the agent.
        self.assertEqual([], agent.forks_of_itself())
        self.assertIn('running service in main process', agent.log())
        self.assert_stopped_in_order(agent, signal.SIGTERM)

    def test_sigint_stops_the_agent_as_sigterm_does(self):
        self.assert_stopped_in_order(self.started_agent(), signal.SIGINT)

    def test_sighup_restarts_the_agent_in_its_process(self):
        agent = self.started_agent()
        agent.process.send_signal(signal.SIGHUP)
        agent.wait_for_log('numa-policy-agent stopped')
        # The same process, executed anew: a second start line, after
        # the first's orderly end; then SIGTERM ends it as ever.
        for _ in range(int(START_TIMEOUT / 0.2)):
            if agent.log().count('numa-policy-agent starting on') == 2:
                break
            self.assertIsNone(agent.process.poll(), agent.log())
            time.sleep(0.2)
        self.assertEqual(2, agent.log().count('numa-policy-agent starting'),
                         agent.log())
        self.assertIn('SIGHUP: stopping, then starting again', agent.log())
        self.assert_stopped_in_order(agent, signal.SIGTERM)
        self.assertEqual(2, agent.log().count('numa-policy-agent stopped'))

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

    def assert_stops_in_order(self, signum):
        collector = ServiceProcess(self, 'nova_numa_policy.collector.cmd',
                                   COLLECTOR_CONFIG)
        collector.wait_for_log('Collecting reports from topic')
        self.assertEqual([], collector.forks_of_itself())
        assert_ended_in_order(self, collector, signum,
                              'Collector stopped; counters: {}')

    def test_sigterm_stops_the_collector_promptly_and_cleanly(self):
        self.assert_stops_in_order(signal.SIGTERM)

    def test_sigint_stops_the_collector_as_sigterm_does(self):
        self.assert_stops_in_order(signal.SIGINT)
