"""Placement strategies: which host, and where on it, for each arrival.

A strategy's ``place(guest, cluster)`` returns a :class:`Decision` or
None (no valid host). ``loops`` says whether the hosts' agents run their
rebalancing loops for the guests it places. In-host placement helpers
model what decides when nothing is pinned: the kernel puts each new vCPU
on an idle CPU, blind to memory (``kernel_cpus``), and memory is
first-touched where the vCPUs run.
"""

import dataclasses

import numpy as np

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality
from nova_numa_policy.decisions import enforcement
from nova_numa_policy.scheduling import scoring
from numa_policy_lab.cluster import guests as guests_mod
from numa_policy_lab.cluster import nova
from numa_policy_lab.sim import state as st

# The scheduler plugins' defaults (nova_numa_policy.conf.scheduler), but
# for the new guest's expected vCPU load: one over the allocation ratio,
# as the option's help says, and the study's ratio is 1.0.
SETTINGS = scoring.Settings(ttl=180.0, strict=True, threshold=0.8,
                            vcpu_load=1.0)
OUR_MULTIPLIERS = (1.0, 1.0)  # nic_locality, node_load weight multipliers
FILTERS = (scoring.policy_verdict, scoring.nic_verdict,
           scoring.load_verdict)
WEIGHERS = (scoring.nic_weight, scoring.load_weight)


@dataclasses.dataclass(frozen=True)
class Decision:
    host: int
    boot: guests_mod.Boot
    requested: str | None = None  # hw:numa_policy as the agent sees it
    cells: tuple | None = None  # nova's guest cells, for hw:numa_nodes


def kernel_cpus(host, count, rng, allowed=None):
    """A CPU per vCPU, each a random one among the least busy allowed."""
    counts = host.cpu_counts()
    allowed = sorted(allowed) if allowed else list(range(host.host.n_cpus))
    chosen = []
    for _ in range(count):
        low = min(counts[c] for c in allowed)
        idle = [c for c in allowed if counts[c] == low]
        cpu = int(idle[int(rng.integers(len(idle)))])
        counts[cpu] += 1
        chosen.append(cpu)
    return tuple(chosen)


def pinned_cpu_sets(host, sets):
    """A CPU per vCPU: the least busy of the CPUs it is pinned to."""
    counts = host.cpu_counts()
    chosen = []
    for allowed in sets:
        cpu = min(allowed, key=lambda c: (counts[c], c))
        counts[cpu] += 1
        chosen.append(cpu)
    return tuple(chosen)


def pinned_cpus(host, nodes, count):
    """vCPUs dealt evenly over ``nodes``, each to the least busy CPU."""
    nodes = sorted(nodes)
    return pinned_cpu_sets(host, [host.host.node_cpus(nodes[v % len(nodes)])
                                  for v in range(count)])


def _unpinned(host, cpus):
    everything = frozenset(range(host.host.n_cpus))
    return tuple(everything for _ in cpus)


def _node_pinned(host, cpus):
    sim = host.host
    return tuple(frozenset(sim.node_cpus(sim.node_of_cpu(c))) for c in cpus)


def node_pinned_boot(host, nodes, app, memory_nodes, bound=False):
    """``app``'s vCPUs dealt over ``nodes``, memory on ``memory_nodes``.

    Each vCPU starts on its node's least busy CPU and may move inside
    that node. ``bound``: the memory policy binds it there (nova's
    strict cells), which the kernel's NUMA balancing leaves alone.
    """
    cpus = pinned_cpus(host, nodes, app.vcpus)
    return guests_mod.Boot(cpus=cpus, affinity=_node_pinned(host, cpus),
                           nodes=frozenset(memory_nodes),
                           kernel_balanced=not bound)


def kernel_boot(host, app, rng):
    cpus = kernel_cpus(host, app.vcpus, rng)
    return guests_mod.Boot(cpus=cpus, affinity=_unpinned(host, cpus))


def _fitting(cluster, app):
    return [i for i, h in enumerate(cluster.hosts) if nova.fits(h, app)]


class Strategy:
    name = None
    loops = False
    description = ''

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)

    def place(self, guest, cluster):
        raise NotImplementedError()


class NovaDefault(Strategy):
    name = 'nova-default'
    description = ("nova's RAM and vCPU spreading weighers; no NUMA care: "
                   'the kernel scatters vCPUs, memory is first-touched')

    def choose_host(self, app, cluster):
        fitting = _fitting(cluster, app)
        if not fitting:
            return None
        hosts = [cluster.hosts[i] for i in fitting]
        return fitting[nova.best(hosts, nova.spread_weights(hosts))]

    def place(self, guest, cluster):
        index = self.choose_host(guest.app, cluster)
        if index is None:
            return None
        return Decision(index, kernel_boot(cluster.hosts[index], guest.app,
                                           self.rng))


class Random(NovaDefault):
    name = 'random'
    description = 'a random host with capacity; no NUMA care'

    def choose_host(self, app, cluster):
        fitting = _fitting(cluster, app)
        if not fitting:
            return None
        return fitting[int(self.rng.integers(len(fitting)))]


