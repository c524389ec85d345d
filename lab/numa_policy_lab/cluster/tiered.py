"""A tiered cluster: nova stock, the kernel's tiering alone, and ours.

SIMULATED: every number this module gives comes from the simulator's
model (sim/model.py) with the CXL figures of sim/constants.py; none was
measured.

The scenario ``tiered-cluster``: a stream of one-vCPU guests of four
flavors arriving, in an order the seed draws, over :data:`N_HOSTS`
hosts with a CXL memory expander (``topology.xeon2_cxl``: 24 GiB of
DRAM, the top tier, and 48 GiB below it). The flavors are those of
sim/tiers.py's two classes, with what each asks of the tiers
(``hw:numa_memory_tiers``, doc/source/policy.rst "Memory tiers"):
latency-bound key-value stores asking ``top`` or ``tiered`` 75 %,
streaming batch guests asking ``tiered`` 25 %, and batch guests whose
flavor names no tier key (``any``). Together their memory fits the
cluster, both tiers counted, and their working sets exceed its DRAM.

Three strategies, each a whole story from scheduler to pages:

* ``nova stock``: nova without this extension. Its RAM and vCPU
  filters and spreading weighers count a host's memory as one, both
  tiers; first-touch puts each guest's pages on the DRAM while it has
  room, in arrival order, the rest on the expander, hot and cold alike;
  nothing demotes or promotes (sim/tiers.py's ``nova stock``).
* ``kernel tiering``: the same scheduling, and the kernel's tiering on:
  the flavors' tier keys mean nothing to anyone, so every guest is
  ``any`` and reclaim demotes the coldest pages of whoever owns them
  (sim/tiers.py's ``any``).
* ``ours``: nova's filters and weighers with our scheduler plugins'
  pure scoring (nova_numa_policy/scheduling/scoring.py) on each host's
  report: the policy filter refuses a host whose top tier has not a
  ``top`` guest's memory or a ``tiered`` guest's share free, the load
  filter's fit wants the rest of a ``tiered`` guest free on the lower
  tier (or that much more on the top one), and the load weigher
  prefers, for a ``tiered`` guest, a host whose lower tier has room for
  its rest. On the host, a ``top`` guest's
  pages all stay on the DRAM and a ``tiered`` guest's floor does (the
  agent moves back up what the kernel demotes of them); everything
  above those, and every ``any`` guest's memory, is the kernel's to
  demote, coldest first, whoever owns it (nova_numa_policy/decisions/
  tiering.py: where the kernel tiers, the agent holds the floor alone).

One more row, a what-if and no strategy of this extension: ``ours,
demotable pages free``, ours with the scheduler counting as free the
DRAM that every page above the floors holds, hot ones and ``any``
guests' too, as far as the expanders have room for them.

``ours`` is the scheduler of report 1.9: it counts as free, on the
DRAM, the cold pages of ``tiered`` guests above their floors, as far as
the expander's free memory holds them (NumaNodeReport.demotable_mb: the
agent's tiering loop reports per DRAM node the MB of ``tiered`` guests'
pages above their shares that were not written over the last period,
and the scheduler counts them as top-tier room, capped by the lower
tier's free memory; doc/source/scheduler.rst, "Memory tiers"). Here the
signal is exact: a page is cold when the model's cold segment holds it;
a signal that took pages only read for cold would count more. A hot
page is never room, nor an ``any`` guest's page (its writes are not
measured). ``ours, measured free only (report 1.8)`` is the scheduler
before: top-tier memory free as the agent measured it.

The placements are static, as they stand once settled, as in
sim/tiers.py, whose functions place each host's pages and whose model
costs them: no period, no page move and no cost of one. The scheduler
reads each host as its agent would report it then: the free memory of
each node, the settled pages counted (a page the kernel could demote
is not free), and each node's CPUs busy where a guest's vCPU runs.
Each vCPU runs on an idle CPU of its host, one the seed draws, as the
kernel picks one.

Why a ``simulate`` subcommand of its own rather than a scenario of
``simulate cluster``: that study runs hosts period by period on
``SimulatedBackend``, which refuses a host with a lower tier (its
signals, the kernel's balancing and the loops know CPU nodes only), and
reports throughput against a best static placement and a bound that
know CPU nodes only. This study's hosts are sim/tiers.py's static ones,
and what it reports (DRAM, guests refused, slowdown per flavor) is
what that module reports, over a cluster.
"""

