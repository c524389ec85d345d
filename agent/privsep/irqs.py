"""The steering daemon's entry points: a NIC's interrupts, vhost workers.

The daemon (:data:`agent.privsep.steering`) runs as root with
``CAP_SYS_NICE`` alone; whoever reaches its socket chooses the
arguments. So each entry point checks, before it writes anything:

* :func:`steer`: ``nic`` is the name of a network interface with a
  device, ``irq`` one of the vectors that device raises (never a disk's,
  a timer's, another device's), ``cpus`` a non-empty list of online
  CPUs. If irqbalance runs, the IRQ is put in (or taken out of) its
  banned list through its socket, unless the agent found it there; if
  irqbalance runs and its socket does not answer, nothing is written
  (:class:`BalancerUnreachable`).
* :func:`pin_threads`: ``pid`` is a checked guest (:mod:`agent.privsep.trust`),
  each tid one of its vhost workers: a thread of that very process
  named ``vhost-<pid>`` (Linux 6.4+, read through the checked
  process's directory), or a kernel thread, child of kthreadd, of that
  name (before 6.4).

The agent's side, which keeps the affinities it found and turns the
daemon's answers into the agent's errors, is
:class:`agent.backend.iopath.Steering`.
"""

import os
import re
import socket
import struct

from agent import privsep
from agent.privsep import trust
from agent.sensors import irqbalance
from agent.sensors import irqs as irq_sensor
from agent.sensors import sysfs
from agent.sensors import vhost

# Where the host is read and written; tests point it at a fixture tree.
ROOT = '/'
MAX_IRQ = (1 << 24) - 1  # far above any kernel's NR_IRQS
MAX_CPU = (1 << 13) - 1  # the largest kernel configs' NR_CPUS
# IFNAMSIZ less its terminating NUL; no path separator, no dot names.
_IFNAME = re.compile(r'^(?!\.\.?$)[A-Za-z0-9_.:@-]{1,15}$')
TALK_TIMEOUT = 2.0
REPLY_BYTES = 1 << 16


class BalancerUnreachable(PermissionError):
    """irqbalance runs but does not answer: its IRQs are not ours."""


class NotAWorker(PermissionError):
    """A thread id that is not one of the guest's vhost workers."""


def interface(value):
    if type(value) is not str or not _IFNAME.match(value):
        raise ValueError(f'{value!r} is not a network interface name')
    return value


def irq_number(value):
    return trust.integer(value, 'irq', 1, MAX_IRQ)


def cpu_list(values, root=None):
    """``values`` as a sorted list of online CPUs; raise otherwise."""
    if type(values) not in (list, tuple) or not values:
        raise TypeError('cpus must be a non-empty list of integers')
    cpus = sorted({trust.integer(v, 'cpu', 0, MAX_CPU) for v in values})
    offline = set(cpus) - sysfs.online_cpus(root or ROOT)
    if offline:
        raise ValueError(f'CPUs {sorted(offline)} are not online')
    return cpus


def nic_irq(nic, irq, root=None):
    """Check that ``irq`` is raised by the device of interface ``nic``."""
    interface(nic)
    irq_number(irq)
    if irq not in irq_sensor.nic_irqs(root or ROOT, nic):
        raise PermissionError(f'IRQ {irq} is not raised by the device of '
                              f'{nic}')
    return irq


