"""irqbalance, the host's interrupt balancer: where it listens, what it says.

irqbalance moves interrupts between CPUs every few seconds; an IRQ the
agent steers must be one it no longer moves. Since 1.2 it listens on a
Unix socket, ``/run/irqbalance/irqbalance<pid>.sock``, and serves only
peers whose credentials say uid 0. Two of its commands matter here:

* ``setup``: its settings, ``SLEEP <s> `` then ``IRQ <n> LOAD <l> DIFF
  <d> CLASS <c> `` for each IRQ banned from its command line or its
  socket, then ``BANNED <cpumask>``;
* ``settings ban irqs <n> <n> ...``: the banned list, *replacing* the
  whole of it (``--banirq`` ones included); ``NONE`` empties it. It
  answers nothing.

So a ban adds to the list ``setup`` gave, and a release sends that list
without the IRQ. Parsing and composing are pure here; the socket is the
privileged daemon's (:mod:`agent.privsep.irqs`), since only root may
speak to it.
"""

import os

NAME = 'irqbalance'
SOCKET_DIR = 'run/irqbalance'


def socket_path(root, pid):
    return os.path.join(root, SOCKET_DIR, f'{NAME}{pid}.sock')


def running(root):
    """The pids of processes named irqbalance (a scan of /proc)."""
    found = []
    try:
        names = os.listdir(os.path.join(root, 'proc'))
    except OSError:
        return ()
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(root, 'proc', name, 'comm')) as f:
                comm = f.read().rstrip('\n')
        except OSError:
            continue  # gone meanwhile
        if comm == NAME:
            found.append(int(name))
    return tuple(sorted(found))


def alive(root, pid):
    """Whether ``pid`` is still a process named irqbalance."""
    try:
        with open(os.path.join(root, 'proc', str(pid), 'comm')) as f:
            return f.read().rstrip('\n') == NAME
    except OSError:
        return False


def banned_irqs(setup_reply):
    """The IRQs a ``setup`` answer lists as banned, a frozenset."""
    words = setup_reply.split()
    found = set()
    for position, word in enumerate(words[:-1]):
        if word == 'IRQ' and words[position + 1].isdigit():
            found.add(int(words[position + 1]))
    return frozenset(found)


def is_setup_reply(text):
    """Whether ``text`` reads as irqbalance's answer to ``setup``."""
    return text.startswith('SLEEP ') and ' BANNED ' in f' {text}'


def ban_command(irqs):
    """The ``settings`` command that makes ``irqs`` the whole banned list.

    irqbalance reads the numbers until one reads as 0, so IRQ 0 (the
    timer, never a NIC's) cannot be in it.
    """
    numbers = sorted(i for i in irqs if i > 0)
    if not numbers:
        return 'settings ban irqs NONE'
    return 'settings ban irqs ' + ' '.join(str(i) for i in numbers)
