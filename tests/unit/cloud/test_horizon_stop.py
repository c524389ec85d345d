"""The cloud's Horizon process: its stop leaves nothing, and asks no grace."""

import os
import signal
import subprocess
import time

import fixtures

from tests import base as test_base
from tests.cloud import horizon

# A master that ignores the polite signals, with a child of its own, as
# gunicorn's master and worker are one process group.
STUBBORN = """
trap '' TERM INT QUIT
sleep 300 &
echo $! > "$1"
while :; do sleep 1; done
"""


def alive(pid):
    """Whether ``pid`` runs: a zombie waiting for its reaper does not."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            state = f.read().rpartition(')')[2].split()[0]
    except FileNotFoundError:
        return False
    return state != 'Z'


def written_pid(path):
    """The pid the stub wrote to ``path``; None until it has."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except FileNotFoundError:
        return None
    return int(text) if text else None


class HorizonStopTest(test_base.TestCase):

    def start_stub(self, served):
        """The stub as ``served``'s gunicorn; its child's pid."""
        child_file = os.path.join(served.workdir, 'child')
        served.process = subprocess.Popen(
            ['sh', '-c', STUBBORN, 'sh', child_file],
            start_new_session=True)
        self.addCleanup(horizon.services.kill_group, served.process.pid,
                        signal.SIGKILL)
        deadline = time.monotonic() + 10
        while (child := written_pid(child_file)) is None:
            self.assertLess(time.monotonic(), deadline, 'no child started')
            time.sleep(0.05)
        return child

    def test_stop_ends_the_whole_group(self):
        workdir = self.useFixture(fixtures.TempDir()).path
        served = horizon.Horizon(workdir, workdir)
        child = self.start_stub(served)
        master = served.process
        served.stop()
        self.assertIsNotNone(master.poll())
        self.assertIsNone(served.process)
        deadline = time.monotonic() + 10
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(alive(child), 'the worker outlived the stop')

    def test_stop_asks_for_no_graceful_shutdown(self):
        # gunicorn's master waited out its graceful timeout after SIGTERM
        # or SIGINT: SIGKILL is the only signal sent.
        workdir = self.useFixture(fixtures.TempDir()).path
        served = horizon.Horizon(workdir, workdir)
        self.start_stub(served)
        pid = served.process.pid
        sent = []
        real_kill_group = horizon.services.kill_group

        def recording(pgid, signum):
            sent.append((pgid, signum))
            real_kill_group(pgid, signum)

        self.useFixture(fixtures.MonkeyPatch(
            'tests.cloud.services.kill_group', recording))
        served.stop()
        self.assertEqual([(pid, signal.SIGKILL)], sent)

    def test_stop_without_a_start_does_nothing(self):
        served = horizon.Horizon('/nonexistent', '/nonexistent')
        served.stop()
        self.assertIsNone(served.process)
