"""A lower memory tier: what each ``hw:numa_memory_tiers`` mode costs.

The scenario ``tiers``: guests whose memory, and together whose working
sets, exceed the top tier (the CPU nodes' DRAM) of a host with a CXL
memory expander (``topology.xeon2_cxl``). Each mode of
doc/source/policy.rst ("Memory tiers") decides how much of each guest's
memory lives on each tier; the performance model (model.py) says what
that costs. The placements are static, as they stand once settled: no
period, no loop, no page move and no cost of moving one is simulated.

* ``top``: every page on the top tier. A guest whose memory does not fit
  the top tier's free memory is refused, as the scheduler's policy filter
  refuses such a host: it waits, or goes elsewhere, and does no work on
  this host (it counts 0 in the host's throughput).
* ``tiered`` N: the host packed to each guest's floor, N % of its memory
  on the top tier (what the filter reserves there) and the rest on the
  lower tier, its cold pages first, then hot pages where N % is less
  than its hot share. Refused where either tier cannot hold its part.
* ``any``: the kernel's way. Every guest that fits the host's memory is
  placed; with the top tier full, reclaim demotes the coldest pages,
  whoever owns them and whatever each guest asked for: cold pages of
  every guest in proportion to their size, then hot pages likewise.

Two more kinds of row, for comparison, neither a value of the spec:

* ``nova stock``: nova without this extension, blind to tiers, and no
  kernel tiering (no demotion, no promotion). Nova admits a guest while
  the host's memory, both tiers counted as one, holds it, as for
  ``any``; first-touch then puts each guest's pages, in arrival order,
  on the top tier while it has room (its own node first, as
  :func:`fill_top`) and the rest on the lower tier, hot and cold pages
  alike in proportion to the segments' sizes: nothing ever moves them,
  and nobody knows which pages are hot.
* ``tiered`` N with a write signal (:attr:`Mode.unwritten` > 0): the
  agent's tiering loop (nova_numa_policy/decisions/tiering.py) knows a
  page is hot only if the guest wrote it over the last period (soft-dirty
  bits: Debian 12's kernel 6.1 builds no idle page tracking, no DAMON).
  A share ``unwritten`` of each hot segment's pages is only read, so
  looks cold to it: the pages going down come first from the cold pages
  and those unwritten hot pages alike, in proportion, and only then from
  the written hot pages (:func:`demoted`). ``unwritten`` = 0 is the
  plain ``tiered`` row. The shares are sensitivity assumptions of this
  scenario, not figures from any source; and the kernel's own promotion
  (``kernel.numa_balancing``'s tiering bit), where on, would bring
  read-hot pages back up, which these static placements do not simulate.

Within a guest, pages of one segment are equally hot (workload.py):
cold pages take no accesses, hot segments go down in proportion to
their sizes. Every number this gives is simulated with the figures of
``constants.py`` (Pond, TPP, Sun et al.), none measured.
"""

import dataclasses

import numpy as np

from numa_policy_lab.sim import model
from numa_policy_lab.sim import state as st
from numa_policy_lab.sim import topology
from numa_policy_lab.sim import workload as wl

TOP, TIERED, ANY, STOCK = 'top', 'tiered', 'any', 'nova stock'

LATENCY, BATCH = 'latency', 'batch'

# The guest classes, one vCPU each, memory in MB. Their cold shares
# (memory less the hot segments, over memory: 62 % and 56 %) lie in the
# 55-80 % of allocated memory TPP (Maruf et al., ASPLOS '23) found idle
# in Meta's fleet; the working sets are the scenario's choice, large
# enough that together they exceed the top tier.
# * latency: a memory-bound key-value store (memcached's profile, the
#   class of the Redis Sun et al. (MICRO '23) ran on CXL memory);
# * batch: a guest streaming its private data (seed 000 "low" class).
CLASSES = {
    LATENCY: (dataclasses.replace(wl.PROFILES['memcached'],
                                  name='kv-store', working_set_mb=3072.0),
              8192),
    BATCH: (dataclasses.replace(wl.PROFILES['private-stream'],
                                name='batch-stream', working_set_mb=3584.0),
            8192),
}
GUESTS_PER_CLASS = 4


