"""One simulated host per compute, its agent, its loops, its actions.

Each compute's simulated host has the compute's topology; the production
:class:`agent.service.manager.Agent` runs on it with the production
report sender and its own rebalancing loops, built from ``[numa_policy_loops]``
as ``numa-policy-agent`` builds them.
"""

import dataclasses

import fixtures
import numpy as np

from agent.service import manager
from agent.service import notifier
from agent.service import rebalance
from nova_numa_policy.contracts import backend
from numa_policy_lab import shape
from numa_policy_lab.sim import backend as sim_backend
from numa_policy_lab.sim import scenarios
from numa_policy_lab.sim import state as sim_state
from numa_policy_lab.sim import topology

PERIOD_S = 5.0
NIC_NAME = 'eth0'
# How the booted guest's memory lands before any agent acts: what the
# driver extension writes in <numatune> at boot, else the kernel default.
BOOT_PLACEMENT = {'interleave': sim_state.INTERLEAVE,
                  'interleave+carrefour': sim_state.INTERLEAVE,
                  'home': sim_state.HOME}
# The <numatune> memory mode that boot placement corresponds to.
BOOT_MODE = {sim_state.INTERLEAVE: backend.MODE_INTERLEAVE,
             sim_state.HOME: backend.MODE_STRICT}


def sim_host(spec):
    """A calibrated preset with the compute's shape and uplink node.

    Two nodes take the two-socket Xeon's latencies and bandwidths, four
    the four-socket ring; the sizes are the compute's own.
    """
    preset = topology.xeon2() if spec.nodes == 2 else topology.ivybridge4()
    if spec.nodes not in (2, 4):
        raise ValueError(f'{spec.name}: only 2 or 4 nodes are calibrated')
    return dataclasses.replace(
        preset, name=spec.name, cpus_per_node=spec.cores_per_node,
        memory_mb_per_node=spec.memory_mb_per_node,
        nics=(shape.Nic(NIC_NAME, spec.nic_node),))


def boot_cpus(host, vms, rng, n_vcpus, one_node):
    """Where the host starts a new guest's vCPU threads.

    Idle CPUs first, at random, blind to memory (Linux's wake-up path);
    all on the least used node when the policy binds them.
    """
    used = np.zeros(host.n_cpus)
    for vm in vms:
        np.add.at(used, vm.vcpu_cpus, 1)
    if one_node:
        per_node = [used[list(host.node_cpus(n))].sum()
                    for n in range(host.n_nodes)]
        cpus = list(host.node_cpus(int(np.argmin(per_node))))
    else:
        cpus = list(range(host.n_cpus))
    order = sorted(cpus, key=lambda c: (used[c], rng.random()))
    return [order[i % len(order)] for i in range(n_vcpus)]


class ComputeRig(fixtures.Fixture):
    """A compute's simulated host, agent, report sender and loops."""

    def __init__(self, spec, nodename, conf, seed):
        super().__init__()
        self.spec = spec
        self._nodename = nodename
        self._conf = conf
        self._seed = seed

    def _setUp(self):
        # What a Linux host measures (doc/source/simulator.rst).
        self.host = sim_backend.SimulatedBackend(
            sim_host(self.spec), [], PERIOD_S, self._seed,
            signal=self.spec.signal, hostname=self._nodename)
        self._rng = np.random.default_rng(self._seed)
        self.notifier = notifier.make_notifier(self._conf, self.spec.name)
        self.addCleanup(self.notifier.transport.cleanup)
        self.sender = notifier.ReportSender(self.notifier,
                                            retry_interval=1.0)
        self.sender.start()
        self.addCleanup(self.sender.stop)
        self.runner = rebalance.build_runner(
            self.host, self._conf.numa_policy_loops, PERIOD_S,
            seed=self._seed)
        self.agent = manager.Agent(self.host, host=self.spec.name,
                                   period=PERIOD_S, sender=self.sender,
                                   clock=lambda: self.host.now,
                                   runner=self.runner)
        self.actions_by_vm = {}

    def add_guest(self, uuid, flavor):
        policy = flavor.policy
        placement = BOOT_PLACEMENT.get(policy, sim_state.FIRST_TOUCH)
        cpus = boot_cpus(self.host.host, self.host.vms, self._rng,
                         flavor.vcpus, placement == sim_state.HOME)
        vm = scenarios.make_vm(
            self.host.host, uuid, flavor.profile, cpus,
            memory_mb=flavor.memory_mb, policy=placement, requested=policy,
            nic=NIC_NAME, pinned=placement == sim_state.HOME)
        nodes = ()  # no <numatune>: the kernel's default, any node
        if placement == sim_state.INTERLEAVE:
            nodes = range(self.host.host.n_nodes)
        elif placement == sim_state.HOME:
            nodes = {self.host.host.node_of_cpu(int(c)) for c in cpus}
        self.host.add_vm(vm, BOOT_MODE.get(placement), frozenset(nodes))
        return vm

    def report_now(self):
        """One agent period without time passing (after a boot).

        As a domain event does in production: the loops run in it too.
        """
        self._run_agent()
        return self.agent.seq

    def period(self):
        """One agent period (its loops included), then time passes.

        :returns: {uuid: throughput in the period}.
        """
        self._run_agent()
        throughput = self.host.advance()
        return {vm.uuid: float(t) for vm, t in zip(self.host.vms,
                                                   throughput)}

    def _run_agent(self):
        # The agent tells the collector of each action itself; the
        # loops' are counted here by guest and loop.
        self.agent.run_once()
        for name, action in self.agent.last_loop_actions:
            by_vm = self.actions_by_vm.setdefault(action.instance_uuid, {})
            by_vm[name] = by_vm.get(name, 0) + 1

    @property
    def actions_sent(self):
        return self.agent.actions_told

    def loop_names(self):
        return rebalance.active_loops(self.runner)

    def auto_choices(self):
        return self.runner.auto_choices()

    def observed(self):
        """{uuid: InstanceState} as the agent sees its guests now."""
        return {i.uuid: i for i in self.host.observe().instances}
