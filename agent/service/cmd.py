"""numa-policy-agent: the compute node agent's entry point.

As a service, oslo.service runs it and handles its signals
(:mod:`nova_numa_policy.launcher`, :mod:`agent.service.daemon`): one
process; SIGTERM or SIGINT ends the periods between two steps, the
sender's pending reports are handed over, "numa-policy-agent stopped" is
logged, the host lock is released and the exit code is 0
(tests/functional/test_service_signals.py). ``--once`` runs one period
in this thread, without oslo.service, and exits 1 with one error line
when libvirt is away.
"""

import signal
import sys
import threading

from oslo_config import cfg
from oslo_log import log as logging
import tenacity

from nova_numa_policy import conf as npconf
from nova_numa_policy.contracts import errors
from nova_numa_policy.contracts import messaging
from nova_numa_policy.contracts import scope
from nova_numa_policy import launcher
from nova_numa_policy.loops import options as loop_options
from nova_numa_policy.objects import report as report_obj
from nova_numa_policy.objects import wire as report_wire

from agent.backend import accesses
from agent.backend import bandwidth
from agent.backend import connection
from agent.backend import domxml
from agent.backend import iopath
from agent.backend import libvirt_backend
from agent.backend import observation
from agent.backend import pagemoves
from agent.backend import samples
from agent.backend import settings
from agent.sensors import discovery
from agent.sensors import ovs
from agent.service import daemon
from agent.service import handoff
from agent.service import hostlock
from agent.service import manager
from agent.service import notifier
from agent.service import rebalance
from agent.service import traits

LOG = logging.getLogger(__name__)
CONF = npconf.CONF

CLI_OPTS = [
    cfg.BoolOpt('once', default=False,
                help='Run one period, then exit.'),
    cfg.BoolOpt('dry-run', default=False,
                help='Decide and log, change nothing. With --once, print '
                     "the period's HostReport as JSON on stdout."),
]
_NOVA_PHYSNETS = cfg.ListOpt('physnets', default=[])
_NOVA_PHYSNET_NODES = cfg.ListOpt('numa_nodes', default=[],
                                  item_type=cfg.types.Integer())


def physnet_numa_nodes(conf):
    """nova's [neutron_physnet_<name>] numa_nodes, when nova.conf is read.

    Registered here rather than imported from nova: the agent does not
    depend on nova being installed on the host.
    """
    try:
        conf.register_opt(_NOVA_PHYSNETS, group='neutron')
    except cfg.DuplicateOptError:
        pass
    result = {}
    for physnet in conf.neutron.physnets:
        group = f'neutron_physnet_{physnet}'
        try:
            conf.register_opt(_NOVA_PHYSNET_NODES, group=group)
        except cfg.DuplicateOptError:
            pass
        nodes = conf[group].numa_nodes
        if nodes:
            result[physnet] = list(nodes)
    return result


# nova's CPU options, as nova registers them (cpu specs such as 0-7,^2).
_NOVA_CPU_OPTS = (('compute', cfg.StrOpt('cpu_shared_set')),
                  ('compute', cfg.StrOpt('cpu_dedicated_set')),
                  (None, cfg.StrOpt('vcpu_pin_set')))


def cpu_partition(conf):
    """nova's CPU options on this host, when nova.conf is read.

    Registered here, as :func:`physnet_numa_nodes`'s options are.
    """
    values = []
    for group, opt in _NOVA_CPU_OPTS:
        try:
            conf.register_opt(opt, group=group)
        except cfg.DuplicateOptError:
            pass  # nova's own, in a process that loaded nova
        values.append(domxml.libvirt_cpuset(
            (conf[group] if group else conf)[opt.dest]))
    shared, dedicated, pin_set = values
    return scope.CpuPartition(shared=shared, dedicated=dedicated,
                              pin_set=pin_set)


_NOVA_DEVICE_SPEC = cfg.MultiStrOpt(
    'device_spec', default=[],
    deprecated_opts=[cfg.DeprecatedOpt('passthrough_whitelist',
                                       group='pci')])


def device_specs(conf):
    """nova's ``[pci] device_spec`` values, when nova.conf is read."""
    try:
        conf.register_opt(_NOVA_DEVICE_SPEC, group='pci')
    except cfg.DuplicateOptError:
        pass  # nova's own, in a process that loaded nova
    return list(conf.pci.device_spec)