@dataclasses.dataclass(frozen=True)
class Mode:
    """One value of ``hw:numa_memory_tiers``, with its top-tier percent.

    Or ``nova stock``, the tier-blind baseline. ``unwritten``: for
    ``tiered``, the share of each hot segment's pages the guest only
    reads, which the agent's write signal takes for cold (0: it sees
    exactly which pages are hot).
    """

    name: str
    top_percent: int | None = None
    unwritten: float = 0.0

    def __post_init__(self):
        if not 0.0 <= self.unwritten <= 1.0:
            raise ValueError(f'unwritten ({self.unwritten}) is a share, '
                             f'between 0 and 1')
        if self.unwritten and self.name != TIERED:
            raise ValueError('only a tiered guest has a write signal')

    @property
    def label(self):
        label = (f'{self.name} {self.top_percent} %' if self.top_percent
                 else self.name)
        if self.unwritten:
            label += f', {100 * self.unwritten:g} % of hot pages unwritten'
        return label


# The table's rows: the tier-blind baseline, the spec's values, then the
# write signal's sensitivity (assumed shares of hot pages only read).
MODES = (Mode(STOCK), Mode(TOP), Mode(TIERED, 75), Mode(TIERED, 50),
         Mode(TIERED, 25), Mode(ANY), Mode(TIERED, 50, unwritten=0.25),
         Mode(TIERED, 50, unwritten=0.5))


@dataclasses.dataclass
class Guest:
    """A guest of the scenario; ``vm`` is None while it is refused."""

    name: str
    klass: str
    profile: wl.Profile
    memory_mb: int
    cpu: int
    vm: st.SimVm | None = None
    throughput: float = 0.0

    @property
    def sizes(self):
        """MB of each segment (state.segment_sizes); the last is cold."""
        return st.segment_sizes(self.profile, 1, self.memory_mb)


def lower_tier_split(sizes, cold_fraction, hot_fraction):
    """MB of each segment on the lower tier: those shares of its pages."""
    lower = np.asarray(sizes, float) * hot_fraction
    lower[-1] = sizes[-1] * cold_fraction
    return lower


def looks_cold(sizes, unwritten):
    """MB of each segment a write signal takes for cold; the rest written.

    The cold segment, and ``unwritten`` of each hot one: pages the guest
    only read over the period, which soft-dirty bits cannot tell from
    pages nobody touched.
    """
    cold = np.asarray(sizes, float) * unwritten
    cold[-1] = sizes[-1]
    return cold


def demoted(sizes, mb, unwritten=0.0):
    """``mb`` MB of a guest's segments to the lower tier, cold first.

    What looks cold goes first (:func:`looks_cold`: with ``unwritten``
    0, the cold pages only), every segment's share of it in proportion;
    the rest is taken from the hot pages left, in proportion to their
    sizes (a tierer that weighed each segment's accesses per MB would
    take the coolest first: this is not one).
    """
    cold = looks_cold(sizes, unwritten)
    written = np.asarray(sizes, float) - cold
    first, rest = cold.sum(), written.sum()
    mb = min(float(mb), first + rest)
    return (cold * (min(1.0, mb / first) if first else 0.0)
            + written * (max(0.0, mb - first) / rest if rest else 0.0))


def blind_demotion(guests, top_mb):
    """Per guest, the MB the kernel's reclaim demotes to fit ``top_mb``.

    Reclaim sees pages, not guests: the cold ones first, every guest's
    in proportion to its cold pages, then the hot ones likewise.
    """
    return reclaim([g.sizes for g in guests], top_mb)


def reclaim(sizes, top_mb):
    """:func:`blind_demotion` of any pages: MB of each segment to go down.

    ``sizes``: per owner, MB of each segment reclaim may demote (the
    last the cold one), whether a whole guest or its pages above a
    floor (cluster/tiered.py); ``top_mb``: what the top tier holds of
    them.
    """
    cold = sum(s[-1] for s in sizes)
    hot = sum(s[:-1].sum() for s in sizes)
    excess = max(0.0, sum(s.sum() for s in sizes) - top_mb)
    cold_fraction = min(1.0, excess / cold) if cold else 0.0
    hot_fraction = min(1.0, max(0.0, excess - cold) / hot) if hot else 0.0
    return [lower_tier_split(s, cold_fraction, hot_fraction)
            for s in sizes]


