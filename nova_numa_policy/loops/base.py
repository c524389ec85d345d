"""What every strategy is, and the small helpers they share.

A strategy is a class with a ``name``, the snapshot ``inputs`` it reads,
the backend ``required_capabilities`` its actions need, a ``Config``
dataclass of thresholds, and a pure ``decide(snapshot, state, config)``
returning ``(actions, new_state)``; it never mutates ``state``.
"""

import abc

import numpy as np


class Strategy(abc.ABC):
    name = None
    inputs = ()
    required_capabilities = frozenset()
    Config = None

    def initial_state(self, seed=0):
        """The state before the first period; ``seed`` feeds any RNG."""
        return {}

    @abc.abstractmethod
    def decide(self, snapshot, state, config):
        """Return ``(actions, new_state)``; never mutate ``state``."""


def managed(snapshot):
    """The instances a loop may touch: those without a hands-off reason."""
    return [i for i in snapshot.instances if not i.hands_off_reason]


def vcpu_nodes(topology, inst):
    return [topology.node_of_cpu(cpu) for cpu in inst.vcpu_cpus]


def access_vector(topology, inst):
    """Accesses per node in topology order, or None without counters."""
    if inst.accesses_per_node is None:
        return None
    return np.array([inst.accesses_per_node.get(n.id, 0)
                     for n in topology.nodes], float)


def memory_vector(topology, inst):
    return np.array([inst.memory_mb_per_node.get(n.id, 0)
                     for n in topology.nodes], float)


def imbalance(values):
    """Seed 000 Table 1: relative std deviation of accesses per node."""
    values = np.asarray(values, float)
    mean = values.mean() if len(values) else 0.0
    return float(values.std() / mean) if mean > 0 else 0.0


def pct(value):
    return f'{100.0 * value:.0f} %'
