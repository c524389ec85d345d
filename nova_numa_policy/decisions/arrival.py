"""A ``home`` guest arrived by live migration: re-home it once, or not.

The live migration's source chose the guest's home node on this host
blind to its load and free memory (``chosen-by`` in the record,
:mod:`nova_numa_policy.virt.migration`), and a bound home guest is not
moved again by :func:`enforcement.enforce`. So once the guest has
arrived, the home decision is taken again here with what the agent
measures, by the same rule as at boot (:func:`enforcement.boot_plan`:
the NIC's node while it keeps under the load threshold, else the least
loaded nodes that hold the guest, within the CPUs nova allows it), and
the guest moves only when that choice is clearly better than where it
arrived.

The guest's own vCPUs are part of its node's measured load: they are
taken out first (from two samples of its vCPU time), and its own memory
counted as free where it lies, or a guest would flee the load it makes
itself. Pure: plain values in, plain values out.
"""

import dataclasses

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import policy
from nova_numa_policy.decisions import enforcement

# How much less loaded (busy fraction of a node's CPUs) the chosen nodes
# must be than those the guest arrived on for it to move. Moving carries
# all of its memory across the interconnect; a smaller difference is
# within what one period's load sample swings by.
CLEAR_MARGIN = 0.10
PAGES_PER_MB = enforcement.PAGES_PER_MB


def movable_on_arrival(plan):
    """The source's boot ``plan`` for the destination, movable there.

    libvirt changes a running guest's nodeset in ``restrictive`` mode but
    refuses to in ``strict`` ("change of nodeset for running domain
    requires restrictive numa mode", the lab host's libvirt): a home
    guest bound ``strict`` by its source could never be re-homed on
    arrival. ``restrictive`` on the same nodes binds its memory there as
    well, through the cgroup's cpuset.mems, and is read as home
    (:func:`enforcement.observed_placement`).
    """
    tune = plan.tune
    if tune is None or tune.mode != backend.MODE_STRICT:
        return plan
    return dataclasses.replace(plan, tune=dataclasses.replace(
        tune, mode=backend.MODE_RESTRICTIVE))


@dataclasses.dataclass(frozen=True)
class Arrival:
    """What to do with an arrived guest, and why.

    ``decided`` False: nothing can be said yet (its own load is not
    measured): ask again next period. ``by_load``: it stays for what the
    nodes' load measured this period, which may change, not for what the
    host or the guest cannot do.
    """

    actions: tuple = ()
    reason: str = ''
    decided: bool = True
    by_load: bool = False


def needs_rehoming(instance):
    """Whether ``instance`` is an arrival of ours whose home is re-taken.

    Guests nobody asked us to manage, and policies other than home (the
    source's choice for them holds the whole host or the NIC's node, as
    at boot), are left as they arrived.
    """
    if not instance.blind_arrival or instance.hands_off_reason:
        return False
    spec = policy.POLICIES.get(instance.requested_policy)
    return spec is not None and spec.placement == policy.Placement.HOME


def vcpu_busy(before, after):
    """Each vCPU's busy fraction between two ``(taken_at, vcpu_time_ns)``.

    None without a usable pair (first sighting, a vCPU count that
    changed, no time between them).
    """
    if before is None or after is None:
        return None
    (t0, ns0), (t1, ns1) = before, after
    if t1 <= t0 or len(ns0) != len(ns1) or not ns1:
        return None
    seconds = (t1 - t0) * 1e9
    return tuple(min(1.0, max(0.0, (b - a) / seconds))
                 for a, b in zip(ns0, ns1))


def _own_load(topology, instance, busy):
    """{node id: busy CPUs the guest's own vCPUs made there}."""
    own = {}
    for cpu, fraction in zip(instance.vcpu_cpus, busy):
        node = topology.node_of_cpu(cpu)
        if node is not None:
            own[node] = own.get(node, 0.0) + fraction
    return own


def without_guest(topology, usage, instance, busy):
    """``usage`` as it would be were ``instance`` not on this host.

    Its vCPUs' load taken out of their nodes, its resident memory given
    back to the nodes that hold it.
    """
    own = _own_load(topology, instance, busy)
    result = []
    for entry in usage:
        cpus = len(topology.node(entry.node_id).cpus) or 1
        load = max(0.0, entry.cpu_load - own.get(entry.node_id, 0.0) / cpus)
        free = (entry.memory_free_mb
                + instance.memory_mb_per_node.get(entry.node_id, 0))
        result.append(dataclasses.replace(entry, cpu_load=load,
                                          memory_free_mb=free))
    return tuple(result)


def _mean_load(usage, nodes):
    loads = [u.cpu_load for u in usage if u.node_id in nodes]
    return sum(loads) / len(loads) if loads else 0.0


