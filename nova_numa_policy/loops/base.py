"""What every strategy is, and the small helpers they share.

A strategy is a class with a ``name``, the snapshot ``inputs`` it reads,
the backend ``required_capabilities`` its actions need, its own options
in ``[numa_policy_loops]`` (``OPTS``), a ``Config`` dataclass of
thresholds built by :func:`config_class` from those options (and the
shared ones) and ``config_from`` that reads them, and a pure
``decide(snapshot, state, config)`` returning ``(actions, new_state)``;
it never mutates ``state``.
"""

import abc
import dataclasses

import numpy as np

from nova_numa_policy.conf import loops as loops_conf
from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import scope
from nova_numa_policy.contracts import topology as topology_mod


class Strategy(abc.ABC):
    name = None
    inputs = ()
    required_capabilities = frozenset()
    Config = None
    # The strategy's own options in [numa_policy_loops] (loops/options.py
    # lists and registers them); Config.OPTIONS says which field each sets.
    OPTS = ()
    # True when the strategy's actions for one guest must all be admitted
    # or none (see runner.py); a loop's are admitted one by one.
    atomic_plans = False

    @classmethod
    def config_from(cls, group, period_s):
        """Pure: the ``Config`` a ``[numa_policy_loops]`` group sets.

        Each field ``Config.OPTIONS`` names takes its option's value (a
        plain dataclass without it keeps its defaults); a Config with a
        ``period_s`` gets the agent's period.
        """
        options = getattr(cls.Config, 'OPTIONS', {})
        values = {field: getattr(group, option)
                  for field, option in options.items()}
        if 'period_s' in {f.name for f in dataclasses.fields(cls.Config)}:
            values['period_s'] = period_s
        return cls.Config(**values)

    def initial_state(self, seed=0):
        """The state before the first period; ``seed`` feeds any RNG."""
        return {}

    @abc.abstractmethod
    def decide(self, snapshot, state, config):
        """Return ``(actions, new_state)``; never mutate ``state``."""

    @classmethod
    def judge(cls, instance, topology, config):
        """Pure: what this strategy judges of a guest for its report.

        A ``{field: value}`` of :class:`NumaInstanceReport` fields the
        report takes from the strategy whose rule it is (the auto loop's
        access class, vNUIOA's I/O intensity); nothing by default. The
        report asks every installed loop, enabled or not, with its
        ``config``: what a guest is does not depend on which loops act.
        """
        return {}

    @classmethod
    def judge_nics(cls, snapshot, config):
        """Pure: ``{NIC name: why}`` this strategy says of the host's NICs.

        The report carries it (``NumaNicReport.irq_steering``) while the
        strategy acts on the host; nothing by default.
        """
        return {}

    @classmethod
    def judge_nodes(cls, snapshot, config):
        """Pure: ``{node id: {field: value}}`` this strategy says of nodes.

        :class:`NumaNodeReport` fields whose rule is the strategy's (the
        tiering loop's ``demotable_mb``); the report carries them while
        the strategy acts on the host; nothing by default.
        """
        return {}

    @classmethod
    def for_capabilities(cls, config, capabilities):
        """``config`` fitted to a backend's ``capabilities``: pure.

        The runner calls it for each strategy it starts, so that a
        strategy proposes only what the backend can carry out; ``config``
        as it is by default.
        """
        return config

    def forget(self, state, uuids):
        """``state`` without what it remembers of guests ``uuids``.

        The runner calls it for guests rebooted since the last period
        (see :func:`restarts`) before ``decide``. Never mutate ``state``.
        """
        return state