class Numad(NovaDefault):
    name = 'numad'
    description = ("nova's host choice; on the host, the least loaded "
                   'nodes with the free memory, vCPUs pinned there, '
                   'memory follows')

    def place(self, guest, cluster):
        index = self.choose_host(guest.app, cluster)
        if index is None:
            return None
        host, app = cluster.hosts[index], guest.app
        nodes = self.least_loaded(host, app)
        # numad binds vCPUs only; memory is not bound, it follows them.
        return Decision(index, node_pinned_boot(
            host, nodes, app, range(host.host.n_nodes)))

    @staticmethod
    def least_loaded(host, app):
        sim = host.host
        counts = host.cpu_counts()
        load = {n: counts[list(sim.node_cpus(n))].sum()
                for n in range(sim.n_nodes)}
        count = app.nodes_needed(sim.cpus_per_node)
        per_mb = app.memory_mb / count
        ranked = sorted(range(sim.n_nodes), key=lambda n: (
            host.free_mb(n) < per_mb, load[n], -host.free_mb(n), n))
        return ranked[:count]


class NovaVswitch(NovaDefault):
    name = 'nova-vswitch'
    description = ('every flavor hw:numa_nodes (the fewest nodes that hold '
                   'it); network-bound flavors on a NUMA-aware vSwitch '
                   "physnet affined to the NIC's node; cells strictly bound")

    def place(self, guest, cluster):
        app = guest.app
        fitting, cells = [], []
        for i in _fitting(cluster, app):
            host = cluster.hosts[i]
            required = (frozenset(n.node for n in host.host.nics)
                        if app.io_bound else frozenset())
            found = nova.fit_cells(host, app, required)
            if found is not None:
                fitting.append(i)
                cells.append(found)
        if not fitting:
            return None
        hosts = [cluster.hosts[i] for i in fitting]
        k = nova.best(hosts, nova.spread_weights(hosts))
        host = hosts[k]
        return Decision(fitting[k],
                        node_pinned_boot(host, cells[k], app, cells[k],
                                         bound=True),
                        cells=cells[k])


class Ours(NovaDefault):
    name = 'ours'
    loops = True
    description = ('the scheduler plugins (policy, NIC, load filters; NIC '
                   "and load weighers on top of nova's) on the agents' "
                   'reports; the driver extension boots the policy; the '
                   'agents run their loops')

    def choose(self, app, cluster):
        """The host the plugins pick, and the request they resolved."""
        request = scoring.make_request(app.extra_specs(), app.vcpus,
                                       app.memory_mb)
        now = cluster.now
        settings = dataclasses.replace(SETTINGS,
                                       threshold=cluster.threshold)
        fitting = _fitting(cluster, app)
        rows = []
        for i in fitting:
            summary = cluster.summary(i)
            policy, nic, load = (f(request, summary, settings, now).passed
                                 for f in FILTERS)
            rows.append((policy and nic, load))
        # The filters' own rule: load set aside when no host is quiet.
        kept, _ = scoring.keep(rows)
        passed = [i for i, keep in zip(fitting, kept) if keep]
        if not passed:
            return None, request
        hosts = [cluster.hosts[i] for i in passed]
        raw = nova.spread_weights(hosts)
        for weigh in WEIGHERS:
            raw.append(self._weights(weigh, request, cluster, passed, now,
                                     settings))
        return passed[nova.best(hosts, raw, [1.0, 1.0]
                                + list(OUR_MULTIPLIERS))], request

    @staticmethod
    def _weights(weigh, request, cluster, passed, now, settings):
        # The weigher glue: neutral for requests it does not weigh, the
        # median for hosts without a fresh report.
        if not scoring.applies(weigh, request, settings):
            return [0.0] * len(passed)
        return scoring.neutral_fill([
            None if scoring.fresh(cluster.summary(i), now, settings) is None
            else weigh(request, cluster.summary(i), settings)
            for i in passed])

    def place(self, guest, cluster):
        index, request = self.choose(guest.app, cluster)
        if index is None:
            return None
        host = cluster.hosts[index]
        snapshot = host.observe()
        # What the driver extension sees on the host: the measured load,
        # the guests already there and the operator's load threshold.
        tune = enforcement.boot_tune(
            request.policy, snapshot.topology, snapshot.usage,
            guest.app.memory_mb, vcpus=guest.app.vcpus,
            instances=snapshot.instances, threshold=cluster.threshold)
        requested = request.policy.value if request.policy else None
        return Decision(index, self.tuned_boot(host, guest.app, tune),
                        requested=requested)

    def tuned_boot(self, host, app, tune):
        """What libvirt and the kernel make of the driver's numatune."""
        if tune is None:
            return kernel_boot(host, app, self.rng)
        if tune.vcpu_pins:
            # <vcpupin>: each vCPU on the least busy CPU of its own set.
            cpus = pinned_cpu_sets(host, tune.vcpu_pins)
            affinity = tuple(tune.vcpu_pins)
        else:
            cpus = kernel_cpus(host, app.vcpus, self.rng, tune.cpus or None)
            affinity = tuple(tune.cpus or frozenset(range(host.host.n_cpus))
                             for _ in cpus)
        mode = {backend.MODE_INTERLEAVE: st.INTERLEAVE,
                backend.MODE_STRICT: st.HOME}.get(tune.mode,
                                                  st.FIRST_TOUCH)
        # preferred (first-touch near the NIC) may spill anywhere;
        # restrictive first-touches within its nodes.
        nodes = (frozenset() if tune.mode == backend.MODE_PREFERRED
                 else tune.nodes)
        return guests_mod.Boot(
            cpus=cpus, affinity=affinity, mode=mode, nodes=frozenset(nodes),
            kernel_balanced=locality.kernel_balances_memory(tune.mode))


STRATEGIES = {cls.name: cls for cls in (Ours, NovaDefault, NovaVswitch,
                                        Numad, Random)}