def _holds(topology, usage, nodes, instance):
    free = sum(u.memory_free_mb for u in usage if u.node_id in nodes)
    cpus = sum(len(topology.node(n).cpus) for n in nodes)
    return (free >= instance.memory_mb
            and cpus >= len(instance.vcpu_affinity or instance.vcpu_cpus))


def _cares_for_its_nic(instance):
    return instance.nic_locality not in (None,
                                         policy.NicLocality.NONE.value)


def why_move(topology, usage, here, there, instance):
    """Why ``there`` is clearly better than ``here``, or None.

    ``usage`` is without the guest. Clearly better: ``here`` cannot hold
    the guest's memory or vCPUs, or the home rule put a NIC-local guest
    near its NIC and ``here`` is not, or ``there`` is less loaded by more
    than :data:`CLEAR_MARGIN`.
    """
    if not _holds(topology, usage, here, instance):
        return f'nodes {sorted(here)} cannot hold it'
    near = (enforcement.nic_nodes(topology) if _cares_for_its_nic(instance)
            else frozenset())
    if near and there <= near and not here <= near:
        return f"nodes {sorted(there)} are its NIC's and have room"
    load_here, load_there = (_mean_load(usage, here),
                             _mean_load(usage, there))
    if load_here - load_there > CLEAR_MARGIN:
        return (f'nodes {sorted(here)} are {100 * load_here:.0f} % busy, '
                f'nodes {sorted(there)} {100 * load_there:.0f} %')
    return None


def _move_pages(instance, here, there, usage):
    """Page moves of the guest's memory off ``here`` onto ``there``.

    To the chosen node with the most free memory; the kernel may have
    moved them already when the nodeset changed, then fewer move.
    """
    target = max(there, key=lambda n: (
        sum(u.memory_free_mb for u in usage if u.node_id == n), -n))
    return [backend.MovePages(
        instance.uuid, f'arrival: memory off node {node} to its new home',
        source_node=node, target_node=target,
        # numa_maps gives MiB in fractions; a move is of whole pages.
        pages=int(mb * PAGES_PER_MB))
        for node, mb in sorted(instance.memory_mb_per_node.items())
        if node in here and node not in there and mb > 0]


def rehome(instance, topology, usage, others=(), busy=None,
           can_set_nodeset=True, move_pages=False,
           threshold=enforcement.LOAD_THRESHOLD):
    """What to do with a home guest that arrived where its source chose.

    ``usage`` is as measured (the guest's own load in it), ``others``
    the other guests here, ``busy`` its vCPUs' busy fractions over the
    last period (:func:`vcpu_busy`; None: not measured yet),
    ``move_pages`` whether the host moves pages. Returns an
    :class:`Arrival`: the actions of one plan that moves it (nodeset, vCPU
    and emulator pins, then pages), or none and why it stays.
    """
    here = instance.memory_nodes
    if not enforcement.live_nodeset_allowed(instance.memory_mode):
        return Arrival(reason=f'stays: memory mode {instance.memory_mode} '
                              f'cannot change while it runs')
    if not can_set_nodeset:
        return Arrival(reason="stays: this host cannot change a running "
                              "guest's nodeset")
    if len(topology.nodes) < 2 or not here:
        return Arrival(reason='stays: no home to choose here')
    if busy is None:
        return Arrival(reason='its own load is measured first',
                       decided=False)
    spec = policy.NumaPolicy(
        instance.requested_policy, policy.NicLocality(
            instance.nic_locality or policy.NicLocality.NONE.value),
        memory_tiers=instance.requested_tiers)
    unloaded = without_guest(topology, usage, instance, busy)
    plan = enforcement.boot_plan(
        spec, topology, unloaded, memory_mb=instance.memory_mb,
        allowed_cpus=instance.allowed_cpus or None,
        vcpus=len(instance.vcpu_affinity or instance.vcpu_cpus),
        instances=[i for i in others if i.uuid != instance.uuid],
        threshold=threshold)
    there = plan.tune.nodes if plan.tune else frozenset()
    if not there or there == here:
        return Arrival(reason=f'stays: nodes {sorted(here)} are where home '
                              f'would put it here ({plan.reason})',
                       by_load=True)
    why = why_move(topology, unloaded, here, there, instance)
    if why is None:
        return Arrival(reason=f'stays: nodes {sorted(there)} are not clearly '
                              f'better than {sorted(here)}', by_load=True)
    reason = f'arrival: home moves to nodes {sorted(there)}: {why}'
    cpus = enforcement.home_cpus(topology, there, instance.allowed_cpus)
    actions = [backend.SetNodeset(instance.uuid, reason, nodes=there)]
    actions.extend(enforcement.pin_actions(
        instance, cpus, f'arrival: keep vCPUs on nodes {sorted(there)}'))
    if move_pages:
        actions.extend(_move_pages(instance, here, there, unloaded))
    return Arrival(actions=tuple(actions), reason=reason)
