"""``auto``: pick a guest's policy from its measured access imbalance.

Seed 000 Table 1 classes, imbalance being the relative standard deviation
of accesses per node over the guest's nodes: below ``low`` (85 %)
first-touch, up to ``high`` (130 %) first-touch + Carrefour, above it
interleave + Carrefour. Without access counters memory per node stands
in for accesses (a first-touch guest's memory follows its allocators).

Where the signal comes from the kernel's own balancing (hinting faults)
the kernel pulls pages back toward the vCPUs that touch them, so memory
spread by page moves would not stay spread: the class is still measured
and reported, but the choice stops at first-touch + Carrefour.

Against flapping: a new class must win ``max_pin_count`` + 1 periods in a
row (seed 004 pin count); classes only move up between revisits, because
interleaving or Carrefour lowers the imbalance they were chosen for; every
``revisit_periods`` the choice is cleared and measured again.
"""

import dataclasses

import numpy as np

from nova_numa_policy.conf import loops as loops_conf
from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality
from nova_numa_policy.loops import base
from nova_numa_policy.loops import carrefour
from nova_numa_policy.loops import hysteresis

FIRST_TOUCH = 'first-touch'
FT_CARREFOUR = 'first-touch+carrefour'
IL_CARREFOUR = 'interleave+carrefour'
RANK = {FIRST_TOUCH: 0, FT_CARREFOUR: 1, IL_CARREFOUR: 2}
# Seed 000 Table 1 class of a measured access imbalance, by the policy
# auto picks for it: the report's access_class.
ACCESS_CLASS = {FIRST_TOUCH: 'low', FT_CARREFOUR: 'moderate',
                IL_CARREFOUR: 'high'}
PAGES_PER_MB = 256


# Its options in [numa_policy_loops], defined with every loop's in
# nova_numa_policy.conf.loops.
OPTS = loops_conf.AUTO_OPTS

Config = base.config_class(
    __name__, OPTS,
    {'low': 'auto_low', 'high': 'auto_high',
     'max_pin_count': 'hysteresis_pin_count'},
    revisit_periods=720,  # one hour of 5 s periods
    # Memory counts as interleaved once its spread over the guest's nodes
    # has a relative std deviation below this.
    interleaved_rsd=0.10,
    batch_pages=65536,
    page_rebalancer=carrefour.Config())


def classify(imb, config):
    if imb < config.low:
        return FIRST_TOUCH
    if imb <= config.high:
        return FT_CARREFOUR
    return IL_CARREFOUR


def measured_imbalance(topology, inst):
    acc = base.access_vector(topology, inst)
    if acc is None or acc.sum() <= 0:
        acc = base.memory_vector(topology, inst)
    nodes = sorted(set(base.vcpu_nodes(topology, inst))
                   | set(np.flatnonzero(acc > 0)))
    return base.imbalance(acc[nodes])


def _interleave(topology, inst, config):
    """Spread memory evenly over the guest's vCPU nodes, a batch a time.

    Each period moves up to ``batch_pages`` from the fullest node to every
    node below the even share, in proportion to its deficit, so the guest
    never passes through a state with its memory piled on a second node.
    """
    nodes = sorted(set(base.vcpu_nodes(topology, inst)))
    mem = base.memory_vector(topology, inst)
    if len(nodes) < 2 or base.imbalance(mem[nodes]) <= config.interleaved_rsd:
        return []
    src = max(range(len(mem)), key=lambda n: mem[n])
    target = mem.sum() / len(nodes)
    under = [n for n in nodes if n != src and mem[n] < target]
    deficits = np.array([target - mem[n] for n in under])
    budget = min(config.batch_pages,
                 (mem[src] - target) * PAGES_PER_MB,
                 deficits.sum() * PAGES_PER_MB)
    actions = []
    for node, deficit in zip(under, deficits):
        pages = int(budget * deficit / deficits.sum())
        if pages > 0:
            actions.append(backend.MovePages(
                instance_uuid=inst.uuid, source_node=src, target_node=node,
                pages=pages, reason=f'auto: {IL_CARREFOUR}, interleaving '
                                    f'memory over nodes {nodes}'))
    return actions


