"""The agent's privileged contexts: pages, monitoring, sampling, steering.

The agent runs unprivileged; only what needs privilege runs in the
privsep daemon started through ``privsep-helper`` (sudo or rootwrap, see
doc/source/security.rst), with one capability:

* ``CAP_SYS_NICE``: move_pages(2) with ``MPOL_MF_MOVE_ALL``, so that guest
  RAM also mapped by another process (a memfd shared with a vhost-user
  backend) moves too.

move_pages(2) and reading ``/proc/<pid>/numa_maps`` also need ptrace read
access to the guest's qemu. Rather than ``CAP_SYS_PTRACE`` (the power to
read any process's memory), the daemon runs as QEMU's user and group:
the same uid and gid, and a target with no capabilities, is what the
kernel's ptrace check asks for. That account is the default of
``[numa_policy_privileged] user`` and ``group`` (:func:`qemu_account`);
the daemon refuses to serve as root unless ``user = root`` is set.

Entry points live in :mod:`agent.privsep.pagemover`; what they accept
is checked inside the daemon by :mod:`agent.privsep.trust`.

A second context (:data:`monitor`, section ``[numa_policy_monitor]``)
puts a guest's vCPU threads in a resctrl monitoring group, so the kernel
counts their memory bandwidth (:mod:`agent.privsep.monitorgroups`). resctrl's
files belong to root and take no capability, so that daemon runs as
root with none at all: it can write what root owns, and its only entry
points make, fill and remove the agent's own groups under
``/sys/fs/resctrl/mon_groups``, for threads of a checked guest that sit
in no one else's group.

A third (:data:`sampler`, section ``[numa_policy_sampler]``) holds the
host's hardware sampling events (:mod:`agent.privsep.hwsampling`): opening them
for every CPU, with physical addresses, takes ``CAP_PERFMON`` and
nothing else. Like the page daemon it runs as QEMU's account, not root;
it hands the agent counts of samples per vCPU thread and node, of
threads of checked guests, never an address.

A fourth (:data:`steering`, section ``[numa_policy_steering]``) carries
out the guests' I/O path (:mod:`agent.privsep.irqs`): it writes a NIC's
interrupt affinity (``/proc/irq/<n>/smp_affinity_list`` is root's, and
the kernel asks for no capability beyond owning it), tells irqbalance to
leave that interrupt alone (its socket serves uid 0 only) and restricts
a guest's vhost workers to CPUs. Those workers are root's kernel
threads before Linux 6.4 and QEMU's threads from 6.4 on; restricting a
thread of another user takes ``CAP_SYS_NICE``. So it runs as root with
that one capability.

A fifth (:data:`access`, section ``[numa_policy_access]``) runs DAMON,
the kernel's data access monitor, on ``tiered`` guests, so the tiering
loop tells pages a guest reads from cold ones
(:mod:`agent.privsep.damon`). DAMON's sysfs files are root's and ask for
no capability: it runs as root with none, and its only entry points
start, read and remove the agent's own kdamonds, each watching one
checked guest.

Importing this package registers no option, reads no file and loads
nothing of oslo.privsep's daemon side (eventlet among it): each context
is made when first named (``privsep.pages``), with, for the daemons of
QEMU's account, the account looked up then (:func:`qemu_account`). An
agent that starts no daemon never makes one.
"""

import grp
import importlib
import os
import pwd
import re
import stat
import threading

from oslo_config import cfg
from oslo_privsep import capabilities

from agent.privsep import trust

CAPABILITIES = (capabilities.CAP_SYS_NICE,)
SECTION = 'numa_policy_privileged'
QEMU_CONF = '/etc/libvirt/qemu.conf'
# The accounts distributions' libvirt packages run QEMU as, when
# qemu.conf does not say: Debian and Ubuntu, then RHEL-like and SUSE.
DISTRIBUTION_ACCOUNTS = ('libvirt-qemu', 'qemu')
ROOT = 'root'

