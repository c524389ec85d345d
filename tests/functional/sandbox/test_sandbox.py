"""``numa-policy-lab sandbox`` as CI runs it: a subprocess, seen from outside.

Needs RabbitMQ on 127.0.0.1:5672 (guest/guest), like the sandbox itself.
Each test starts the real command, so what is checked is what a user
gets: the JSON summary, the exit status, and that nothing is left behind
(no child process, the API port closed) after Ctrl-C or a failure.
"""

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import psutil

from numa_policy_lab.sandbox import messaging
from tests import base as test_base

COMMAND = [sys.executable, '-m', 'numa_policy_lab.cli', 'sandbox',
           '--smoke']
URL = os.environ.get('NUMA_POLICY_SANDBOX_TRANSPORT_URL',
                     messaging.DEFAULT_URL)
API_LINE = re.compile(r'API listening on http://127\.0\.0\.1:(\d+)')
SMOKE_TIMEOUT = 180


class _Lines:
    """The subprocess's stderr, line by line, read by a thread."""

    def __init__(self, stream):
        self.lines = []
        self._queue = queue.Queue()
        threading.Thread(target=self._read, args=(stream,),
                         daemon=True).start()

    def _read(self, stream):
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, pattern, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=1)
            except queue.Empty:
                continue
            if line is None:
                break
            self.lines.append(line)
            match = re.search(pattern, line)
            if match:
                return match
        raise AssertionError(f'no line matching {pattern!r}; stderr so '
                             f'far:\n{"".join(self.lines)}')


def _port_is_free(port):
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(('127.0.0.1', port))
        except OSError:
            return False
    return True


class SandboxTestBase(test_base.TestCase):

    def setUp(self):
        super().setUp()
        try:
            messaging.check_broker(URL)
        except messaging.SandboxError as exc:
            self.skipTest(str(exc))

    def start(self, *extra, env=None, follow=True):
        """The sandbox subprocess, its stderr followed or not.

        Not followed: left to ``communicate()``.
        """
        process = subprocess.Popen(
            COMMAND + list(extra), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, **(env or {})))
        self.addCleanup(self._kill, process)
        return process, _Lines(process.stderr) if follow else None

    @staticmethod
    def _kill(process):
        # Only a test that failed early leaves it running.
        if process.poll() is None:
            process.kill()
        process.communicate()

    def assertNothingLeft(self, children, port):
        """No descendant of the sandbox runs; its API port is closed."""
        alive = [c for c in children if c.is_running()
                 and c.status() != psutil.STATUS_ZOMBIE]
        self.assertEqual([], alive)
        self.assertTrue(_port_is_free(port),
                        f'the API port {port} is still taken')


class SmokeSummaryTest(SandboxTestBase):

    def test_every_server_is_placed_and_its_policy_applied(self):
        process, _ = self.start('--json', follow=False)
        out, err = process.communicate(timeout=SMOKE_TIMEOUT)
        self.assertEqual(0, process.returncode, err[-3000:])
        summary = json.loads(out)
        self.assertTrue(summary['ok'], summary['problems'])
        computes = {c['name'] for c in summary['computes']}
        servers = summary['servers']
        self.assertEqual(6, len(servers))
        # The scripted mix asks for every kind of policy and for none.
        self.assertEqual(
            {'interleave', 'home', 'first-touch+carrefour', 'auto',
             'first-touch', None},
            {s['requested_policy'] for s in servers})
        for server in servers:
            self.assertEqual('ACTIVE', server['status'], server['name'])
            self.assertIn(server['host'], computes)
            # The explanation covers every compute, from agent reports.
            self.assertEqual(computes, set(server['scheduler_view']))
            self.assertIsNotNone(server['throughput']['after'])
            if server['requested_policy'] is not None:
                self.assertTrue(server['policy_in_force'], server)
            # What the loops did for it, or why they held back.
            self.assertTrue(bool(server['actions']) != bool(
                server['held_back']), server)
        # Each host measures what its compute says: the kernel's hinting
        # faults (memory under the default policy only), or memory
        # bandwidth (every guest's vCPUs, whatever its memory policy).
        host_signal = {c['name']: c['signal'] for c in summary['computes']}
        self.assertEqual({'hinting-faults', 'memory-bandwidth'},
                         set(host_signal.values()))
        for server in servers:
            expected = host_signal[server['host']]
            if (expected == 'hinting-faults'
                    and server['requested_policy'] in ('interleave',
                                                       'home')):
                expected = None
            if server['signal'] is not None or expected is None:
                self.assertEqual(expected, server['signal'], server)
        auto = next(s for s in servers if s['requested_policy'] == 'auto')
        self.assertIsNotNone(auto['auto_choice'])
        # Reports reached the collector through RabbitMQ for every host.
        for compute in summary['computes']:
            self.assertGreater(compute['last_report_seq'], 1)
        # Every action the loops took is in the collector's API, told by
        # the agents themselves, beside those of the policies' own
        # enforcement ('policy').
        self.assertEqual(
            sum(sum(s['actions'].values()) for s in servers),
            sum(count for name, count
                in summary['actions']['by_loop'].items()
                if name != 'policy'))


class CleanupTest(SandboxTestBase):

    def _run_until(self, pattern, env=None):
        process, lines = self.start(env=env)
        port = int(lines.wait_for(API_LINE.pattern, 60).group(1))
        if pattern:
            lines.wait_for(pattern, 120)
        return process, lines, port

    def test_ctrl_c_mid_run_leaves_nothing_behind(self):
        process, lines, port = self._run_until(r'\[1/\d+\] ')
        children = psutil.Process(process.pid).children(recursive=True)
        self.assertFalse(_port_is_free(port), 'the API should be up')
        process.send_signal(signal.SIGINT)
        self.assertEqual(130, process.wait(timeout=120))
        lines.wait_for('nothing left running', 10)
        self.assertNothingLeft(children, port)

    def test_a_failure_after_the_api_started_leaves_nothing_behind(self):
        process, lines, port = self._run_until(
            None, env={'NUMA_POLICY_SANDBOX_FAIL_AT': 'api-started'})
        children = psutil.Process(process.pid).children(recursive=True)
        self.assertEqual(1, process.wait(timeout=120))
        lines.wait_for('failure injected at .api-started.', 10)
        self.assertNothingLeft(children, port)
