"""The agent installed in a lab host as on a compute node.

The project's virtualenv stands in for the distribution's packages: its
``numa-policy-agent`` and ``privsep-helper`` are linked into ``/usr/bin``
(writable in the lab host, an overlay). Everything else is the project's
own files, unchanged: the sudoers rule from ``etc/sudoers.d`` and the
configuration files the systemd unit names, ``/etc/nova/nova.conf`` and
``/etc/nova/numa-policy-agent.conf``. The agent then starts its privsep
daemon exactly as deployed: ``sudo privsep-helper --config-file ...``.
"""

import os
import shlex
import sys

from tests.labhost import machine

SUDOERS = os.path.join(machine.PROJECT, 'etc', 'sudoers.d',
                       'numa-policy-agent')
NOVA_CONF = '/etc/nova/nova.conf'
AGENT_CONF = '/etc/nova/numa-policy-agent.conf'
CONFIG_FILES = (NOVA_CONF, AGENT_CONF)
COMMANDS = ('numa-policy-agent', 'privsep-helper')


def install(lab, bin_dir=None):
    """Link the commands into /usr/bin and install the sudoers rule."""
    bin_dir = bin_dir or os.path.dirname(sys.executable)
    links = ' && '.join(
        f'ln -sf {shlex.quote(os.path.join(bin_dir, name))} /usr/bin/{name}'
        for name in COMMANDS)
    # The rule as shipped, with the monitoring and sampling daemons'
    # lines turned on, as on a host with [numa_policy_agent]
    # bandwidth_monitoring and hardware_sampling.
    lab.run(f'{links} && sed "s/^# nova ALL/nova ALL/" '
            f'{shlex.quote(SUDOERS)} > /etc/sudoers.d/numa-policy-agent && '
            f'chmod 0440 /etc/sudoers.d/numa-policy-agent && '
            f'visudo -cf /etc/sudoers.d/numa-policy-agent')


def write_config(lab, agent_conf, nova_conf=''):
    """Write both configuration files the agent reads, readable by nova.

    One request for both: each is a shell the emulated lab host starts.
    """
    lab.run(files_script(((NOVA_CONF, nova_conf), (AGENT_CONF, agent_conf))))


def files_script(files):
    """Shell writing each ``(path, text)`` in the lab host, 0644.

    Their directories are made first; the lab host's /etc is a writable
    overlay (tests/labhost/guest.sh).
    """
    return 'set -e\n' + ''.join(
        f'mkdir -p {os.path.dirname(path)}\n'
        f'cat > {path} <<"LAB_EOF"\n{text}\nLAB_EOF\nchmod 0644 {path}\n'
        for path, text in files)