def config_class(module, own_opts, options, **fixed):
    """A loop's frozen ``Config`` dataclass, each threshold declared once.

    ``options`` maps a field to the name of the option that sets it, one
    of the loop's ``own_opts`` or an option every loop shares; the field's
    default is that option's default, so the code and the sample config
    cannot disagree. ``fixed`` adds, in order, fields no option sets with
    their defaults. ``Config.OPTIONS`` keeps the mapping for
    :meth:`Strategy.config_from`.
    """
    known = {opt.dest: opt for opt in (*own_opts, *loops_conf.OPTS)}
    defaults = {field: known[name].default for field, name in options.items()}
    defaults.update(fixed)
    config = dataclasses.make_dataclass(
        'Config',
        [(field, type(default), dataclasses.field(default=default))
         for field, default in defaults.items()],
        namespace={'OPTIONS': dict(options)}, frozen=True)
    config.__module__ = module
    return config


def managed(snapshot):
    """The instances a loop may touch: those without a hands-off reason.

    Guests nobody asked us to manage carry one
    (:mod:`nova_numa_policy.contracts.scope`).
    """
    return [i for i in snapshot.instances if not i.hands_off_reason]


def vcpus_movable(inst):
    """Whether a loop may choose where the guest's vCPUs run.

    Under first-touch (and the ``+carrefour`` variant) and ``auto`` the
    placement is the loops' to improve. ``home`` keeps vCPUs on the home
    nodes (the policy's enforcement does) and ``interleave`` spreads them
    with the memory: moving them would undo what the guest asked for.
    """
    spec = policy.POLICIES.get(inst.requested_policy)
    if spec is None:
        return inst.requested_policy is None  # managed by the operator's say
    return spec.placement in (None, policy.Placement.FIRST_TOUCH)


def node_cpus(topology, inst, node):
    """The CPUs of ``node`` the guest may be pinned to: those nova allows.

    Empty when nova allows the guest none of them: the node is not a
    place for it.
    """
    return scope.allowed(topology.node(node).cpus, inst.allowed_cpus)


@topology_mod.per_topology
def cpu_nodes(topology):
    """{cpu: node id}, what ``HostTopology.node_of_cpu`` finds by a scan."""
    return {cpu: node.id for node in topology.nodes for cpu in node.cpus}


@topology_mod.per_topology
def distance_matrix(topology):
    """The host's NUMA distances as a read-only array, topology order."""
    dist = np.array([n.distances for n in topology.nodes], float)
    dist.flags.writeable = False
    return dist


@topology_mod.per_topology
def node_ids(topology):
    return tuple(n.id for n in topology.nodes)


def vcpu_nodes(topology, inst):
    where = cpu_nodes(topology)
    return [where.get(cpu) for cpu in inst.vcpu_cpus]


def access_vector(topology, inst):
    """Accesses per node in topology order, or None without counters."""
    if inst.accesses_per_node is None:
        return None
    get = inst.accesses_per_node.get
    return np.array([get(n, 0) for n in node_ids(topology)], float)


def memory_vector(topology, inst):
    get = inst.memory_mb_per_node.get
    return np.array([get(n, 0) for n in node_ids(topology)], float)


def imbalance(values):
    """Seed 000 Table 1: relative std deviation of accesses per node."""
    values = np.asarray(values, float)
    mean = values.mean() if len(values) else 0.0
    return float(values.std() / mean) if mean > 0 else 0.0


def cputime_ns(inst):
    """The guest's total vCPU time: it only grows while the guest runs."""
    return sum(inst.vcpu_time_ns)


def restarts(snapshot, seen):
    """Guests rebooted since the last period, and the times to keep.

    ``seen`` maps a guest to its vCPU time when last observed. A guest
    whose vCPU time went backwards was rebooted: the host placed its new
    vCPU threads and memory afresh, so what a loop remembers of it (pin
    counts, penalties, a chosen policy, memory already interleaved)
    describes a placement that no longer exists. Returns ``(restarted
    uuids, new seen)``; guests gone from the snapshot are forgotten.
    """
    now = {i.uuid: cputime_ns(i) for i in snapshot.instances}
    gone = {uuid for uuid, ns in now.items()
            if uuid in seen and ns < seen[uuid]}
    return gone, now


def pct(value):
    return f'{100.0 * value:.0f} %'