def _act(topology, inst, policy, interleaved, config):
    """Actions for the chosen policy.

    Interleaving is a one-time static placement, after which only Carrefour
    acts: a second interleave would undo Carrefour's hot-page moves every
    period.
    """
    if policy == IL_CARREFOUR and not interleaved:
        return _interleave(topology, inst, config)
    if policy in (IL_CARREFOUR, FT_CARREFOUR):
        return carrefour.decide_instance(topology, inst,
                                         config.page_rebalancer)
    return []


def _may_interleave(inst):
    """Whether the guest's class may lead to interleaving its memory.

    Only on counted accesses. Where the kernel balances (its hinting
    faults are the signal) it would gather the spread pages again; where
    nothing was measured for the guest yet (the kernel has not sampled
    it, or the host measures nothing) the class comes from memory per
    node, which cannot tell a hot page from a cold one, and a choice
    only goes up until it is revisited.
    """
    return (inst.access_signal is not None
            and not locality.kernel_balances(inst.access_signal))


def _next_choice(current, proposed, config):
    if current is not None and RANK[proposed] < RANK[current.value]:
        proposed = current.value  # only upwards between revisits
    return hysteresis.update(current, proposed, config.max_pin_count)


class Auto(base.Strategy):
    name = 'auto'
    inputs = ('accesses_per_node', 'memory_mb_per_node', 'vcpu_cpus')
    required_capabilities = frozenset({backend.CAP_PAGE_MIGRATION})
    Config = Config
    OPTS = OPTS

    @classmethod
    def config_from(cls, group, period_s):
        if group.auto_low >= group.auto_high:
            raise ValueError(f'[{loops_conf.GROUP.name}] auto_low '
                             f'({group.auto_low}) must be below auto_high '
                             f'({group.auto_high})')
        # auto moves pages as Carrefour would, under Carrefour's options.
        return dataclasses.replace(
            super().config_from(group, period_s),
            page_rebalancer=carrefour.Carrefour.config_from(group, period_s))

    def initial_state(self, seed=0):
        return {'choice': {}, 'age': {}, 'interleaved': frozenset()}

    def forget(self, state, uuids):
        # A rebooted guest's memory was placed again by first-touch: its
        # class is measured afresh and interleaving is not done yet.
        return {**state,
                'choice': {u: c for u, c in state['choice'].items()
                           if u not in uuids},
                'age': {u: a for u, a in state['age'].items()
                        if u not in uuids},
                'interleaved': state['interleaved'] - frozenset(uuids)}

    @classmethod
    def judge(cls, instance, topology, config):
        """The guest's measured access class; none where nothing was.

        Memory per node never stands in here: the report says what was
        measured.
        """
        if not instance.accesses_per_node or not instance.vcpu_cpus:
            return {}
        return {'access_class': ACCESS_CLASS[classify(
            measured_imbalance(topology, instance), config)]}

    def decide(self, snapshot, state, config):
        topo = snapshot.topology
        choice = dict(state['choice'])
        age = dict(state['age'])
        done = set(state['interleaved'])
        actions = []
        for inst in base.managed(snapshot):
            if inst.requested_policy != 'auto' or not inst.vcpu_cpus:
                continue
            uuid = inst.uuid
            age[uuid] = age.get(uuid, 0) + 1
            if age[uuid] > config.revisit_periods:
                choice.pop(uuid, None)
                done.discard(uuid)
                age[uuid] = 0
            proposed = classify(measured_imbalance(topo, inst), config)
            if proposed == IL_CARREFOUR and not _may_interleave(inst):
                proposed = FT_CARREFOUR
            choice[uuid] = _next_choice(choice.get(uuid), proposed, config)
            policy = choice[uuid].value
            mine = _act(topo, inst, policy, uuid in done, config)
            if policy == IL_CARREFOUR and not mine:
                done.add(uuid)
            actions.extend(mine)
        return actions, {'choice': choice, 'age': age,
                         'interleaved': frozenset(done)}