OPTS = [
    cfg.StrOpt(
        'guest_pid_dir',
        default='/run/libvirt/qemu',
        help='''
Where libvirt's system QEMU driver writes ``<domain>.pid`` for each
running guest. The privileged daemon serves a pid only if a pidfile
here names it and that process's command line names the same domain.
The directory and its pidfiles must be owned by root and writable by no
one else.
'''),
]

MONITOR_SECTION = 'numa_policy_monitor'
SAMPLER_SECTION = 'numa_policy_sampler'
# CAP_PERFMON (Linux 5.8): oslo.privsep names it from 3.0 on.
SAMPLER_CAPABILITIES = (capabilities.CAP_PERFMON,)
STEERING_SECTION = 'numa_policy_steering'
STEERING_CAPABILITIES = (capabilities.CAP_SYS_NICE,)
ACCESS_SECTION = 'numa_policy_access'
# The daemons that run as QEMU's account, and so must not serve as root
# unless asked; the monitor and steering daemons are root by design (the
# files they write are root's).
QEMU_ACCOUNT_SECTIONS = (SECTION, SAMPLER_SECTION)

_SETTING = re.compile(r'^\s*(user|group)\s*=\s*"([^"]*)"\s*$')


def register_opts(conf=cfg.CONF):
    """Register ``guest_pid_dir``, which every daemon reads (idempotent)."""
    conf.register_opts(OPTS, group=SECTION)


def _qemu_conf_settings(path):
    """``user`` and ``group`` set in libvirt's qemu.conf (root only reads)."""
    settings = {}
    try:
        with open(path) as f:
            for line in f:
                match = _SETTING.match(line)
                if match:
                    # "+64055" is a numeric id; setuid takes it as digits.
                    settings[match.group(1)] = match.group(2).lstrip('+')
    except OSError:
        pass
    return settings


def _exists(lookup, name):
    try:
        lookup(int(name) if name.isdigit() else name)
    except (KeyError, ValueError):
        return False
    return True


def qemu_account(qemu_conf=QEMU_CONF, accounts=DISTRIBUTION_ACCOUNTS):
    """(user, group) QEMU runs as on this host; (None, None) if unknown.

    qemu.conf's ``user`` and ``group`` when set, else the first of the
    distributions' accounts that exists, with its group of the same name.
    """
    settings = _qemu_conf_settings(qemu_conf)
    user = settings.get('user')
    if user is None:
        user = next((a for a in accounts if _exists(pwd.getpwnam, a)), None)
    group = settings.get('group')
    if group is None and user is not None and _exists(grp.getgrnam, user):
        group = user
    return user, group


def _default_to_qemu_account(section):
    user, group = qemu_account()
    if user is not None:
        cfg.CONF.set_default('user', user, group=section)
    if group is not None:
        cfg.CONF.set_default('group', group, group=section)


# The contexts by the name this package gives them: (section,
# capabilities). The names are part of the privileged command line that
# sudoers rules admit (``--privsep_context agent.privsep.pages``).
_CONTEXTS = {
    'pages': (SECTION, CAPABILITIES),
    'monitor': (MONITOR_SECTION, ()),
    'sampler': (SAMPLER_SECTION, SAMPLER_CAPABILITIES),
    'steering': (STEERING_SECTION, STEERING_CAPABILITIES),
    'access': (ACCESS_SECTION, ()),
}
_made = {}
_making = threading.Lock()


def __getattr__(name):
    """A context, made when first named; or :data:`DAEMON_ERRORS`."""
    if name == 'DAEMON_ERRORS':
        return _daemon_errors()
    if name not in _CONTEXTS:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    with _making:
        if name not in _made:
            _made[name] = _make_context(name, *_CONTEXTS[name])
    return _made[name]


def _make_context(name, section, caps):
    """The context ``name``, its options registered and defaulted.

    oslo.privsep's daemon reads ``user`` and ``group`` before it drops
    privileges, after it made the context: the daemons of QEMU's account
    find their defaults there.
    """
    from oslo_privsep import priv_context

    context = priv_context.PrivContext('agent', cfg_section=section,
                                       pypath=f'{__name__}.{name}',
                                       capabilities=caps)
    if section == SECTION:
        register_opts()
    if section in QEMU_ACCOUNT_SECTIONS:
        _default_to_qemu_account(section)
    return context


