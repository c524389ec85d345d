"""One acting agent a host: an exclusive lock in the agent's state directory.

Two agents on one compute node (a second started by hand, or by a
deployment tool that did not see the first) would both carry out every
plan: each action twice, each told to the collector twice, each undo
racing the other's next step. The lock is ``flock(2)`` on a file of the
state directory, held for the process's life: the kernel lets it go
when the process ends, however it ends, so a killed agent never leaves
a stale lock behind. A dry run acts on nothing and takes no lock.
"""

import errno
import fcntl
import os

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

LOCK_NAME = 'agent.lock'


class HeldElsewhere(Exception):
    """Another process holds the lock; the message names it."""


def acquire(state_dir):
    """Lock ``state_dir``'s agent lock for this process; the open file.

    Keep the file for the process's life. Raises HeldElsewhere when
    another agent holds it. A state directory that cannot be written
    (its permissions, a read-only mount) is logged and the agent runs
    unguarded, as it did before the lock: None.
    """
    path = os.path.join(state_dir, LOCK_NAME)
    try:
        os.makedirs(state_dir, exist_ok=True)
        lock = open(path, 'a+')
    except OSError as exc:
        LOG.warning('Cannot keep the agent lock %s (%s): nothing stops a '
                    'second agent on this host from acting too', path, exc)
        return None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        lock.seek(0)
        holder = lock.read().strip() or 'unknown'
        lock.close()
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            raise HeldElsewhere(
                f'another numa-policy-agent (pid {holder}) runs on this '
                f'host: it holds {path}') from exc
        raise
    lock.truncate(0)
    lock.write(str(os.getpid()))
    lock.flush()
    return lock
