"""What a simulated host measures of locality, and what its kernel moves.

A simulated host gives one of these signals, as real hosts do:

* perfect counters (``access-counters``): every access of the period
  counted per node, with 1 % noise. No Linux/KVM host gives this; runs on
  it are a reference, not a ceiling: the loops are rules, and another
  signal can lead them to a better placement.
* hinting faults (``hinting-faults``): Linux's NUMA balancing. Its scanner
  unmaps a window of each process's address space at a time; the next
  touch of each page raises one fault, counted for the touching thread
  and the page's node. So a sample stands for a page touched, not for an
  access: a hot page and a lukewarm one count the same, untouched memory
  never, and how much is sampled depends on how fast the scanner goes.
  The kernel also moves pages itself on those faults.
* none: the loops fall back to memory per node.

The kernel's rules modelled here are those of Linux's
``kernel/sched/fair.c`` (``task_numa_work``, ``update_task_scan_period``,
``should_numa_migrate_memory``) at their default sysctls, simplified to
a whole agent period at a time:

* Only memory under the default policy is scanned and moved (alone or
  bounded by a cgroup's ``cpuset.mems``): an explicit bind, interleave or
  preferred policy opts its memory out (no ``MPOL_F_MOF``).
* The scanner covers ``numa_balancing_scan_size_mb`` (256) per scan
  period, which starts at ``scan_period_min`` (1 s) and doubles while the
  faults it sees are mostly local, up to ``scan_period_max`` (60 s).
* A page moves to the faulting thread's node on its second fault in a row
  from that node (the two-stage filter): a thread's private pages follow
  it. Pages the guest's threads share do not stay spread: the lab host
  shows the kernel gathering a buffer written from two nodes on one of
  them (``tests/host/test_locality.py``, ``SharedPagesTest``), as its
  group rule moves a shared page toward a node that faults several times
  as much as the page's own; a buffer both nodes write as much goes back
  and forth between them in bulk. Modelled as gathering them, a scanned
  share per period, on the node whose vCPUs faulted most in the period:
  a draw, which changes between nodes running as many vCPUs.

* memory bandwidth (``memory-bandwidth``): resctrl's monitoring counts,
  per last-level cache domain (one per node here), the bytes a guest's
  vCPUs moved to and from memory, in total and to the domain's own node.
  Every access of the period is counted, as a cache line; the counters
  are read with :data:`BANDWIDTH_NOISE` relative noise, drawn apart for
  the total and the remote part. The kernel does not balance on this
  signal (its NUMA balancing is off on such a host in the simulation).
* hardware samples (``hardware-samples``): the CPU samples one op in a
  period; a sample memory served names the node holding its data. Over
  a period a vCPU's samples per node are a Poisson draw of its accesses
  there over :data:`ACCESSES_PER_SAMPLE`, scaled back by it as the agent
  does. The kernel does not balance on this signal either.

Pure: numpy arrays in, numpy arrays out; draws come from the caller's
generator.
"""

import numpy as np

from numa_policy_lab.sim import state as st
from numa_policy_lab.sim import workload as wl

SCAN_MB = 256.0
SCAN_PERIOD_MIN_S = 1.0
SCAN_PERIOD_MAX_S = 60.0
# Share of local faults from which the scanner slows down
# (NUMA_PERIOD_THRESHOLD of NUMA_PERIOD_SLOTS in fair.c).
LOCAL_ENOUGH = 0.7
# Relative noise of one bandwidth reading. Counters of the memory
# bandwidth monitor are known to drift from the accesses a program makes
# (prefetches and write-backs are counted, some parts under-count under
# load); 5 % is an order of magnitude, not a measured figure.
BANDWIDTH_NOISE = 0.05
# Memory accesses per hardware sample: at the agent's default period one
# op in a million is sampled, and a sampled op is a memory access as
# often as the guest's ops are; so about one sample per million accesses.
ACCESSES_PER_SAMPLE = 1e6


def coverage(memory_mb, period_s, scan_period_s):
    """Share of a guest's memory the scanner unmaps in one period."""
    if memory_mb <= 0:
        return 0.0
    return min(1.0, SCAN_MB * period_s / scan_period_s / memory_mb)


def touched_mb(profile, seg_mb):
    """vCPUs x nodes: MB of pages each vCPU touches, by their node.

    A vCPU touches its private segment, and its share of the shared data
    and of the I/O buffers when its application uses them; pages touched
    by several vCPUs fault once per scan, for whichever comes first. The
    cold segment is touched by nobody.
    """
    n_vcpus = seg_mb.shape[0] - wl.FIRST_PRIVATE - 1
    common = np.zeros(seg_mb.shape[1])
    if profile.shared_fraction:
        common += seg_mb[wl.SEG_SHARED]
    if profile.io_fraction:
        common += seg_mb[wl.SEG_IO]
    private = seg_mb[wl.FIRST_PRIVATE:wl.FIRST_PRIVATE + n_vcpus]
    return private + common / n_vcpus


def hinting_faults(rng, profile, seg_mb, scanned):
    """vCPUs x nodes: faults drawn for one period (Poisson per cell)."""
    expected = touched_mb(profile, seg_mb) * st.PAGES_PER_MB * scanned
    return rng.poisson(expected)


