"""Which host process is a guest: its qemu pid, from libvirt's pidfile.

libvirt's qemu driver writes ``<name>.pid`` for each running domain in
its state directory (``/run/libvirt/qemu`` on a system connection). A
pidfile can outlive its process and the pid be reused, so the pid is
only trusted when that process's command line carries the guest's uuid
(libvirt starts qemu with ``-uuid <uuid>``); ``/proc/<pid>/cmdline`` is
readable without ptrace access, unlike the process's memory maps.
"""

import os

PID_DIR = 'run/libvirt/qemu'


# A process (or thread) may end between listing it and reading its files.
_GONE = (FileNotFoundError, ProcessLookupError, NotADirectoryError)


def _read(path):
    try:
        with open(path, 'rb') as f:
            return f.read()
    except _GONE:
        return None


def read_text(path):
    """A /proc (or sysfs) file's text, or None where it is gone."""
    try:
        with open(path) as f:
            return f.read()
    except _GONE:
        return None


class OpenFiles:
    """/proc files read every period, each opened once.

    Opening a /proc file costs about three times what reading it does
    (the walk down /proc, a file object); the agent reads the same few
    files of the same vCPU threads each period, so it keeps each open
    and reads it again from offset 0, which the kernel answers afresh.
    A file of a thread that has ended reads as None (the kernel says
    ESRCH, even once its id is reused) and is closed; so is any file
    not read since the previous :meth:`sweep`. At most ``limit`` stay
    open (the process's descriptors are finite); beyond, a file is
    opened and closed at each read.
    """

    READ_BYTES = 65536

    def __init__(self, limit=512):
        self._limit = limit
        self._fds = {}
        self._read = set()

    def read_text(self, path):
        self._read.add(path)
        fd = self._fds.get(path)
        if fd is None:
            if len(self._fds) >= self._limit:
                return read_text(path)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except _GONE:
                return None
            self._fds[path] = fd
        try:
            return os.pread(fd, self.READ_BYTES, 0).decode()
        except _GONE:
            self._close(path)
            return None

    def sweep(self):
        """Close every file not read since the last sweep."""
        for path in set(self._fds) - self._read:
            self._close(path)
        self._read = set()

    def close(self):
        for path in list(self._fds):
            self._close(path)

    def __len__(self):
        return len(self._fds)

    def _close(self, path):
        os.close(self._fds.pop(path))


def qemu_pid(root, name, uuid, pid_dir=PID_DIR):
    """The pid of the guest ``name`` (``uuid``), or None if not found."""
    text = _read(os.path.join(root, pid_dir, f'{name}.pid'))
    try:
        pid = int(text)
    except (TypeError, ValueError):
        return None
    # Read every period for every guest: one file, not psutil's Process
    # (which reads the process's stat first).
    cmdline = _read(os.path.join(root, 'proc', str(pid), 'cmdline'))
    if cmdline is None or uuid.encode() not in cmdline.split(b'\0'):
        return None
    return pid