import dataclasses

import numpy as np

from nova_numa_policy.contracts import tiers as tier_contract
from nova_numa_policy.scheduling import scoring
from nova_numa_policy.scheduling import summary as summary_mod
from numa_policy_lab.cluster import hosts as hosts_mod
from numa_policy_lab.cluster import nova
from numa_policy_lab.cluster import strategies
from numa_policy_lab.sim import tiers
from numa_policy_lab.sim import topology

N_HOSTS = 4
GUESTS_PER_FLAVOR = 8  # 32 guests: every CPU of the 4 hosts
MB_PER_GIB = 1024.0

STOCK, KERNEL, OURS = 'nova stock', 'kernel tiering', 'ours'
DEMOTABLE_FREE = 'ours, demotable pages free (what-if)'
MEASURED_FREE = 'ours, measured free only (report 1.8)'


@dataclasses.dataclass(frozen=True)
class Flavor:
    """A flavor of the stream: a sim/tiers.py class and its tier keys."""

    name: str
    klass: str  # a key of tiers.CLASSES: the profile and memory
    extra_specs: dict = dataclasses.field(default_factory=dict)


def _tiered(percent):
    return {tier_contract.MEMORY_TIERS_KEY: 'tiered',
            tier_contract.TOP_TIER_PERCENT_KEY: str(percent)}


FLAVORS = (
    Flavor('latency, top', tiers.LATENCY,
           {tier_contract.MEMORY_TIERS_KEY: 'top'}),
    Flavor('latency, tiered 75 %', tiers.LATENCY, _tiered(75)),
    # Below the class's hot share (45 %): the operator trades some of
    # its speed for DRAM, which is what a low share is for.
    Flavor('batch, tiered 25 %', tiers.BATCH, _tiered(25)),
    # No tier key: the cloud's ordinary flavor, the kernel's to tier.
    Flavor('batch, any', tiers.BATCH),
)


@dataclasses.dataclass
class Guest(tiers.Guest):
    """An arrival: sim/tiers.py's guest, its flavor's request resolved.

    ``klass`` is the flavor's name, so that figures come per flavor;
    ``cpu`` is None until a host takes it.
    """

    request: scoring.Request | None = None


def arrival(flavor, name):
    """A guest of ``flavor``, not yet placed."""
    profile, memory_mb = tiers.CLASSES[flavor.klass]
    return Guest(name, flavor.name, profile, memory_mb, None,
                 request=scoring.make_request(flavor.extra_specs, 1,
                                              memory_mb))


def stream(seed):
    """The arrivals, in the order ``seed`` draws."""
    rng = np.random.default_rng(seed)
    flavors = [f for f in FLAVORS for _ in range(GUESTS_PER_FLAVOR)]
    return [arrival(flavors[i], f'{flavors[i].klass}-{k}')
            for k, i in enumerate(rng.permutation(len(flavors)))]


@dataclasses.dataclass
class Host:
    """One CXL host of the cluster and its guests, in arrival order."""

    name: str
    sim: topology.SimHost
    guests: list = dataclasses.field(default_factory=list)

    @property
    def dram_mb(self):
        return self.sim.memory_mb_by_node()[:self.sim.n_nodes].sum()

    def free_cpus(self):
        taken = {g.cpu for g in self.guests}
        return [c for c in range(self.sim.n_cpus) if c not in taken]

    def claimed_mb(self):
        return sum(g.memory_mb for g in self.guests)


# Where each strategy's pages go on one host: per guest, in arrival
# order, MB of each segment on the lower tier.

def first_touch_parts(host):
    """Nova stock: first-touch in arrival order, nothing moves after."""
    return tiers.first_touch(host.guests, host.dram_mb)


def _above(host, floors):
    """Per guest, its coldest pages beyond ``floors`` (tiers.demoted)."""
    return [tiers.demoted(g.sizes, g.memory_mb - floor)
            for g, floor in zip(host.guests, floors)]


def reclaim_parts(host, floors):
    """The kernel's reclaim over every page above each guest's floor.

    ``floors``: per guest, MB the DRAM keeps of it whatever reclaim
    does; above it, its coldest pages are reclaim's to take, with every
    other guest's, coldest first, as far as the DRAM the floors leave
    cannot hold them.
    """
    above = _above(host, floors)
    held = sum(g.memory_mb - part.sum()
               for g, part in zip(host.guests, above))
    return tiers.reclaim(above, host.dram_mb - held)


