"""The I/O path on the guests' node (seed 002, vNUIOA's other half).

vNUIOA brings a network-bound guest's vCPUs and memory to the NIC's
node; the packets still travel through the NIC's interrupt vectors and
the guest's emulator and vhost threads, which the host places without
regard to either. Each period this loop decides, in pure code:

* per NIC with a known node: its I/O-intensive guests are those whose
  interfaces go through it (``InstanceState.nics``) and that
  :func:`vnuioa.io_intensive` calls network-bound, by the same
  ``vnuioa_io_threshold``. The NIC is *homed* when it has at least one,
  at least one of them is managed, and every one runs all its vCPUs on
  the NIC's node. Then its vectors, sorted by number, are spread one
  CPU each over that node's CPUs outside ``HostTopology.reserved_cpus``:
  vectors routed elsewhere are steered, and one the host happened to
  route there already is claimed once, so that it stays there too. A
  NIC that is not homed (its last such guest left, or they run
  elsewhere or over several nodes) gets back the affinity the host
  found before the first steer (``IrqState.found``); a vector never
  steered is never touched;
* per managed I/O-intensive guest whose vCPUs share one node: its
  emulator threads go to that node's CPUs nova allows it, outside the
  reserved ones; once they are there, its vhost workers follow when the
  backend can pin them (``CAP_IO_THREAD_PINNING``) and they are not
  there already (libvirt's emulator pinning moves the vhost workers that
  sit in the emulator's cgroup; pinning the workers themselves is for
  the others).

:func:`verdicts` says for each NIC why its vectors are where they are;
the same words go in the actions' reasons and in the host report.
"""

import dataclasses

from nova_numa_policy.conf import loops as loops_conf
from nova_numa_policy.contracts import backend
from nova_numa_policy.loops import base
from nova_numa_policy.loops import vnuioa

# Its options in [numa_policy_loops], defined with every loop's in
# nova_numa_policy.conf.loops.
OPTS = loops_conf.IOPATH_OPTS

Config = base.config_class(
    __name__, (*OPTS, *vnuioa.OPTS),
    {'io_threshold_rps': 'vnuioa_io_threshold',
     'pin_threads': 'iopath_pin_threads'},
    # Whether the backend can pin vhost workers (CAP_IO_THREAD_PINNING);
    # the runner sets it (IoPath.for_capabilities). Off by default: a
    # Config that knows nothing of its backend proposes nothing it may
    # not carry out.
    io_thread_pinning=False)


@dataclasses.dataclass(frozen=True)
class NicPlan:
    """What the loop does to one NIC's vectors this period, and why."""

    verdict: str
    steers: tuple = ()


def vectors(snapshot, nic_name):
    """The NIC's interrupt vectors, by number."""
    return sorted((irq for irq in snapshot.irqs if irq.nic == nic_name),
                  key=lambda irq: irq.irq)


def nic_guests(snapshot, nic_name, config):
    """The I/O-intensive guests whose interfaces go through the NIC."""
    return [inst for inst in snapshot.instances
            if nic_name in inst.nics
            and vnuioa.io_intensive(inst, config.io_threshold_rps)]


def single_node(topology, inst):
    """The node all the guest's vCPUs last ran on, or None."""
    nodes = set(base.vcpu_nodes(topology, inst))
    return nodes.pop() if len(nodes) == 1 and None not in nodes else None


def delivery_cpus(topology, node):
    """The node's CPUs an interrupt may go to: all but the reserved."""
    return sorted(set(topology.node(node).cpus) - topology.reserved_cpus)


def _unhomed_why(topology, nic, guests):
    """Why the NIC's vectors do not follow its guests, or None if they do."""
    if not guests:
        return 'no I/O-intensive guest uses it'
    if all(inst.hands_off_reason for inst in guests):
        return 'its I/O-intensive guests are all left to nova'
    nodes = {single_node(topology, inst) for inst in guests}
    if None in nodes or len(nodes) > 1:
        return 'its I/O-intensive guests run on several nodes'
    (node,) = nodes
    if node != nic.numa_node:
        return (f'its I/O-intensive guests run on node {node}, not the '
                f"NIC's node {nic.numa_node}")
    return None


def _steers(nic, irqs, cpus, guests):
    """One CPU per vector, round the node's CPUs.

    A vector routed elsewhere is steered; one already where it should be
    is claimed once (steered to where it is) if the agent never steered
    it: from then on it is the agent's (an interrupt balancer is told to
    leave it alone), and given back when the guests leave.
    """
    steers = []
    for k, irq in enumerate(irqs):
        target = frozenset({cpus[k % len(cpus)]})
        if irq.affinity == target and irq.found is not None:
            continue
        move = ('to' if irq.affinity != target else 'kept on')
        steers.append(backend.SteerIrq(
            instance_uuid=backend.nic_subject(nic.name),
            reason=(f'{len(guests)} I/O-intensive guest(s) on node '
                    f'{nic.numa_node}: {nic.name} vector {irq.irq} {move} '
                    f'CPU {min(target)}'),
            irq=irq.irq, nic=nic.name, cpus=target, previous=irq.affinity))
    return tuple(steers)


