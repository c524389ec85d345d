"""A period's HostReport, built from its snapshot: pure."""

import functools

import pbr.version

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import policy
from nova_numa_policy.decisions import enforcement
from nova_numa_policy.objects import report as report_obj

# What the agent can make true, by what the backend can do. Interleave
# and home at boot need the driver extension but no live capability;
# home on a running guest needs a live nodeset.
_BOOT_POLICIES = ('first-touch', 'interleave', 'home')
# A change of free memory or load larger than these is reported at once.
MEMORY_CHANGE = 0.10
LOAD_CHANGE = 0.25


@functools.lru_cache(maxsize=1)
def agent_version():
    try:
        return pbr.version.VersionInfo('nova-numa-policy').version_string()
    except Exception:
        return 'unknown'


def enforceable_policies(capabilities):
    values = list(_BOOT_POLICIES)
    # Carrefour and auto decide from measured accesses per node (counted
    # or sampled) and act by moving pages (nova_numa_policy/loops):
    # moving pages alone is not enough to enforce them.
    if {backend.CAP_PAGE_MIGRATION,
            backend.CAP_ACCESS_COUNTERS} <= set(capabilities):
        values += ['first-touch+carrefour', 'interleave+carrefour', 'auto']
    return [v for v in policy.POLICY_VALUES if v in values]


def _floating(node, usage):
    """(CPU ids, load) of the node that guests without dedicated CPUs use.

    In the node's own CPU order. A backend that does not tell them apart
    (``floating_cpus`` None) gives them every CPU, at the node's load;
    one that names CPUs without their load, their node's load.
    """
    cpu_load = usage.cpu_load if usage else 0.0
    if usage is None or usage.floating_cpus is None:
        # A node without CPUs (a memory-only node of a lower tier) has
        # no load of floating CPUs: a report saying one is malformed.
        cpus = list(node.cpus)
        return cpus, cpu_load if cpus else None
    cpus = [cpu for cpu in node.cpus if cpu in usage.floating_cpus]
    if not cpus:
        return [], None
    load = usage.floating_load
    return cpus, cpu_load if load is None else min(max(load, 0.0), 1.0)


def memory_tier(node_id, tiers):
    """The rank of the node's memory tier to report, or None: pure.

    None where the host does not say (``tiers.ranks`` None) or puts the
    node in no tier: a consumer reads both as the top tier. A rank past
    the report's bound is not said either, though no host has one.
    """
    if tiers.ranks is None:
        return None
    rank = tiers.ranks.get(node_id)
    if rank is None or not 0 <= rank <= report_obj.MAX_MEMORY_TIER:
        return None
    return rank


def _node(node, usage, tiers, judged=None):
    floating_cpus, floating_load = _floating(node, usage)
    return report_obj.NumaNodeReport(
        demotable_mb=_demotable(node, usage, (judged or {}).get(
            'demotable_mb')),
        id=node.id, cpus=list(node.cpus),
        memory_total_mb=node.memory_total_mb,
        memory_free_mb=usage.memory_free_mb if usage else 0,
        cpu_load=usage.cpu_load if usage else 0.0,
        distances=list(node.distances),
        floating_cpus=floating_cpus, floating_load=floating_load,
        memory_tier=memory_tier(node.id, tiers))


def _demotable(node, usage, mb):
    """A loop's demotable MB within what the node has in use, or None."""
    if mb is None:
        return None
    free = usage.memory_free_mb if usage else 0
    return int(min(max(mb, 0), max(node.memory_total_mb - free, 0)))


def applied_policy(instance, topology, active_loops=(), auto_choice=None):
    """The policy really in force on ``instance``: pure.

    The placement is what the guest's memory binding realizes; a
    ``+carrefour`` is added only while the carrefour loop acts on the
    guest (it asked for a Carrefour policy, the loop runs and not in a
    dry run); ``auto`` is the concrete policy the auto loop chose while
    that loop runs, the placement alone before it has chosen.
    """
    placement = enforcement.applied_policy(instance, topology)
    if placement == report_obj.APPLIED_NONE:
        return placement
    spec = policy.POLICIES.get(instance.requested_policy)
    if spec is None:
        return placement
    if spec.auto:
        if 'auto' in active_loops and auto_choice is not None:
            return auto_choice
        return placement
    # Carrefour on a home binding has no policy value: report the binding.
    combined = f'{placement}+carrefour'
    if (spec.carrefour and 'carrefour' in active_loops
            and combined in report_obj.APPLIED_POLICY_VALUES):
        return combined
    return placement


def judged(instance, topology, judges):
    """The report fields the loops judge of ``instance``: pure.

    ``judges``: (strategy class, its Config) pairs, each asked through the
    loops' interface (``Strategy.judge``); the base names no loop.
    """
    fields = {}
    for strategy, config in judges:
        fields.update(strategy.judge(instance, topology, config))
    return fields


def nic_verdicts(snapshot, active_loops, judges):
    """{NIC name: why its vectors are where they are}: pure.

    From the loops acting this period (``active_loops``) among
    ``judges``, each asked through the loops' interface
    (``Strategy.judge_nics``); empty while none of them acts on NICs.
    """
    verdicts = {}
    for strategy, config in judges:
        if strategy.name in active_loops:
            verdicts.update(strategy.judge_nics(snapshot, config))
    return verdicts


def node_fields(snapshot, active_loops, judges):
    """{node id: {NumaNodeReport field: value}} the acting loops say: pure.

    From the loops acting this period (``active_loops``) among
    ``judges``, each asked through the loops' interface
    (``Strategy.judge_nodes``): the tiering loop's ``demotable_mb``.
    """
    fields = {}
    for strategy, config in judges:
        if strategy.name in active_loops:
            for node, said in strategy.judge_nodes(snapshot, config).items():
                fields.setdefault(node, {}).update(said)
    return fields


