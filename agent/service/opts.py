"""The ``oslo.config.opts`` entry points of the agent's library options.

oslo-config-generator lists through them, so the sample documents them,
oslo.privsep's options of the agent's privileged context and
keystoneauth's ``[placement]`` options. Only the generator and the agent
import this module: it creates the agent's privsep context.
"""

import copy

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_privsep import capabilities
from oslo_privsep import priv_context

from agent import privsep
from agent.service import traits

PLACEMENT_HELP = (
    'Read by numa-policy-agent when [numa_policy_agent] manage_traits is '
    'on: keystoneauth credentials and endpoint of the placement API, the '
    'same options as in nova.conf. The options of the password auth_type '
    'are shown; another auth_type takes its own.')
PRIVILEGED_HELP = (
    'Options of the oslo.privsep daemon that numa-policy-agent starts for '
    'page migration ([numa_policy_agent] page_migration). Run it as '
    "qemu's user and group (user, group): the kernel then allows moving a "
    "guest's pages without CAP_SYS_PTRACE.")

MONITOR_HELP = (
    'Options of the oslo.privsep daemon that numa-policy-agent starts for '
    'memory bandwidth monitoring ([numa_policy_agent] '
    'bandwidth_monitoring). It runs as root with no capabilities: '
    "resctrl's files are root's and ask for none. Leave user, group and "
    'capabilities unset.')

SAMPLER_HELP = (
    'Options of the oslo.privsep daemon that numa-policy-agent starts for '
    'hardware sampling ([numa_policy_agent] hardware_sampling). It runs '
    "as QEMU's account (user, group), like the page migration daemon, "
    'with CAP_PERFMON alone: what opening sampling events for every CPU, '
    'with physical addresses, takes.')

STEERING_HELP = (
    'Options of the oslo.privsep daemon that numa-policy-agent starts for '
    "the guests' I/O path ([numa_policy_agent] io_path_steering). It runs "
    "as root with CAP_SYS_NICE alone: /proc/irq's files and irqbalance's "
    "socket are root's, and restricting QEMU's vhost threads (Linux 6.4 "
    'and later) takes CAP_SYS_NICE. Leave user and group unset.')

ACCOUNT_SAMPLE = {
    'user': "<QEMU's: qemu.conf's user, else libvirt-qemu or qemu>",
    'group': "<QEMU's: qemu.conf's group, else the user's name>",
}
ACCOUNT_HELP = {
    'user': (
        'User the privileged daemon runs as. By default the account QEMU '
        "runs as: libvirt's qemu.conf user, else the first of libvirt-qemu "
        '(Debian, Ubuntu) and qemu (RHEL-like, SUSE) that exists. The daemon '
        'refuses to serve as root unless this is set to root.'),
    'group': (
        'Group the privileged daemon runs as. By default QEMU\'s: '
        "qemu.conf's group, else the group named as the default user. The "
        "kernel's ptrace check compares it with the guest's group."),
}


def list_privileged_opts():
    """oslo.privsep's options, as the agent's privileged contexts set them.

    oslo.privsep lists its options under ``[privsep]`` only; each of the
    agent's contexts reads them from its own section, with its own
    capabilities.
    """
    group, opts = _daemon_options(
        privsep.pages, 'Privileged daemon of the agent', PRIVILEGED_HELP,
        privsep.CAPABILITIES, qemu_account=True)
    return [
        (group, opts + copy.deepcopy(privsep.OPTS)),
        _daemon_options(privsep.monitor,
                        'Bandwidth monitoring daemon of the agent',
                        MONITOR_HELP, ()),
        _daemon_options(privsep.sampler,
                        'Hardware sampling daemon of the agent',
                        SAMPLER_HELP, privsep.SAMPLER_CAPABILITIES,
                        qemu_account=True),
        _daemon_options(privsep.steering,
                        "The guests' I/O path daemon of the agent",
                        STEERING_HELP, privsep.STEERING_CAPABILITIES),
    ]


def _daemon_options(context, title, help_text, caps, qemu_account=False):
    """(group, options) of one privsep context's section.

    ``qemu_account``: the daemon becomes QEMU's user and group, found on
    the host where it starts (the others stay root).
    """
    group = cfg.OptGroup(context.cfg_section, title=title, help=help_text)
    opts = copy.deepcopy(priv_context.OPTS)
    # Names read better than capability numbers and are valid values.
    cfg.set_defaults(opts, capabilities=[
        capabilities.CAPS_BYVALUE[cap] for cap in caps])
    if qemu_account:
        _account_defaults(opts)
    return group, opts


def _account_defaults(opts):
    """The account is found on the host where the daemon starts."""
    for opt in opts:
        if opt.name in ACCOUNT_HELP:
            opt.sample_default = ACCOUNT_SAMPLE[opt.name]
            opt.help = ACCOUNT_HELP[opt.name]


def list_placement_opts():
    """keystoneauth's ``[placement]`` options the agent registers.

    The auth plugin's options are only registered once ``auth_type`` is
    read; the password plugin's, nova's usual choice, are listed.
    """
    group = cfg.OptGroup(traits.PLACEMENT_GROUP,
                         title='Placement API of the agent',
                         help=PLACEMENT_HELP)
    adapter_opts = ks_loading.get_adapter_conf_options(
        include_deprecated=False)
    cfg.set_defaults(adapter_opts, service_type='placement')
    return [(group,
             ks_loading.get_session_conf_options() +
             ks_loading.get_auth_common_conf_options() +
             ks_loading.get_auth_plugin_conf_options('password') +
             adapter_opts)]