def _daemon_errors():
    """What a call raises when its daemon did not start or its channel broke.

    sudo or rootwrap not set up, privileges not dropped: no entry point's
    own refusal. Named only in ``except`` clauses, so it is read (and
    oslo.privsep's daemon side loaded) only once a call raised.
    """
    from oslo_privsep import daemon

    return daemon.FailedToDropPrivileges, daemon.ProtocolError


def entry_points(module):
    """The entry points of ``agent.privsep.<module>``, imported at first use.

    Importing them makes their context, which loads oslo.privsep's daemon
    side: an agent that does not use that daemon never does.
    """
    return importlib.import_module(f'{__name__}.{module}')


def check_not_root(section=SECTION):
    """Refuse to serve as root unless ``user = root`` was asked for.

    Without a QEMU account to default to, the daemon would stay root:
    better no page moves (or samples) than a root daemon nobody chose.
    """
    context = _context_of(section)
    if os.geteuid() == 0 and context.conf.user != ROOT:
        raise PermissionError(
            f'the privileged daemon runs as root: set [{section}] user and '
            f'group to the account QEMU runs as (or user = root to mean it)')


def _context_of(section):
    name = next(n for n, (s, _) in _CONTEXTS.items() if s == section)
    return __getattr__(name)


def _writable_by_others(path):
    status = os.stat(path)
    return status.st_uid != 0 or status.st_mode & (stat.S_IWGRP
                                                   | stat.S_IWOTH)


def _read_configuration():
    try:
        files = list(cfg.CONF.config_file or ())
        directories = list(cfg.CONF.config_dir or ())
    except cfg.NoSuchOptError:  # no command line parsed: nothing read
        return []
    for directory in directories:
        files += [os.path.join(directory, name)
                  for name in sorted(os.listdir(directory))]
    return files


def check_configuration():
    """Refuse to serve if the caller could have written our configuration.

    sudo's rule admits one command line; oslo.rootwrap admits any
    privsep-helper arguments whatever its filters say. Either way an
    extra ``--config-file`` of the caller's own (``user = root``, more
    capabilities) must get nothing: every file the daemon read must be
    root's and writable by no one else.
    """
    for path in _read_configuration():
        if _writable_by_others(path):
            raise PermissionError(
                f'the privileged daemon read {path}, which someone other '
                f'than root may write: it serves no call with such a '
                f'configuration')


def guest_pid_dir():
    register_opts()
    return cfg.CONF[SECTION].guest_pid_dir


# The guest pid directory per daemon section, once that daemon's own
# checks passed: a daemon's configuration does not change after it
# starts, and reading options costs more than a page move's own checks.
_checked_pid_dirs = {}


def checked_pid_dir(section=SECTION):
    """Check the daemon of ``section`` (once); give the guest pid directory.

    Every daemon finds guests in the same directory. Every daemon's
    configuration must be root's alone (:func:`check_configuration`); a
    daemon of QEMU's account also refuses to serve as root unless asked
    (:func:`check_not_root`).
    """
    pid_dir = _checked_pid_dirs.get(section)
    if pid_dir is None:
        if section in QEMU_ACCOUNT_SECTIONS:
            check_not_root(section)
        check_configuration()
        pid_dir = _checked_pid_dirs[section] = guest_pid_dir()
    return pid_dir


def checked_guest(pid, section=SECTION):
    """The checked :class:`trust.Guest` of ``pid``, in ``section``'s daemon.

    Raises if the daemon (:func:`checked_pid_dir`) or the pid
    (:class:`trust.Guest`) is not to be trusted.
    """
    return guests.get(pid, checked_pid_dir(section))


def forget_checks():
    """Check again at the next call (tests change the configuration)."""
    _checked_pid_dirs.clear()
    guests.clear()


# Guest processes checked in this daemon (agent.privsep.trust).
guests = trust.Guests()
