"""The agent's one privileged context: moving a guest's pages.

The agent runs unprivileged; only what needs privilege runs in the
privsep daemon started through ``privsep-helper`` (sudo or rootwrap, see
doc/source/agent.rst), with one capability:

* ``CAP_SYS_NICE``: move_pages(2) with ``MPOL_MF_MOVE_ALL``, so that guest
  RAM also mapped by another process (a memfd shared with a vhost-user
  backend) moves too.

move_pages(2) and reading ``/proc/<pid>/numa_maps`` also need ptrace read
access to the guest's qemu. Rather than ``CAP_SYS_PTRACE`` (the power to
read any process's memory), the daemon is meant to run as qemu's user
(``[numa_policy_privileged] user``): the same uid, and a target with no
capabilities, is what the kernel's ptrace check asks for.

Entry points live in :mod:`agent.pagemover` and take only integers.
"""

from oslo_privsep import capabilities
from oslo_privsep import priv_context

CAPABILITIES = (capabilities.CAP_SYS_NICE,)

pages = priv_context.PrivContext(
    'agent',
    cfg_section='numa_policy_privileged',
    pypath=__name__ + '.pages',
    capabilities=CAPABILITIES,
)