_NEUTRON_OVS_MAPPINGS = cfg.ListOpt('bridge_mappings', default=[])


def uplink_finder(conf):
    """What finds uplinks beyond the operator's: SR-IOV and OVS.

    nova's SR-IOV device specs are read once; they are matched against
    sysfs's PCI functions, and OVSDB is asked, each time the agent reads
    the host's topology (VFs and ports come and go). The ML2/OVS agent's
    ``[ovs] bridge_mappings`` is read when neutron's file is on the
    command line.
    """
    specs = discovery.parse_device_specs(device_specs(conf))
    root = conf.numa_policy_agent.sysfs_root

    def sriov():
        return discovery.pf_uplinks(specs, root)

    db = conf.numa_policy_agent.ovs_db
    if not db:
        return sriov
    try:
        conf.register_opt(_NEUTRON_OVS_MAPPINGS, group='ovs')
    except cfg.DuplicateOptError:
        pass
    reader = ovs.OvsdbUplinks(db, ovs.parse_mappings(
        ','.join(conf.ovs.bridge_mappings)))
    return lambda: sriov() + reader.uplinks()


def helpers(opts):
    """The privileged daemons' clients the agent's options turn on."""
    return settings.Helpers(
        page_mover=pagemoves.PageMover() if opts.page_migration else None,
        access_monitor=(accesses.AccessMonitor(opts.period)
                        if opts.access_monitoring else None),
        monitor_groups=(bandwidth.MonitorGroups()
                        if opts.bandwidth_monitoring else None),
        guest_samples=(samples.GuestSamples(
            opts.sysfs_root, opts.hardware_sample_period)
            if opts.hardware_sampling else None),
        steering=iopath.Steering() if opts.io_path_steering else None)


def build_agent(conf, sender=None, opener=None):
    """An Agent wired to libvirt and sysfs from ``conf``."""
    opts = conf.numa_policy_agent
    # Each loop's thresholds are its own options (loops/options.py).
    loop_options.register_opts(conf)
    agent_ref = []
    conn = connection.Connection(
        opts.libvirt_uri,
        on_domain_event=lambda *a: agent_ref[0].on_domain_event(*a),
        max_delay=opts.max_reconnect_interval,
        **({'opener': opener} if opener else {}))
    host_backend = libvirt_backend.LibvirtBackend(
        conn,
        paths=settings.HostPaths(root=opts.sysfs_root,
                                 pid_dir=opts.qemu_pid_dir.lstrip('/'),
                                 state_dir=opts.state_dir),
        timing=settings.Timing(numa_maps_bound=observation.NumaMapsBound(
            observation.budget_for(opts.period,
                                   opts.numa_maps_core_share))),
        share=settings.HostShare(
            agent_scope=scope.Scope.from_conf(opts),
            cpu_partition=cpu_partition(conf),
            uplinks=discovery.Uplinks(
                physnet_interfaces=opts.physnet_interfaces,
                bridge_interfaces=opts.bridge_interfaces,
                physnet_numa_nodes=physnet_numa_nodes(conf),
                find=uplink_finder(conf),
                file=conf.numa_policy.uplinks_file or None)),
        helpers=helpers(opts))
    runner = rebalance.build_runner(
        host_backend, conf.numa_policy_loops, opts.period,
        dry_run=opts.dry_run, max_actions=opts.max_actions_per_period)
    agent = manager.Agent(
        host_backend, host=opts.host, period=opts.period, sender=sender,
        report_version=conf.numa_policy_reports.report_version,
        traits=traits.from_conf(conf), runner=runner,
        secret=conf.numa_policy_reports.secret,
        hand_over=handoff.node_loads_writer(conf.numa_policy.uplinks_file))
    agent_ref.append(agent)
    return agent


# oslo.privsep logs each reply of a daemon at debug; the page daemon's
# carry a status per page, thousands a call: with debug on they would be
# most of the log. INFO for privsep's logger, as nova sets it.
PRIVSEP_LOG_LEVEL = 'oslo.privsep.daemon=INFO'


