"""What the privileged daemon accepts: the checks its entry points run first.

The daemon (:mod:`agent.privsep`) holds CAP_SYS_NICE as QEMU's user, and
whoever can reach its socket (the agent's user) chooses the arguments.
So inside the daemon, before anything else:

* every argument is an ``int`` in a plausible range (a ``bool`` or a
  text is refused, whatever it spells);
* a pid must be the QEMU process of a libvirt domain of this host: a
  pidfile in libvirt's state directory names it (the directory and file
  owned by root, writable by no one else), and the process's command
  line carries ``-name guest=<that domain>``, so a stale pidfile whose
  pid was reused by another process is refused;
* ``/proc`` files are opened relative to a directory descriptor of
  ``/proc/<pid>`` taken before those checks: what is read is the checked
  process's, or nothing (it exited), never another's; no path is built
  from the caller's text;
* a pidfd, also taken first, pins the process: a call that takes a pid
  (move_pages) is trusted only if the process is still alive after it,
  so the pid cannot have named anything else meanwhile. A checked guest
  is remembered while its pidfd says it lives.
"""

import collections
import errno
import os
import re
import signal
import stat
import threading

MAX_PID = 1 << 22  # the kernel's PID_MAX_LIMIT on 64-bit machines
MAX_NODE = (1 << 10) - 1  # MAX_NUMNODES of the largest kernel configs
MAX_PAGES = 1 << 20  # per call: 4 GiB of base pages
MAX_ADDRESS = (1 << 64) - 1
MIN_PAGE_SIZE = 1 << 12
MAX_PAGE_SIZE = 1 << 34
# Checked guests kept (with two descriptors each) between calls.
REMEMBERED = 256
MAX_THREADS = 4096  # per call: more vCPUs than any guest has
_UUID_TEXT = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                        r'[0-9a-f]{12}')


class NotAGuest(PermissionError):
    """The pid is not the QEMU process of a libvirt domain of this host."""


def integer(value, name, low, high):
    """``value`` if it is an int within [low, high]; raise otherwise."""
    if type(value) is not int:
        raise TypeError(f'{name} must be an integer, not '
                        f'{type(value).__name__}')
    if not low <= value <= high:
        raise ValueError(f'{name} {value} is outside [{low}, {high}]')
    return value


def pid(value):
    return integer(value, 'pid', 1, MAX_PID)


def node(value):
    return integer(value, 'node', 0, MAX_NODE)


def count(value):
    return integer(value, 'count', 1, MAX_PAGES)


def address(value, name='address'):
    return integer(value, name, 0, MAX_ADDRESS)


def page_size(value):
    integer(value, 'page_size', MIN_PAGE_SIZE, MAX_PAGE_SIZE)
    if value & (value - 1):
        raise ValueError(f'page_size {value} is not a power of two')
    return value


def addresses(values):
    """A list (or tuple) of at most MAX_PAGES addresses."""
    if type(values) not in (list, tuple):
        raise TypeError(f'addresses must be a list, not '
                        f'{type(values).__name__}')
    if len(values) > MAX_PAGES:
        raise ValueError(f'{len(values)} addresses: at most {MAX_PAGES}')
    for value in values:
        address(value)
    return values


def thread_ids(values):
    """A bounded tuple of thread ids; refuse anything else."""
    if not isinstance(values, (list, tuple)):
        raise TypeError('thread ids must be a list of integers')
    if not values or len(values) > MAX_THREADS:
        raise ValueError(f'1 to {MAX_THREADS} thread ids per call')
    return tuple(integer(v, 'thread id', 1, MAX_PID) for v in values)


def instance_uuid(value):
    """A canonical, lower-case uuid text; refuse anything else.

    It names a directory the daemon makes: nothing but hex digits and
    dashes in fixed places gets that far.
    """
    if type(value) is not str:
        raise TypeError(f'a uuid must be a text, not {type(value).__name__}')
    if not _UUID_TEXT.fullmatch(value):
        raise ValueError(f'{value[:40]!r} is not a lower-case uuid')
    return value


def carries_uuid(cmdline, uuid):
    """Whether a QEMU command line (NUL-separated) says ``-uuid <uuid>``."""
    args = cmdline.split(b'\0')
    wanted = uuid.encode()
    return any(arg == b'-uuid' and value == wanted
               for arg, value in zip(args, args[1:]))


def _private_to_root(status, what):
    """Refuse ``what`` unless root owns it and no one else may write it."""
    if status.st_uid != 0 or status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        mode = stat.filemode(status.st_mode)
        raise NotAGuest(f'{what} is not private to root (owner uid '
                        f'{status.st_uid}, mode {mode}): its pidfiles are '
                        f'not trusted')


def _pidfile_value(directory_fd, name):
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC,
                 dir_fd=directory_fd)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            return None
        _private_to_root(status, name)
        text = os.read(fd, 32)
    finally:
        os.close(fd)
    # ASCII digits only: int() would also take other scripts' digits.
    text = text.strip()
    return int(text) if text.isdigit() and text.isascii() else None


