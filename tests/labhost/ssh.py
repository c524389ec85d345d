"""SSH into lab hosts, through this machine's loopback only.

A lab host asked to (``network.SshAccess``) runs sshd, reached from this
machine at its own loopback address (127.0.0.2, 127.0.0.3, ...) and one
port common to all, as tempest's ``[numa_policy]`` group has a single
``ssh_port``. Root logs in by the one key of the run's key pair, never
by password; libvirtd's socket in the lab host is root's, so tempest's
``virsh_command`` is plain ``virsh``.

Pure: :func:`tempest_settings`. At the edges: making the key pair,
checking the port is free, building the access of each lab host.
"""

import os
import shutil
import socket
import subprocess

from tests.labhost import network
from tests.labhost import tools

USER = 'root'
VIRSH_COMMAND = 'virsh'
KEY_NAME = 'id_ed25519'
KEY_COMMENT = 'nova-numa-policy-lab'
KEYGEN_TIMEOUT = 60


def tempest_settings(accesses, key_path):
    """tempest's ``[numa_policy]`` SSH options for lab computes.

    ``accesses``: {nova host name: network.SshAccess}. Values as
    tempest.conf wants them (``ssh_hosts``: "host:address" pairs).

    :raises ValueError: when the lab hosts' ports differ: tempest has
        one ``ssh_port`` for all.
    """
    ports = {int(a.port) for a in accesses.values()}
    if len(ports) != 1:
        raise ValueError(f'tempest reaches every compute at one port; '
                         f'the lab hosts have {sorted(ports) or "none"}')
    return {'ssh_user': USER,
            'ssh_private_key_path': key_path,
            'ssh_port': str(ports.pop()),
            'ssh_hosts': ','.join(f'{host}:{a.address}'
                                  for host, a in sorted(accesses.items())),
            'virsh_command': VIRSH_COMMAND}


def keygen_command(cache=None):
    """This machine's ssh-keygen, else the one unpacked with sshd.

    (command, environment): the unpacked one may need the libraries
    fetched with it.
    """
    system = shutil.which('ssh-keygen')
    if system:
        return system, dict(os.environ)
    _, keygen, library_path = tools.ssh_tools(cache)
    return keygen, {**os.environ, 'LD_LIBRARY_PATH': library_path}


def make_key_pair(directory, cache=None, run=subprocess.run):
    """A new ed25519 key pair in ``directory``: (private path, public line).

    Unencrypted: the tests and tempest read it unattended. The
    directory is the caller's, per run, and goes with it.
    """
    path = os.path.join(directory, KEY_NAME)
    keygen, env = keygen_command(cache)
    run([keygen, '-q', '-t', 'ed25519', '-N', '', '-C', KEY_COMMENT,
         '-f', path], check=True, timeout=KEYGEN_TIMEOUT,
        stdin=subprocess.DEVNULL, env=env)
    with open(path + '.pub') as f:
        return path, f.read().strip()


def port_free(address, port):
    """Whether nothing listens on ``address``:``port`` now (QEMU can)."""
    with socket.socket() as s:
        # As QEMU's user-mode network binds its forwards: connections
        # of an earlier lab host waiting out TIME_WAIT do not hold the
        # port, a listener does.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address, port))
        except OSError:
            return False
    return True


def access(index, public_key, port=network.SSH_PORT, cache=None):
    """The SshAccess of the ``index``-th lab host (0: 127.0.0.2).

    :raises initramfs.LabUnavailable: without a fetched sshd.
    :raises OSError: when the address's port is taken.
    """
    address = network.loopback_address(index)
    if not port_free(address, port):
        raise OSError(f'{address}:{port} is taken: no sshd forward there')
    sshd, keygen, library_path = tools.ssh_tools(cache)
    return network.SshAccess(address=address, port=port,
                             authorized_key=public_key, sshd=sshd,
                             keygen=keygen, library_path=library_path)
