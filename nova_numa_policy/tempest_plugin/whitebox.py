"""Read what the hypervisor really did: a guest's libvirt domain XML.

Pure parsing here, unit tested on XML samples; the SSH access is one
small class around tempest's own SSH client.
"""

import shlex
from xml.etree import ElementTree

from tempest import config
from tempest.lib.common import ssh

CONF = config.CONF


def ssh_unconfigured_reason():
    """Why the domain XML checks cannot run, or None when they can."""
    group = CONF.numa_policy
    missing = [name for name in ('ssh_user', 'ssh_private_key_path')
               if not getattr(group, name)]
    if missing:
        return ('no SSH access to the compute hosts to read domain XML: '
                'set ' + ' and '.join(f'[numa_policy] {m}' for m in missing))
    return None


def parse_nodeset(text):
    """libvirt's nodeset syntax ("0-2,4,^1") as a set of node ids."""
    nodes, excluded = set(), set()
    for part in filter(None, (p.strip() for p in text.split(','))):
        target = excluded if part.startswith('^') else nodes
        part = part.lstrip('^')
        first, _, last = part.partition('-')
        target.update(range(int(first), int(last or first) + 1))
    return nodes - excluded


def memory_tune(domain_xml):
    """The guest's ``<numatune><memory>`` as (mode, nodes).

    (None, None) when the domain has no memory tuning, which leaves the
    guest to the kernel's default (first-touch) placement. A <memory>
    without a mode is strict, as libvirt reads it.
    """
    memory = ElementTree.fromstring(domain_xml).find('./numatune/memory')
    if memory is None:
        return None, None
    nodeset = memory.get('nodeset')
    return (memory.get('mode', 'strict'),
            parse_nodeset(nodeset) if nodeset else None)


class ComputeHost:
    """SSH to one nova compute host, as configured in [numa_policy]."""

    def __init__(self, host):
        group = CONF.numa_policy
        self.host = host
        self._client = ssh.Client(
            group.ssh_hosts.get(host, host), group.ssh_user,
            key_filename=group.ssh_private_key_path, port=group.ssh_port)

    def domain_xml(self, instance_name):
        command = (f'{CONF.numa_policy.virsh_command} dumpxml '
                   f'{shlex.quote(instance_name)}')
        return self._client.exec_command(command)