def next_scan_period(scan_period_s, faults, vcpu_nodes):
    """The scan period after a period whose faults were ``faults``.

    Mostly local: the scanner slows down (doubles its period); otherwise
    it speeds up (halves it). No fault at all: it slows down.
    """
    total = faults.sum()
    local = sum(faults[i, node] for i, node in enumerate(vcpu_nodes))
    if not total or local / total >= LOCAL_ENOUGH:
        return min(SCAN_PERIOD_MAX_S, scan_period_s * 2.0)
    return max(SCAN_PERIOD_MIN_S, scan_period_s / 2.0)


def kernel_moves(profile, seg_mb, vcpu_nodes, allowed_nodes, scanned,
                 faults_by_node=None):
    """segments x nodes x nodes: MB the kernel moves, source to target.

    Expected values, not draws: the kernel's moves are many and small.
    A private page moves to its vCPU's node at its second fault from
    there, so a scanned share of the remote ones moves each period. The
    shared data and buffers are gathered, a scanned share per period, on
    :func:`gathering_node` (``faults_by_node``: the period's hinting
    faults by the node of the faulting vCPU). Targets outside
    ``allowed_nodes`` (the cgroup's ``cpuset.mems``) are never chosen.
    """
    n_seg, n_nodes = seg_mb.shape
    moves = np.zeros((n_seg, n_nodes, n_nodes))
    allowed = np.zeros(n_nodes, bool)
    allowed[sorted(allowed_nodes)] = True
    # Every private segment whose vCPU's node is allowed, at once.
    nodes = np.asarray(vcpu_nodes, int)
    vcpus = np.flatnonzero(allowed[nodes])
    segs, targets = wl.FIRST_PRIVATE + vcpus, nodes[vcpus]
    moves[segs, :, targets] = seg_mb[segs] * scanned
    moves[segs, targets, targets] = 0.0
    for seg, used in ((wl.SEG_SHARED, profile.shared_fraction),
                      (wl.SEG_IO, profile.io_fraction)):
        target = gathering_node(vcpu_nodes, seg_mb[seg], allowed,
                                faults_by_node)
        if used and target is not None:
            moves[seg, :, target] = seg_mb[seg] * scanned
            moves[seg, target, target] = 0.0
    return moves


def gathering_node(vcpu_nodes, placed_mb, allowed, faults_by_node=None):
    """Where the kernel gathers pages a guest's vCPUs share, or None.

    Among the allowed nodes running the guest's vCPUs, the one whose
    vCPUs faulted most in the period (``faults_by_node``), else the one
    running most of them; among equals, the one already holding most of
    the pages. The faults are a draw: on nodes running as many vCPUs,
    which one faulted most changes from period to period, and the pages
    go back and forth between them in bulk, as the lab host shows
    (``tests/host/test_locality.py``, ``SharedPagesTest``).
    """
    counts = np.bincount(vcpu_nodes, minlength=len(placed_mb))
    weight = counts if faults_by_node is None else faults_by_node
    candidates = [n for n in range(len(placed_mb))
                  if allowed[n] and counts[n]]
    if not candidates:
        return None
    return max(candidates, key=lambda n: (weight[n], placed_mb[n], -n))


def apply_moves(seg_mb, moves, free_mb):
    """Carry out ``moves`` as far as each target's ``free_mb`` allows.

    Returns the new placement and the MB moved. A full node takes
    nothing more: the kernel's migration fails there and the page stays.
    """
    seg_mb = seg_mb.copy()
    free = np.asarray(free_mb, float).copy()
    moved = 0.0
    # A target nothing moves to takes nothing: skipped unsummed.
    for target in np.flatnonzero(moves.any(axis=(0, 1))).tolist():
        wanted = moves[:, :, target]
        total = wanted.sum()
        if total <= 0 or free[target] <= 0:
            continue
        wanted = wanted * min(1.0, free[target] / total)
        seg_mb -= wanted
        seg_mb[:, target] += wanted.sum(axis=1)
        free[target] -= wanted.sum()
        moved += wanted.sum()
    return np.maximum(seg_mb, 0.0), moved


def hardware_samples(rng, vcpu_accesses, per_sample=ACCESSES_PER_SAMPLE):
    """vCPUs x nodes: the memory samples a period of accesses gives.

    ``vcpu_accesses``: vCPUs x nodes, the period's accesses.
    """
    return rng.poisson(np.asarray(vcpu_accesses, float) / per_sample)


def bandwidth(rng, vcpu_accesses, vcpu_nodes, bytes_per_access,
              noise=BANDWIDTH_NOISE):
    """What the memory bandwidth monitor reads for one guest in a period.

    ``vcpu_accesses``: vCPUs x nodes, the accesses of the period;
    ``vcpu_nodes``: the node each vCPU ran on. Returns {node: (total
    bytes, local bytes)} for every node that ran one of its vCPUs.
    """
    vcpu_nodes = np.asarray(vcpu_nodes, int)
    domains = {}
    for node in sorted(set(vcpu_nodes.tolist())):
        rows = vcpu_accesses[vcpu_nodes == node]
        local = rows[:, node].sum() * bytes_per_access
        remote = (rows.sum() - rows[:, node].sum()) * bytes_per_access
        local *= max(0.0, 1.0 + noise * rng.standard_normal())
        remote *= max(0.0, 1.0 + noise * rng.standard_normal())
        domains[node] = (int(local + remote), int(local))
    return domains