def parse_args(argv):
    messaging.use_nova_exchange()
    logging.register_options(CONF)
    logging.set_defaults(default_log_levels=[
        *logging.get_default_log_levels(), PRIVSEP_LOG_LEVEL])
    CONF.register_cli_opts(CLI_OPTS)
    CONF(argv, project='nova', prog='numa-policy-agent')
    if CONF.dry_run:
        CONF.set_override('dry_run', True, group='numa_policy_agent')
    if CONF.once and CONF.dry_run and not CONF.log_file:
        # stdout carries the report; keep the log off it.
        CONF.set_override('use_stderr', True)
    logging.setup(CONF, 'numa-policy-agent')


def no_libvirt(uri, exc):
    """The one line that says libvirt cannot be reached, and what to do."""
    return (f'No libvirt at {uri}: {exc.reason}. Start libvirtd (or '
            f'virtqemud), make its socket usable by this user (the agent '
            f'runs in the libvirt group), or set [numa_policy_agent] '
            f'libvirt_uri.')


def build_when_connected(conf, sender, once, stopped):
    """build_agent, once libvirt answers; None if it never does.

    A one-shot run says why in one line and gives up; the service waits
    for libvirtd with the connection's backoff, until ``stopped`` is set.
    """
    uri = conf.numa_policy_agent.libvirt_uri
    if once:
        try:
            return build_agent(conf, sender=sender)
        except errors.ConnectionLost as exc:
            LOG.error(no_libvirt(uri, exc))
            return None
    for attempt in _waiting_for_libvirt(uri, stopped):
        with attempt:
            # Checked before each attempt, the first included: a stop
            # while waiting ends the wait without connecting once more.
            if stopped.is_set():
                return None
            return build_agent(conf, sender=sender)
    return None


def _waiting_for_libvirt(uri, stopped):
    """Attempts until libvirt answers or ``stopped`` is set, each said."""
    def wait(state):
        # The connection's own backoff says when it will try again.
        return max(1.0, state.outcome.exception().retry_in)

    def say(state):
        LOG.warning('%s Waiting for it.',
                    no_libvirt(uri, state.outcome.exception()))

    return tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(errors.ConnectionLost),
        wait=wait, stop=tenacity.stop_when_event_set(stopped),
        sleep=stopped.wait, before_sleep=say,
        retry_error_callback=lambda state: None)


def starting(agent):
    """Log the start line.

    It names the report version, for an operator pinning agents during
    a rolling upgrade (doc/source/upgrade.rst).
    """
    LOG.info('numa-policy-agent starting on %s (libvirt %s, period %ss, '
             'reports at version %s%s)', agent.host,
             CONF.numa_policy_agent.libvirt_uri, agent.period,
             CONF.numa_policy_reports.report_version
             or report_obj.NumaHostReport.VERSION,
             ', dry run' if agent.dry_run else '')


def main(argv=None):
    parse_args(sys.argv[1:] if argv is None else argv)
    connection.quiet_libvirt_errors()
    try:
        # Held until the process ends; a dry run acts on nothing.
        lock = (None if CONF.dry_run else
                hostlock.acquire(CONF.numa_policy_agent.state_dir))
    except hostlock.HeldElsewhere as exc:
        LOG.error('%s; this one exits rather than act twice on every '
                  'guest', exc)
        return 1
    if CONF.once:
        return run_once(lock)
    sender = notifier.ReportSender(
        notifier.make_notifier(CONF, CONF.numa_policy_agent.host))
    sender.start()
    connection.start_event_loop()
    return launcher.run(CONF, daemon.AgentService(
        build=lambda stopped: build_when_connected(CONF, sender, False,
                                                   stopped),
        starting=starting, sender=sender, lock=lock))


def run_once(lock):
    """One period in this thread; with --dry-run, its report on stdout."""
    print_report = CONF.dry_run
    sender = None
    if not print_report:
        sender = notifier.ReportSender(
            notifier.make_notifier(CONF, CONF.numa_policy_agent.host))
        sender.start()
    agent = build_when_connected(CONF, sender, True, threading.Event())
    if agent is None:
        if sender is not None:
            sender.stop()
        return 1
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, agent.stop)
    starting(agent)
    report = agent.daemon_loop(once=True)
    agent.close()
    if sender is not None:
        sender.send_pending()
        sender.stop()
    if print_report:
        if report is None:
            LOG.error('No report: the period failed (see the log above)')
            return 1
        print(report_wire.report_to_json(
            report, CONF.numa_policy_reports.report_version))
    LOG.info('numa-policy-agent stopped')
    if lock is not None:
        lock.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