def first_touch(guests, top_mb):
    """Per guest, in arrival order, the MB of each segment on the lower tier.

    Nobody tiers (nova stock): each guest's pages go to the top tier
    while its ``top_mb`` has room, the rest to the lower tier, every
    segment in proportion to its size, since first-touch does not know
    which pages will be hot.
    """
    lower = []
    for g in guests:
        on_top = min(float(g.memory_mb), max(0.0, top_mb))
        top_mb -= on_top
        share = (g.memory_mb - on_top) / g.memory_mb if g.memory_mb else 0.0
        lower.append(lower_tier_split(g.sizes, share, share))
    return lower


def fill_top(host, free, home, mb):
    """MB per CPU node for ``mb`` of a guest whose vCPU is on ``home``.

    First-touch: its own node while it has room, then the nearest other
    nodes (fewest hops, lowest number first). ``free`` (MB per memory
    node) is updated. The caller has checked the top tier holds ``mb``.
    """
    hops = host.hop_matrix()[home]
    placed = np.zeros(host.n_nodes)
    for node in sorted(range(host.n_nodes), key=lambda n: (hops[n], n)):
        take = min(mb - placed.sum(), free[node])
        placed[node] = take
        free[node] -= take
    return placed


def segments(host, sizes, top_by_node, lower):
    """The placement matrix (segments x memory nodes) of one guest.

    ``lower``: MB of each segment on the lower tier; the rest of every
    segment is spread over the CPU nodes as ``top_by_node`` is: pages
    first-touched on a node are of every segment alike.
    """
    seg = np.zeros((len(sizes), host.memory_nodes))
    top = sizes - lower
    if top_by_node.sum() > 0:
        seg[:, :host.n_nodes] = np.outer(
            top, top_by_node / top_by_node.sum())
    if host.tier_node is not None:
        seg[:, host.tier_node] = lower
    return seg


def boot(host, guest, seg):
    """``guest`` running with its memory placed as ``seg`` says."""
    guest.vm = st.SimVm(uuid=guest.name, profile=guest.profile,
                        memory_mb=guest.memory_mb,
                        vcpu_cpus=np.array([guest.cpu]),
                        vcpu_affinity=[frozenset({guest.cpu})], seg_mb=seg,
                        nodeset=frozenset(range(host.memory_nodes)))


def admitted_by_memory(guests, room):
    """The guests, in arrival order, that ``room`` MB holds, both tiers.

    Nova's view when it counts a host's memory as one: a guest is placed
    while the host's free memory holds it, whichever tier that is on.
    """
    admitted = []
    for g in guests:
        if g.memory_mb <= room:
            room -= g.memory_mb
            admitted.append(g)
    return admitted


def _lower_parts(host, mode, guests, free):
    """Per guest admitted, MB of each segment on the lower tier.

    In arrival order; a guest the mode refuses is left out.
    """
    top_mb = free[:host.n_nodes].sum()
    if mode.name in (ANY, STOCK):
        # Nova counts the host's memory, both tiers; the kernel's reclaim
        # (any) or first-touch alone (stock) splits it.
        admitted = admitted_by_memory(guests, free.sum())
        split = blind_demotion if mode.name == ANY else first_touch
        return {g.name: lower for g, lower in zip(
            admitted, split(admitted, top_mb))}
    top_free, lower_free = top_mb, free[host.n_nodes:].sum()
    parts = {}
    for g in guests:
        need_top = g.memory_mb * (mode.top_percent or 100) / 100.0
        lower = demoted(g.sizes, g.memory_mb - need_top, mode.unwritten)
        if need_top > top_free or lower.sum() > lower_free:
            continue  # refused: the policy filter finds no room
        top_free -= need_top
        lower_free -= lower.sum()
        parts[g.name] = lower
    return parts


def place(host, mode, guests):
    """Boot each of ``guests`` (in arrival order) that ``mode`` admits."""
    return boot_each(host, guests, _lower_parts(
        host, mode, guests, host.memory_mb_by_node()))


def boot_each(host, guests, parts):
    """Boot each of ``guests`` that ``parts`` names, in arrival order.

    ``parts``: guest name -> MB of each segment on the lower tier; the
    rest first-touched on the top tier (:func:`fill_top`). A guest
    ``parts`` leaves out is not running.
    """
    free = host.memory_mb_by_node()
    for g in guests:
        g.vm, g.throughput = None, 0.0
        if g.name not in parts:
            continue
        lower = parts[g.name]
        home = host.node_of_cpu(g.cpu)
        top_by_node = fill_top(host, free, home, g.memory_mb - lower.sum())
        boot(host, g, segments(host, g.sizes, top_by_node, lower))
    return guests