def _talk(path, command):
    """Send one command to irqbalance's socket; its answer ('' for none).

    irqbalance takes one message per connection and trusts the peer's
    credentials only as a control message, so they are sent with it. It
    closes the connection once the command is carried out: reading to
    the end waits for that, answer or not.
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(TALK_TIMEOUT)
        sock.connect(path)
        credentials = struct.pack('3i', os.getpid(), os.getuid(),
                                  os.getgid())
        sock.sendmsg([command.encode()], [(
            socket.SOL_SOCKET, socket.SCM_CREDENTIALS, credentials)])
        chunks = []
        while True:
            chunk = sock.recv(REPLY_BYTES)
            if not chunk:
                return b''.join(chunks).decode('ascii', 'replace')
            chunks.append(chunk)


def _balancer_sockets(root):
    """The socket of each irqbalance that runs; raise if one has none."""
    paths = []
    for pid in irqbalance.running(root):
        path = irqbalance.socket_path(root, pid)
        if not os.path.exists(path):
            raise BalancerUnreachable(
                f'irqbalance (pid {pid}) runs without a socket at {path}')
        paths.append(path)
    return paths


def balancer_ban(irq, banned, root=None):
    """Put ``irq`` in (``banned``) or out of each irqbalance's banned list.

    The list is read first (``setup``) and sent back whole: irqbalance's
    command replaces it. Returns whether ``irq`` was in a list before
    (an operator's ``--banirq``, say); None when no irqbalance runs.
    """
    was_banned = None
    for path in _balancer_sockets(root or ROOT):
        try:
            answer = _talk(path, 'setup')
        except OSError as exc:
            raise BalancerUnreachable(
                f'irqbalance does not answer at {path}: {exc}') from exc
        if not irqbalance.is_setup_reply(answer):
            raise BalancerUnreachable(
                f'irqbalance at {path} answered {answer[:60]!r} to setup')
        before = irqbalance.banned_irqs(answer)
        was_banned = bool(was_banned) or irq in before
        after = before | {irq} if banned else before - {irq}
        if after != before:
            try:
                _talk(path, irqbalance.ban_command(after))
            except OSError as exc:
                raise BalancerUnreachable(
                    f'irqbalance at {path} refused a ban: {exc}') from exc
    return was_banned


def write_affinity(irq, cpus, root=None):
    """Write ``irq``'s affinity; (affinity, effective) as read back."""
    path = os.path.join(root or ROOT, 'proc', 'irq', str(irq),
                        'smp_affinity_list')
    # No O_CREAT: an IRQ gone meanwhile is an error, never a new file.
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC
                 | os.O_NOFOLLOW)
    with os.fdopen(fd, 'w') as f:
        f.write(','.join(str(c) for c in cpus) + '\n')
    found = irq_sensor.affinity(root or ROOT, irq)
    if found is None:
        raise FileNotFoundError(f'IRQ {irq} is gone')
    return sorted(found[0]), sorted(found[1])


@privsep.steering.entrypoint
def steer(nic, irq, cpus, banned):
    """Route ``irq`` of ``nic`` to ``cpus``.

    ``banned`` True: the agent takes the IRQ over, so irqbalance is told
    to leave it alone first; False: the agent gives it back (``cpus`` is
    what it found), so irqbalance is told after the write; None:
    irqbalance's list is left as it is (it banned the IRQ before the
    agent came). Returns (affinity, effective) as read back, sorted
    lists, and whether irqbalance had banned the IRQ before the call
    (None when it was not asked).
    """
    privsep.checked_pid_dir(privsep.STEERING_SECTION)
    nic_irq(nic, irq)
    if banned is not None and type(banned) is not bool:
        raise TypeError('banned must be a bool or None')
    cpus = cpu_list(cpus)
    was_banned = balancer_ban(irq, True) if banned else None
    affinity, effective = write_affinity(irq, cpus)
    if banned is False:
        was_banned = balancer_ban(irq, False)
    return affinity, effective, was_banned


@privsep.steering.entrypoint
def balancer_state():
    """Why irqbalance cannot be told to leave an IRQ alone, or None.

    None also when no irqbalance runs.
    """
    privsep.checked_pid_dir(privsep.STEERING_SECTION)
    try:
        for path in _balancer_sockets(ROOT):
            if not irqbalance.is_setup_reply(_talk(path, 'setup')):
                return f'irqbalance at {path} does not answer setup'
    except BalancerUnreachable as exc:
        return str(exc)
    except OSError as exc:
        return f'irqbalance does not answer: {exc}'
    return None


def is_worker(guest, tid, root=None):
    """Whether ``tid`` is a vhost worker of the checked ``guest``.

    Its own thread of that name (read through the guest's directory,
    so a tid of another process reads as gone), else a kernel thread of
    that name whose parent is kthreadd.
    """
    name = vhost.worker_name(guest.pid)
    try:
        own = guest.read(f'task/{tid}/comm').rstrip('\n')
    except ProcessLookupError:
        own = None
    if own is not None:
        return own == name
    fields = vhost.status_fields(sysfs._read(root or ROOT, 'proc', str(tid),
                                             'status'))
    return (fields.get('Name') == name and fields.get('Tgid') == str(tid)
            and fields.get('PPid') == str(vhost.KTHREADD))


@privsep.steering.entrypoint
def pin_threads(pid, tids, cpus):
    """Restrict the vhost workers ``tids`` of guest ``pid`` to ``cpus``.

    Returns each tid's CPUs as read back, ``{tid: sorted list}``.
    """
    guest = privsep.checked_guest(pid, privsep.STEERING_SECTION)
    tids = trust.thread_ids(tids)
    cpus = cpu_list(cpus)
    for tid in tids:
        if not is_worker(guest, tid):
            raise NotAWorker(f'thread {tid} is not a vhost worker of '
                             f'process {guest.pid}')
    result = {}
    for tid in tids:
        os.sched_setaffinity(tid, cpus)
        result[tid] = sorted(os.sched_getaffinity(tid))
    return result