def _floors(host):
    """Per guest, the scheduler's ``Request.top_tier_mb``.

    All of a ``top`` guest, the share of a ``tiered`` one, nothing of
    an ``any`` one.
    """
    return [g.request.top_tier_mb for g in host.guests]


def kernel_parts(host):
    """The kernel's tiering alone: no guest has a floor."""
    return reclaim_parts(host, [0] * len(host.guests))


def held_parts(host):
    """Ours: a ``top`` guest's memory and a ``tiered`` one's share held."""
    return reclaim_parts(host, _floors(host))


def vacated_parts(host):
    """The what-if's view: every page above the floors demoted.

    As far as the expander holds them; what it cannot hold stays on the
    DRAM, the hottest pages. Where the pages would be if the DRAM they
    hold above the floors counted free.
    """
    above = _above(host, _floors(host))
    room = host.sim.memory_mb_by_node()[host.sim.tier_node]
    return tiers.reclaim(above, max(0.0, sum(a.sum() for a in above) - room))


def _cold_only(parts):
    """Of a guest's segments, the cold one (the last); the hot ones 0."""
    cold = np.zeros_like(parts)
    cold[-1] = parts[-1]
    return cold


def cold_vacated_parts(host):
    """The view of ``ours``: report 1.9's demotable memory counted free.

    Where ours settles the pages (:func:`held_parts`), and further down
    every cold page of a ``tiered`` guest above its floor the DRAM still
    holds, as far as the expander has room for them: every such guest's
    in proportion, its cold pages being equally cold (workload.py). A
    hot page stays where ours puts it: a working set's page is no room
    for a guest, whatever the kernel could demote; nor is an ``any`` or
    ``top`` guest's page (the agent measures the writes of ``tiered``
    guests only). Ours' reclaim takes the cold pages above the floors
    first, so where it took a hot one every cold one is down already
    and the view is ours' placement.
    """
    cold = [_cold_only(a) if g.request.lower_tier_mb else np.zeros_like(a)
            for g, a in zip(host.guests, _above(host, _floors(host)))]
    room = host.sim.memory_mb_by_node()[host.sim.tier_node]
    vacated = tiers.reclaim(cold, max(0.0, sum(c.sum() for c in cold) - room))
    return [np.maximum(held, down)
            for held, down in zip(held_parts(host), vacated)]


def settle(host, parts):
    """Boot the host's guests with their pages where ``parts`` says."""
    lower = parts(host)
    tiers.boot_each(host.sim, host.guests,
                    {g.name: x for g, x in zip(host.guests, lower)})


# The scheduler: nova's own view, and ours on the hosts' reports.

def nova_fits(host, guest):
    """RAM and vCPU capacity, both tiers counted as one memory."""
    sim = host.sim
    return (len(host.guests) + 1 <= sim.n_cpus
            and host.claimed_mb() + guest.memory_mb
            <= sim.memory_mb_by_node().sum())


def nova_weights(hosts):
    """RAMWeigher and CPUWeigher raw values: free RAM, free vCPUs."""
    return [[h.sim.memory_mb_by_node().sum() - h.claimed_mb()
             for h in hosts],
            [h.sim.n_cpus - len(h.guests) for h in hosts]]


def nova_host(guest, hosts):
    """The index of the host nova picks, or None when none fits."""
    fitting = [i for i, h in enumerate(hosts) if nova_fits(h, guest)]
    if not fitting:
        return None
    chosen = [hosts[i] for i in fitting]
    return fitting[nova.best(chosen, nova_weights(chosen))]


def _report_node(sim, node, free_mb, busy):
    """A node of the agent's report, as the scheduler's check reads it."""
    total = sim.memory_mb_by_node()[node]
    cpus = list(sim.node_cpus(node)) if node < sim.n_nodes else []
    return {'id': node, 'floating_cpus': cpus,
            'floating_load': (busy[node] / len(cpus)) if cpus else None,
            # Rounded: a page's float dust must not refuse a guest.
            'memory_free_mb': int(round(max(0.0, free_mb))),
            'memory_total_mb': int(total),
            'memory_tier': 0 if node < sim.n_nodes else 1}


