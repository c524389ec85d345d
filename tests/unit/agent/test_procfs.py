"""psutil's view of processes and threads, on this machine's own kernel.

The guest is a child process with two threads named as QEMU names a
vCPU thread and its monitor's I/O thread (each writes its own ``comm``,
as ``pthread_setname_np`` does); the agent finds its vCPU as it finds a
guest's. A child, not this process: the unit tests run with eventlet's
patching, whose threads share one kernel thread.
"""

import subprocess
import sys

from agent.sensors import numafaults
from agent.sensors import procfs
from tests import base as test_base

GUEST = r'''
import sys, threading
ready, names, said = threading.Barrier(3), sys.argv[1:], threading.Lock()
def run(name):
    tid = threading.get_native_id()
    with open(f'/proc/self/task/{tid}/comm', 'w') as f:
        f.write(name)
    with said:
        sys.stdout.write(f'{tid}\n')
        sys.stdout.flush()
    ready.wait()
    sys.stdin.read()
for name in names:
    threading.Thread(target=run, args=(name,), daemon=True).start()
ready.wait()
sys.stdin.read()
'''


def exited_pid():
    child = subprocess.Popen(['true'])
    child.wait()
    return child.pid


class ThreadsTest(test_base.TestCase):

    def start_guest(self, *names):
        """The child's pid and its named threads' ids, in ``names``' order.

        It runs until the test ends (its standard input closes).
        """
        child = subprocess.Popen([sys.executable, '-c', GUEST, *names],
                                 stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        self.addCleanup(child.wait, 10)
        self.addCleanup(child.stdin.close)
        tids = [int(child.stdout.readline()) for _ in names]
        by_name = {}
        for tid in tids:
            with open(f'/proc/{child.pid}/task/{tid}/comm') as f:
                by_name[f.read().strip()] = tid
        return child.pid, [by_name[name] for name in names]

    def test_a_thread_named_as_a_vcpu_is_found_with_its_number(self):
        pid, (vcpu, monitor) = self.start_guest('CPU 7/KVM',
                                                'IO mon_iothread')
        self.assertLessEqual({pid, vcpu, monitor},
                             set(procfs.thread_ids('/', pid)))
        self.assertEqual('CPU 7/KVM', procfs.thread_name('/', vcpu))
        self.assertEqual({vcpu: 7}, numafaults.vcpu_threads('/', pid))

    def test_a_process_gone_has_no_threads_nor_name(self):
        pid = exited_pid()
        self.assertEqual((), procfs.thread_ids('/', pid))
        self.assertIsNone(procfs.thread_name('/', pid))