def _restores(nic, irqs, why):
    """Each steered vector back to what the host found, with ``why``."""
    return tuple(
        backend.SteerIrq(
            instance_uuid=backend.nic_subject(nic.name),
            reason=f'{nic.name} vector {irq.irq} restored as found: {why}',
            irq=irq.irq, nic=nic.name, cpus=irq.found,
            previous=irq.affinity)
        # Every vector the agent holds, even one back where it was found
        # (or claimed where it was): giving it back hands it to an
        # interrupt balancer again.
        for irq in irqs
        if irq.found is not None)


def nic_plan(snapshot, nic, config):
    """The :class:`NicPlan` of one NIC: pure."""
    if nic.numa_node is None:
        return NicPlan('left alone: its NUMA node is unknown')
    if snapshot.irq_hands_off:
        # Not even restores: whatever steers the vectors now (an
        # interrupt balancer) would move them again, and a restore would
        # only fight it. The affinity found stays with the host.
        return NicPlan(f'left alone: {snapshot.irq_hands_off}')
    irqs = vectors(snapshot, nic.name)
    if not irqs:
        return NicPlan('left alone: no interrupt vector seen')
    topology = snapshot.topology
    guests = nic_guests(snapshot, nic.name, config)
    why = _unhomed_why(topology, nic, guests)
    if why is not None:
        restores = _restores(nic, irqs, why)
        done = (f'restored {len(restores)} vector(s) as found'
                if restores else 'left as found')
        return NicPlan(f'{done}: {why}', restores)
    cpus = delivery_cpus(topology, nic.numa_node)
    if not cpus:
        return NicPlan(f'left alone: every CPU of node {nic.numa_node} is '
                       f'reserved')
    steers = _steers(nic, irqs, cpus, guests)
    return NicPlan(
        f'steered to node {nic.numa_node} (CPUs '
        f'{_cpu_list(cpus[:len(irqs)])}) for {len(guests)} I/O-intensive '
        f'guest(s) there', steers)


def _cpu_list(cpus):
    return ','.join(str(cpu) for cpu in sorted(cpus))


def verdicts(snapshot, config):
    """{NIC name: why its vectors are where they are}: pure."""
    return {nic.name: nic_plan(snapshot, nic, config).verdict
            for nic in snapshot.topology.nics}


def _within(cpus, target):
    return bool(cpus) and cpus <= target


def thread_pins(snapshot, inst, config):
    """PinEmulator / PinIoThreads bringing a guest's threads to its node."""
    topology = snapshot.topology
    node = single_node(topology, inst)
    if node is None:
        return []
    target = frozenset(base.node_cpus(topology, inst, node)) - (
        topology.reserved_cpus)
    if not target:
        return []
    why = f'I/O-intensive, its vCPUs on node {node}'
    if not _within(inst.emulator_affinity, target):
        return [backend.PinEmulator(instance_uuid=inst.uuid, cpus=target,
                                    reason=f'{why}: emulator threads there')]
    # The emulator is in place: the vhost workers that did not move with
    # it (those outside its cgroup) are pinned on their own.
    if (config.io_thread_pinning and inst.io_thread_cpus
            and not _within(inst.io_thread_cpus, target)):
        return [backend.PinIoThreads(instance_uuid=inst.uuid, cpus=target,
                                     reason=f'{why}: vhost workers there')]
    return []


def _threads_ours(inst):
    """Whether the loop may place the guest's emulator and vhost threads.

    Not a hands-off guest's (nova pins its emulator). Not a guest whose
    policy places its threads (home, interleave): the policy's
    enforcement pins its emulator to the policy's CPUs each period, and
    pinning it here would be undone there.
    """
    return not inst.hands_off_reason and base.vcpus_movable(inst)


class IoPath(base.Strategy):
    name = 'iopath'
    inputs = ('irqs', 'irq_hands_off', 'nics', 'io_rate', 'vcpu_cpus',
              'emulator_affinity', 'io_thread_cpus', 'reserved_cpus')
    required_capabilities = frozenset({backend.CAP_IRQ_STEERING,
                                       backend.CAP_EMULATOR_PINNING})
    Config = Config
    OPTS = OPTS

    @classmethod
    def for_capabilities(cls, config, capabilities):
        return dataclasses.replace(
            config, io_thread_pinning=(backend.CAP_IO_THREAD_PINNING
                                       in capabilities))

    @classmethod
    def judge_nics(cls, snapshot, config):
        return verdicts(snapshot, config)

    def decide(self, snapshot, state, config):
        actions = []
        for nic in snapshot.topology.nics:
            actions.extend(nic_plan(snapshot, nic, config).steers)
        if config.pin_threads:
            for inst in snapshot.instances:
                if _threads_ours(inst) and vnuioa.io_intensive(
                        inst, config.io_threshold_rps):
                    actions.extend(thread_pins(snapshot, inst, config))
        return actions, state
