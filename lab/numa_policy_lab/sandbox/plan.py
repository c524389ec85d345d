"""What the sandbox builds and boots: computes, flavors, a server script.

Pure data, built by factory functions so that no caller can change what
another one sees.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class ComputeSpec:
    name: str
    nodes: int
    cores_per_node: int
    memory_mb_per_node: int
    nic_node: int  # the NUMA node of the compute's uplink
    # What the compute measures of locality
    # (nova_numa_policy.contracts.locality): the kernel's hinting faults, its
    # balancing on, as distributions
    # ship hosts of several nodes; or, with the kernel's balancing off,
    # memory bandwidth on a CPU that monitors it, or hardware samples on
    # a CPU that samples memory accesses.
    signal: str = 'hinting-faults'

    @property
    def memory_mb(self):
        return self.nodes * self.memory_mb_per_node


@dataclasses.dataclass(frozen=True)
class FlavorSpec:
    name: str
    vcpus: int
    memory_mb: int
    extra_specs: tuple  # (key, value) pairs
    # The simulated workload of its servers (numa_policy_lab.sim.workload)
    # and why that one: each flavor gets the application its policy is for.
    profile: str
    profile_why: str

    @property
    def policy(self):
        return dict(self.extra_specs).get('hw:numa_policy')


@dataclasses.dataclass(frozen=True)
class Plan:
    computes: tuple
    flavors: tuple
    servers: tuple  # (server name, flavor name), in boot order
    periods: int
    # Wall-clock pause between agent periods, so that a user can follow.
    pause_s: float

    def flavor(self, name):
        return next(f for f in self.flavors if f.name == name)


def computes(smoke):
    # fakelibvirt in nova's fixtures accounts for fewer than 16 CPUs per
    # host. Uplinks sit on different nodes so that NIC locality matters.
    hosts = [ComputeSpec('compute1', 2, 6, 8192, nic_node=0),
             ComputeSpec('compute2', 2, 6, 8192, nic_node=1),
             ComputeSpec('compute3', 4, 3, 8192, nic_node=2,
                         signal='memory-bandwidth')]
    if not smoke:
        # Twice the servers: twice the hosts, or the load filter (rightly)
        # finds no node with headroom for the last ones.
        hosts += [ComputeSpec('compute4', 4, 3, 8192, nic_node=0,
                              signal='hardware-samples'),
                  ComputeSpec('compute5', 2, 6, 8192, nic_node=1),
                  ComputeSpec('compute6', 4, 3, 8192, nic_node=3)]
    return tuple(hosts)


def flavors():
    return (
        FlavorSpec('np.interleave', 4, 4096,
                   (('hw:numa_policy', 'interleave'),), 'master-slave',
                   'one thread allocates what all read: spreading helps'),
        FlavorSpec('np.home', 2, 2048, (('hw:numa_policy', 'home'),),
                   'shared-sync', 'threads share data: one node is best'),
        FlavorSpec('np.carrefour', 3, 4096,
                   (('hw:numa_policy', 'first-touch+carrefour'),),
                   'moderate', 'part of the data is one thread\'s'),
        FlavorSpec('np.auto', 4, 4096, (('hw:numa_policy', 'auto'),),
                   'master-slave', 'let the agent measure and choose'),
        FlavorSpec('np.io', 1, 1024,
                   (('hw:numa_policy', 'first-touch'),
                    ('hw:numa_nic_locality', 'preferred'),
                    ('hw:numa_io_intensity', 'high')),
                   'netperf', 'network bound: wants its NIC\'s node'),
        FlavorSpec('m1.plain', 2, 2048, (), 'memcached',
                   'no NUMA request: nova and the kernel decide'),
    )


def build(smoke):
    flavor_set = flavors()
    rounds = 1 if smoke else 2
    servers = tuple((f'{f.name.split(".")[-1]}-{k + 1}', f.name)
                    for k in range(rounds) for f in flavor_set)
    return Plan(computes=computes(smoke), flavors=flavor_set,
                servers=servers, periods=6 if smoke else 30,
                pause_s=0.0 if smoke else 0.5)