def build(seed, host=None):
    """The scenario's guests: CPUs and arrival order drawn from ``seed``.

    As in the other scenarios, the seed decides where the host's
    scheduler put each vCPU (one guest per CPU) and, here, the order in
    which the guests arrived (who finds the top tier full).
    """
    host = host or topology.xeon2_cxl()
    rng = np.random.default_rng(seed)
    classes = [k for k in CLASSES for _ in range(GUESTS_PER_CLASS)]
    cpus = rng.permutation(host.n_cpus)[:len(classes)]
    guests = [Guest(f'{k}-{i % GUESTS_PER_CLASS}', k, CLASSES[k][0],
                    CLASSES[k][1], int(cpu))
              for i, (k, cpu) in enumerate(zip(classes, cpus))]
    return host, [guests[i] for i in rng.permutation(len(guests))]


def run(mode, seed=0):
    """Every guest of the scenario under ``mode``, its throughput set."""
    host, guests = build(seed)
    place(host, mode, guests)
    measure(host, guests)
    return host, guests


def measure(host, guests):
    """Set the throughput of every running guest of ``host`` (model.py)."""
    booted = [g for g in guests if g.vm is not None]
    if not booted:
        return
    result = model.evaluate(host, [g.vm for g in booted])
    for g, tput in zip(booted, result.vm_throughput):
        g.throughput = float(tput)


@dataclasses.dataclass(frozen=True)
class Row:
    """One mode over the seeds; every number simulated."""

    mode: str
    served: dict  # class -> guests placed, mean over seeds
    slowdown: dict  # class -> 1 - throughput, mean over placed guests
    dram_saved: float  # placed guests' memory on the lower tier, share
    dram_used: float  # the top tier's memory holding guests, share
    host_tput: float  # mean throughput of every guest, refused ones 0


def _mean(values):
    return float(np.mean(values)) if values else float('nan')


def row(mode, seeds=range(10)):
    served = {k: [] for k in CLASSES}
    slowdown = {k: [] for k in CLASSES}
    saved, used, tput = [], [], []
    for seed in seeds:
        host, guests = run(mode, seed)
        placed = [g for g in guests if g.vm is not None]
        for k in CLASSES:
            mine = [g for g in placed if g.klass == k]
            served[k].append(len(mine))
            slowdown[k] += [1.0 - g.throughput for g in mine]
        memory = sum(g.memory_mb for g in placed)
        lower = sum(g.vm.seg_mb[:, host.tier_node].sum() for g in placed)
        saved.append(lower / memory if memory else 0.0)
        used.append((memory - lower)
                    / host.memory_mb_by_node()[:host.n_nodes].sum())
        tput.append(np.mean([g.throughput for g in guests]))
    return Row(mode.label, {k: _mean(v) for k, v in served.items()},
               {k: _mean(v) for k, v in slowdown.items()}, _mean(saved),
               _mean(used), _mean(tput))


def rows(seeds=range(10), modes=MODES):
    return [row(mode, seeds) for mode in modes]


def _percent(value):
    return '-' if np.isnan(value) else f'{100 * value:.1f} %'


def rst_table(rows):
    """The rows as the reStructuredText table of doc/source/results.rst."""
    head = ('Numbers', 'Mode', 'Served (latency, batch)', 'Slowdown latency',
            'Slowdown batch', 'DRAM saved', 'DRAM in use', 'Host tput')
    body = [('simulated', r.mode,
             f'{r.served[LATENCY]:.1f}, {r.served[BATCH]:.1f}',
             _percent(r.slowdown[LATENCY]), _percent(r.slowdown[BATCH]),
             _percent(r.dram_saved), _percent(r.dram_used),
             f'{r.host_tput:.3f}') for r in rows]
    return rst_grid(head, body)


def rst_grid(head, body):
    """A reStructuredText simple table of ``head`` and ``body``'s rows."""
    widths = [max(len(r[i]) for r in body + [head]) for i in range(len(head))]
    rule = '  '.join('=' * w for w in widths)

    def line(values):
        return '  '.join(v.ljust(w) for v, w in zip(values, widths)).rstrip()
    return '\n'.join([rule, line(head), rule] + [line(r) for r in body]
                     + [rule])