def irq_cpus(irqs):
    """Where the vectors ``irqs`` are delivered now, sorted.

    The kernel's effective affinity of each where it says, else the
    affinity asked for.
    """
    return sorted(set().union(*(irq.effective or irq.affinity
                                for irq in irqs)))


def _nic(nic, snapshot, verdicts):
    irqs = [irq for irq in snapshot.irqs if irq.nic == nic.name]
    irqs = sorted(irqs, key=lambda irq: irq.irq)[:report_obj.MAX_NIC_IRQS]
    verdict = verdicts.get(nic.name)
    return report_obj.NumaNicReport(
        name=nic.name, numa_node=nic.numa_node, speed_mbps=nic.speed_mbps,
        physnet=nic.physnet, bridge=nic.bridge,
        irqs=[irq.irq for irq in irqs], irq_cpus=irq_cpus(irqs),
        irq_steering=(None if verdict is None
                      else verdict[:report_obj.MAX_VERDICT_LENGTH]))


def _instance(instance, topology, active_loops, auto_choices, endings,
              judges):
    known = {str(n.id) for n in topology.nodes}
    fields = judged(instance, topology, judges)
    return report_obj.NumaInstanceReport(
        uuid=instance.uuid,
        requested_policy=instance.requested_policy,
        applied_policy=applied_policy(instance, topology, active_loops,
                                      auto_choices.get(instance.uuid)),
        memory_mb_per_node={str(k): int(v) for k, v in
                            instance.memory_mb_per_node.items()
                            if str(k) in known},
        vcpu_cpus=[c if c is not None else -1 for c in instance.vcpu_cpus],
        io_rate=float(instance.io_rate),
        io_intensive=fields.get('io_intensive', False),
        access_class=fields.get('access_class'),
        enforcement=endings.get(instance.uuid),
        cpu_wait=(None if instance.cpu_wait is None
                  else min(max(float(instance.cpu_wait), 0.0), 1.0)))


def build_report(snapshot, host, hypervisor_hostname, seq, period,
                 capabilities, now=None, active_loops=(), auto_choices=None,
                 boot_id=None, endings=None, locality_signal=None,
                 judges=(), measurements=None):
    """The period's HostReport.

    ``active_loops``: the loops acting this period; ``auto_choices``:
    {uuid: the policy the auto loop chose}; ``boot_id``: the agent
    process's (its ``seq`` counts from 1 again); ``endings``: {uuid: how
    the period's plan for it ended}; ``locality_signal``: what the host
    measures of locality (``Backend.locality_signal``);
    ``measurements``: all it measures (``Backend.measurements``; the
    locality signal alone when not given);
    ``judges``: (strategy class, Config) pairs whose ``judge`` gives a
    guest's fields that are a loop's rule (its access class, whether it
    is I/O intensive): ``nova_numa_policy.loops.runner.judges``; without
    them those fields say nothing was judged. Those of them acting this
    period also say why each NIC's vectors are where they are
    (:func:`nic_verdicts`), and what they say of nodes
    (:func:`node_fields`). The snapshot's memory tiers give each node's
    ``memory_tier`` (:func:`memory_tier`) and the host's
    ``memory_demotion``.
    """
    auto_choices = auto_choices or {}
    endings = endings or {}
    usage = {u.node_id: u for u in snapshot.usage}
    topology = snapshot.topology
    instances = snapshot.instances[:report_obj.MAX_INSTANCES]
    verdicts = nic_verdicts(snapshot, active_loops, judges)
    said_of_nodes = node_fields(snapshot, active_loops, judges)
    return report_obj.NumaHostReport(
        host=host, hypervisor_hostname=hypervisor_hostname,
        agent_version=agent_version(), seq=seq, boot_id=boot_id,
        generated_at=now or report_obj.utcnow(), period=float(period),
        numa_nodes=[_node(n, usage.get(n.id), snapshot.memory_tiers,
                          said_of_nodes.get(n.id))
                    for n in topology.nodes],
        nics=[_nic(n, snapshot, verdicts)
              for n in topology.nics[:report_obj.MAX_NICS]],
        instances=[_instance(i, topology, active_loops, auto_choices,
                             endings, judges)
                   for i in instances],
        enforceable_policies=enforceable_policies(capabilities),
        locality_signal=locality_signal,
        measurements=sorted(
            measurements if measurements is not None
            else {locality_signal} - {None}),
        memory_demotion=snapshot.memory_tiers.demotion)


def summary(report):
    """What a consumer acts on, to tell a significant change from noise."""
    return (
        tuple((i.uuid, i.requested_policy, i.applied_policy)
              for i in report.instances),
        tuple((n.id, n.memory_free_mb, n.memory_total_mb, n.cpu_load,
               n.floating_load)
              for n in report.numa_nodes),
        tuple(report.enforceable_policies))


def significant_change(before, after):
    """Whether ``after`` (a summary) differs enough from ``before``."""
    if before is None or before[0] != after[0] or before[2] != after[2]:
        return True
    for old, new in zip(before[1], after[1]):
        if old[0] != new[0]:
            return True
        total = max(new[2], 1)
        if (abs(old[1] - new[1]) / total > MEMORY_CHANGE
                or _load_moved(old[3], new[3])
                or _load_moved(old[4], new[4])):
            return True
    return len(before[1]) != len(after[1])


def _load_moved(old, new):
    """Whether a load moved by more than LOAD_CHANGE; None is no load."""
    if old is None or new is None:
        return old is not new
    return abs(old - new) > LOAD_CHANGE
