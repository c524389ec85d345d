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


def qemu_pid(root, name, uuid, pid_dir=PID_DIR):
    """The pid of the guest ``name`` (``uuid``), or None if not found."""
    text = _read(os.path.join(root, pid_dir, f'{name}.pid'))
    try:
        pid = int(text)
    except (TypeError, ValueError):
        return None
    cmdline = _read(os.path.join(root, 'proc', str(pid), 'cmdline'))
    if cmdline is None or uuid.encode() not in cmdline.split(b'\0'):
        return None
    return pid