def domain_of(pid_, pid_dir):
    """The libvirt domain whose pidfile in ``pid_dir`` names ``pid_``."""
    try:
        directory = os.open(pid_dir, os.O_RDONLY | os.O_DIRECTORY
                            | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise NotAGuest(f'process {pid_} is not a libvirt guest: no '
                        f'{pid_dir}') from None
    try:
        _private_to_root(os.fstat(directory), pid_dir)
        for name in sorted(os.listdir(directory)):
            if not name.endswith('.pid'):
                continue
            try:
                value = _pidfile_value(directory, name)
            except NotAGuest:
                raise
            except OSError:
                continue  # removed meanwhile, or a link: not a pidfile
            if value == pid_:
                return name[:-len('.pid')]
    finally:
        os.close(directory)
    raise NotAGuest(f'process {pid_} is not the QEMU process of a libvirt '
                    f'domain: no pidfile in {pid_dir} names it')


def names_guest(cmdline, domain):
    """Whether a NUL-separated command line says ``-name guest=domain``."""
    args = cmdline.split(b'\0')
    wanted = domain.encode()
    for flag, value in zip(args, args[1:]):
        if flag != b'-name':
            continue
        # "guest=<name>,debug-threads=on" (a comma in a name is doubled)
        first = value.replace(b',,', b'\0').split(b',')[0]
        if first.replace(b'\0', b',') in (b'guest=' + wanted, wanted):
            return True
    return False


class Guest:
    """A checked guest QEMU process: read its /proc files, see it live."""

    def __init__(self, pid_, pid_dir):
        self._dir = self._pidfd = None
        self.pid = pid(pid_)
        self.domain = None
        try:
            self._pidfd = os.pidfd_open(self.pid)
        except ProcessLookupError:
            raise ProcessLookupError(errno.ESRCH,
                                     f'process {self.pid} is gone') from None
        try:
            self._dir = os.open(f'/proc/{self.pid}', os.O_RDONLY
                                | os.O_DIRECTORY | os.O_CLOEXEC)
            self.domain = domain_of(self.pid, pid_dir)
            if not names_guest(self.read_bytes('cmdline'), self.domain):
                raise NotAGuest(
                    f'process {self.pid} is not the QEMU process of domain '
                    f'{self.domain}: its pidfile is stale and the pid reused')
        except BaseException:
            self.close()
            raise

    def read_bytes(self, name):
        """``/proc/<pid>/<name>`` of this very process; ESRCH if it exited."""
        with os.fdopen(self._open(name, os.O_RDONLY), 'rb') as f:
            try:
                return f.read()
            except ProcessLookupError:
                raise ProcessLookupError(
                    errno.ESRCH, f'process {self.pid} is gone') from None

    def read(self, name):
        return self.read_bytes(name).decode('utf-8', 'replace')

    def _open(self, name, flags):
        if self._dir is None:
            raise ProcessLookupError(errno.ESRCH,
                                     f'process {self.pid}: closed')
        try:
            return os.open(name, flags | os.O_CLOEXEC, dir_fd=self._dir)
        except FileNotFoundError:
            raise ProcessLookupError(
                errno.ESRCH, f'process {self.pid} is gone') from None

    def read_at(self, name, offset, size):
        """``size`` bytes at ``offset`` of ``/proc/<pid>/<name>``."""
        fd = self._open(name, os.O_RDONLY)
        try:
            return os.pread(fd, size, offset)
        finally:
            os.close(fd)

    def write(self, name, data):
        """Write ``data`` to ``/proc/<pid>/<name>`` of this very process."""
        fd = self._open(name, os.O_WRONLY)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def alive(self):
        try:
            signal.pidfd_send_signal(self._pidfd, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True  # another user's: alive, just not ours to signal
        return True

    def close(self):
        for fd in (self._dir, self._pidfd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._dir = self._pidfd = None

    # Closed when the last call holding it is done, not when the cache
    # lets it go: another thread may be reading through it.
    __del__ = close


class Guests:
    """Guests checked before, while they live; a bounded, locked cache."""

    def __init__(self, limit=REMEMBERED):
        self._limit = limit
        self._lock = threading.Lock()
        self._known = collections.OrderedDict()

    def get(self, pid_, pid_dir):
        """The checked :class:`Guest` of ``pid_``; raise if it is not one."""
        key = (pid(pid_), pid_dir)
        with self._lock:
            known = self._known.pop(key, None)
        if known is not None and known.alive():
            guest = known
        else:
            guest = Guest(pid_, pid_dir)
        with self._lock:
            self._known[key] = guest
            while len(self._known) > self._limit:
                self._known.popitem(last=False)
        return guest

    def clear(self):
        with self._lock:
            self._known.clear()
