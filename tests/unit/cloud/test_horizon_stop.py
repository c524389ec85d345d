"""The cloud's Horizon process: its stop leaves nothing, at once."""

import os
import subprocess
import time

import fixtures
import testtools

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


class HorizonStopTest(testtools.TestCase):

    def test_stop_ends_the_whole_group_without_waiting(self):
        workdir = self.useFixture(fixtures.TempDir()).path
        child_file = os.path.join(workdir, 'child')
        served = horizon.Horizon(workdir, workdir)
        served.process = subprocess.Popen(
            ['sh', '-c', STUBBORN, 'sh', child_file],
            start_new_session=True)
        deadline = time.monotonic() + 10
        while not os.path.exists(child_file) or not open(
                child_file).read().strip():
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        child = int(open(child_file).read())
        master = served.process
        began = time.monotonic()
        served.stop()
        self.assertLess(time.monotonic() - began, 5)
        self.assertIsNotNone(master.poll())
        self.assertIsNone(served.process)
        deadline = time.monotonic() + 5
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(alive(child), 'the worker outlived the stop')

    def test_stop_without_a_start_does_nothing(self):
        served = horizon.Horizon('/nonexistent', '/nonexistent')
        served.stop()
        self.assertIsNone(served.process)