def summary(host, view=held_parts):
    """What the scheduler holds of ``host`` under ours, once settled.

    Every node's free memory with the pages where ``view`` puts them
    (:func:`held_parts`: where ours settles them, a page the kernel
    could demote not free, as the agent measures it), and each CPU
    node's load: its CPUs a guest's vCPU runs on, each busy.
    """
    sim = host.sim
    settle(host, view)
    used = np.zeros(sim.memory_nodes)
    for g in host.guests:
        used += g.vm.seg_mb.sum(axis=0)
    free = sim.memory_mb_by_node() - used
    busy = np.bincount([sim.node_of_cpu(g.cpu) for g in host.guests],
                       minlength=sim.n_nodes)
    data = {'host': host.name, 'hypervisor_hostname': host.name,
            'generated_at': hosts_mod.EPOCH, 'seq': 1, 'boot_id': None,
            'numa_nodes': [_report_node(sim, n, free[n], busy)
                           for n in range(sim.memory_nodes)],
            'nics': [], 'instances': [], 'enforceable_policies': [],
            'locality_signal': None, 'measurements': []}
    return summary_mod.summarize(data, hosts_mod.IO_INTENSIVE_RATE)


def _load_weights(request, summaries):
    """The node-load weigher's raw values; zeros where it weighs nothing."""
    raw = [scoring.load_weight(request, s, strategies.SETTINGS)
           for s in summaries]
    return [0.0] * len(raw) if None in raw else raw


def our_host(guest, hosts, view=held_parts):
    """The index of the host nova with our plugins picks, or None.

    ``view``: where the hosts' reports see the pages (:func:`summary`).
    """
    fitting = [i for i, h in enumerate(hosts) if nova_fits(h, guest)]
    summaries = [summary(hosts[i], view) for i in fitting]
    request, settings = guest.request, strategies.SETTINGS
    rows = [(scoring.policy_check(request, s, settings).passed,
             scoring.load_check(request, s, settings).passed)
            for s in summaries]
    # The filters' own rule: load set aside when no host is quiet.
    kept, _ = scoring.keep(rows)
    passed = [k for k, keep in enumerate(kept) if keep]
    if not passed:
        return None
    chosen = [hosts[fitting[k]] for k in passed]
    raw = nova_weights(chosen) + [
        _load_weights(request, [summaries[k] for k in passed])]
    return fitting[passed[nova.best(chosen, raw)]]


def _demotable_free_host(guest, hosts):
    """The what-if: ours on reports that count demotable DRAM free."""
    return our_host(guest, hosts, vacated_parts)


def _cold_free_host(guest, hosts):
    """Ours: reports that count tiered guests' cold DRAM above floors free."""
    return our_host(guest, hosts, cold_vacated_parts)


@dataclasses.dataclass(frozen=True)
class Strategy:
    """Who picks the host, and where the pages go on it."""

    name: str
    choose: object  # (guest, hosts) -> host index or None
    parts: object  # host -> per guest, MB of each segment below

    @property
    def holds_floors(self):
        return self.parts is held_parts


STRATEGIES = {s.name: s for s in (
    Strategy(STOCK, nova_host, first_touch_parts),
    Strategy(KERNEL, nova_host, kernel_parts),
    Strategy(OURS, _cold_free_host, held_parts),
    Strategy(MEASURED_FREE, our_host, held_parts),
    Strategy(DEMOTABLE_FREE, _demotable_free_host, held_parts),
)}


def run(strategy, seed=0, n_hosts=N_HOSTS, guests=None):
    """The stream of ``seed`` (or ``guests``) placed by ``strategy``.

    Returns the hosts, each guest booted and its throughput set, and
    the guests no host took. ``seed`` also draws each vCPU's CPU.
    """
    strategy = STRATEGIES[strategy]
    guests = stream(seed) if guests is None else guests
    rng = np.random.default_rng(seed)
    hosts = [Host(f'cxl-{i}', topology.xeon2_cxl()) for i in range(n_hosts)]
    refused = []
    for guest in guests:
        index = strategy.choose(guest, hosts)
        if index is None:
            refused.append(guest)
            continue
        host = hosts[index]
        free = host.free_cpus()
        guest.cpu = int(free[int(rng.integers(len(free)))])
        host.guests.append(guest)
    for host in hosts:
        settle(host, strategy.parts)
        tiers.measure(host.sim, host.guests)
    return hosts, refused


@dataclasses.dataclass(frozen=True)
class Row:
    """One strategy over the seeds; every number simulated."""

    strategy: str
    guests: int  # arrivals per seed
    placed: dict  # flavor -> guests placed, mean over seeds
    slowdown: dict  # flavor -> 1 - throughput, mean over placed guests
    worst: dict  # flavor -> the largest slowdown of a placed guest
    hot_below: dict  # flavor -> share of a placed guest's hot pages below
    dram_gib: float  # the cluster's DRAM holding guests' pages
    floors_gib: float  # of it, what ours holds: top guests, floors
    lower_gib: float  # the expanders' memory holding guests' pages
    tput: float  # mean throughput of every arrival, a refused one 0


def _mean(values):
    return float(np.mean(values)) if values else float('nan')


def _hot_below(host, guest):
    """The share of ``guest``'s hot pages on its host's expander."""
    hot = guest.vm.seg_mb[:-1]
    return hot[:, host.sim.tier_node].sum() / hot.sum()


def _memory_gib(hosts, strategy):
    """DRAM, floors and lower tier holding guests' pages, in GiB."""
    dram = floors = lower = 0.0
    for host in hosts:
        for g in host.guests:
            below = g.vm.seg_mb[:, host.sim.tier_node].sum()
            lower += below
            dram += g.memory_mb - below
            if STRATEGIES[strategy].holds_floors:
                floors += g.request.top_tier_mb
    return dram / MB_PER_GIB, floors / MB_PER_GIB, lower / MB_PER_GIB


def row(strategy, seeds=range(10)):
    """``strategy`` over the streams of ``seeds``, as one :class:`Row`."""
    names = [f.name for f in FLAVORS]
    placed = {k: [] for k in names}
    slowdown = {k: [] for k in names}
    hot_below = {k: [] for k in names}
    memory, tput, arrivals = [], [], 0
    for seed in seeds:
        hosts, refused = run(strategy, seed)
        running = [g for h in hosts for g in h.guests]
        host_of = {g.name: h for h in hosts for g in h.guests}
        for k in names:
            mine = [g for g in running if g.klass == k]
            placed[k].append(len(mine))
            slowdown[k] += [1.0 - g.throughput for g in mine]
            hot_below[k] += [_hot_below(host_of[g.name], g) for g in mine]
        memory.append(_memory_gib(hosts, strategy))
        arrivals = len(running) + len(refused)
        tput.append(sum(g.throughput for g in running) / arrivals)
    dram, floors, lower = (float(np.mean(m)) for m in zip(*memory))
    return Row(strategy, arrivals, {k: _mean(v) for k, v in placed.items()},
               {k: _mean(v) for k, v in slowdown.items()},
               {k: max(v) if v else float('nan')
                for k, v in slowdown.items()},
               {k: _mean(v) for k, v in hot_below.items()},
               dram, floors, lower, _mean(tput))


def rows(seeds=range(10)):
    """A :class:`Row` per strategy, in :data:`STRATEGIES`' order."""
    return [row(name, seeds) for name in STRATEGIES]


def _percent(value):
    return '-' if np.isnan(value) else f'{100 * value:.1f} %'


def cluster_table(rows):
    """Per strategy: guests placed, memory by tier, throughput."""
    head = ('Numbers', 'Strategy', 'Placed', 'DRAM in use', 'Of it floors',
            'Expanders in use', 'Cluster tput')
    body = [('simulated', r.strategy,
             f'{sum(r.placed.values()):.1f} of {r.guests}',
             f'{r.dram_gib:.1f} GiB', f'{r.floors_gib:.1f} GiB',
             f'{r.lower_gib:.1f} GiB', f'{r.tput:.3f}') for r in rows]
    return tiers.rst_grid(head, body)


def flavor_table(rows):
    """Per strategy and flavor: placed, hot pages below, slowdown."""
    head = ('Numbers', 'Strategy', 'Flavor', 'Placed', 'Hot pages below',
            'Slowdown mean', 'Slowdown worst')
    body = [('simulated', r.strategy, k,
             f'{r.placed[k]:.1f} of {GUESTS_PER_FLAVOR}',
             _percent(r.hot_below[k]), _percent(r.slowdown[k]),
             _percent(r.worst[k]))
            for r in rows for k in r.placed]
    return tiers.rst_grid(head, body)
