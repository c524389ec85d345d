"""An upper bound on a run's mean throughput, derived from the model.

No placement, loop or move of any strategy can make a guest faster than
this: each stall term of ``sim/model.py`` is bounded from below, term by
term, whatever the placement and the neighbours. Per vCPU the model gives

    throughput = share * ideal / time
    ideal = compute + mem_bound * miss_alone + io_bound + sharing_bound
    time  = compute + mem_bound * miss * Lm / L0 + io_bound * Ln / L0
                    + sharing_bound * Lc / L3

and on the simulated hosts, where the local latency L0 is the lowest of
the latency matrix and every remote latency exceeds the L3's (checked by
:func:`derivation_holds`):

* ``share <= 1``: one over the vCPUs sharing its CPU.
* ``miss >= miss_alone``: the node's LLC holds the working sets of every
  vCPU there, its own included, and the miss ratio never falls as the
  working set grows.
* ``Lm >= reached * L0``: ``Lm`` averages the latency of each node the
  vCPU's accesses go to (at least L0, plus queueing delays that are never
  negative) weighted by the share of its accesses going there. Those
  weights add up to ``reached``, the share of its accesses that go to a
  segment holding pages: 1, except for a guest whose application changed
  after boot (``Guest.phases``). Its segments were sized at boot, so a
  guest booted idle and switched to netperf has no network buffers, and
  the half of its accesses meant for them cost it nothing.
* ``Ln >= L0`` when the guest has network buffers (the NIC's latency to
  them is at least L0, and the path-sharing term multiplies two excesses
  over L0, never negative); without buffers ``Ln`` is exactly
  ``IO_PATH_SHARING * L0``, 0.94 L0.
* ``Lc >= L3`` when the guest has sibling vCPUs (a sibling on its node
  costs L3, one elsewhere a remote latency); with one vCPU ``Lc = 0``.

So a vCPU's throughput is at most ``ideal / fastest`` with ``fastest`` the
time above at those lowest values: exactly 1.0 for a guest whose accesses
all reach pages, that has buffers if it waits on the network, and that
has siblings if it shares cache lines. Where throughput above 1.0 is
seen, it is one of those three exceptions. The migration costs a period
charges (``SimulatedBackend.advance``) only lower throughput further.

The bound of a run takes the same mean as ``Outcome.mean``: per guest
alive at the end, its bound averaged over the measured periods it runs
in (under the profile it runs in each), then over those guests. A guest
nova found no host for counts 0 in the run and its own bound here, so the
bound stays an upper bound whatever nova refused. The bound ignores every
kind of contention (shared CPUs, memory controllers, links): it is an
upper bound, not a placement any strategy is known to reach.
"""

import functools

import numpy as np

from numa_policy_lab.sim import constants
from numa_policy_lab.sim import model
from numa_policy_lab.sim import state
from numa_policy_lab.sim import workload as wl

# Why a guest's bound can pass 1.0: the model's three exceptions, as the
# page states them.
UNBACKED = ('a guest whose application changed after boot has no pages in '
            'the segments only the new one uses (segments are sized at '
            'boot), and its accesses to them cost nothing')
NO_BUFFERS = ('a guest that waits on the network without buffers pays '
              "the model's path-sharing term alone, "
              f'{constants.IO_PATH_SHARING:.2f} of a local access')
LONE_VCPU = ('a guest of one vCPU that shares cache lines has no sibling '
             'to wait for')
EXCEPTIONS = (UNBACKED, NO_BUFFERS, LONE_VCPU)


@functools.lru_cache(maxsize=16)
def derivation_holds(host):
    """Whether ``host``'s latencies meet the derivation's premises.

    L0 (a node's latency to its own memory) must be the lowest entry of
    the latency matrix, and every remote latency at least the L3's, for
    the lowest stall terms to be the local ones.
    """
    lat = host.latency_matrix()
    local = np.diag(lat)
    remote = lat[~np.eye(host.n_nodes, dtype=bool)]
    return bool((local == lat[0, 0]).all() and (lat >= lat[0, 0]).all()
                and (remote >= model.L3_LATENCY).all())


def reached(profile, segment_mb):
    """Share of a vCPU's accesses that go to a segment holding pages.

    ``segment_mb``: the MB of each of the guest's segments (what
    ``state.segment_sizes`` gave it at boot); the private segments are
    all the same size.
    """
    has = np.asarray(segment_mb) > 0
    private = 1.0 - profile.shared_fraction - profile.io_fraction
    return (profile.shared_fraction * has[wl.SEG_SHARED]
            + profile.io_fraction * has[wl.SEG_IO]
            + private * has[wl.FIRST_PRIVATE])


def savings(host, profile, n_vcpus, segment_mb):
    """Per exception, the time per unit of work it takes off the ideal.

    Zero but for the three exceptions to a bound of 1.0: accesses that
    reach no page, a network wait without buffers, a lone vCPU that
    shares cache lines.
    """
    p = profile
    has = np.asarray(segment_mb) > 0
    miss = model.miss_ratio(p.working_set_mb, host.llc_mb)
    network = 1.0 if has[wl.SEG_IO] else constants.IO_PATH_SHARING
    siblings = 1.0 if n_vcpus > 1 else 0.0
    return {UNBACKED: (p.mem_bound * miss
                       * (1.0 - reached(p, segment_mb))),
            NO_BUFFERS: p.io_bound * (1.0 - network),
            LONE_VCPU: p.sharing_bound * (1.0 - siblings)}


def guest_bound(host, profile, n_vcpus, segment_mb):
    """The most a guest running ``profile`` can reach on ``host``.

    ``n_vcpus``: its vCPUs; ``segment_mb``: its segments' sizes. Every
    vCPU of a guest has the same bound, so the guest's mean has it too:
    the ideal time over the fastest time the model allows.
    ValueError if ``host`` breaks the derivation's premises.
    """
    if not derivation_holds(host):
        raise ValueError(f'{host.name}: local memory is not the fastest; '
                         'the bound does not hold there')
    p = profile
    miss = model.miss_ratio(p.working_set_mb, host.llc_mb)
    compute = 1.0 - p.mem_bound - p.io_bound - p.sharing_bound
    # The same sum, in the same order, as the model's ideal time.
    ideal = compute + p.mem_bound * miss + p.io_bound + p.sharing_bound
    saved = sum(savings(host, p, n_vcpus, segment_mb).values())
    return float(ideal / (ideal - saved))


def profile_at(guest, period):
    """The profile name ``guest`` runs in ``period``, as a run sets it.

    A phase switches a guest already on a host: ``simulation.run``
    applies the period's phases before placing its arrivals, so a phase
    at or before the guest's arrival never takes effect.
    """
    name = guest.app.profile
    for at, profile in sorted(guest.phases, key=lambda phase: phase[0]):
        if guest.arrive < at <= period:
            name = profile
    return name


def measured_periods(periods, window):
    """The periods ``Outcome.final`` averages over: the last ``window``."""
    return range(max(0, periods - window), periods)


def booted_segments(guest):
    """MB of each segment ``guest`` boots with (``guests.boot``)."""
    app = guest.app
    return state.segment_sizes(wl.PROFILES[app.profile], app.vcpus,
                               app.memory_mb)


def measured_profiles(guest, periods, window):
    """The profile ``guest`` runs in each measured period it runs in."""
    return [wl.PROFILES[profile_at(guest, p)]
            for p in measured_periods(periods, window) if guest.alive(p)]


def guest_run_bound(host, guest, periods, window):
    """A guest's bound, averaged over the measured periods it runs in."""
    segment_mb = booted_segments(guest)
    bounds = [guest_bound(host, profile, guest.app.vcpus, segment_mb)
              for profile in measured_profiles(guest, periods, window)]
    return float(np.mean(bounds)) if bounds else float('nan')


def _counted(spec):
    """The guests ``Outcome.final`` counts: those alive at the end."""
    return [g for g in spec.guests if g.depart is None]


def run_bound(spec):
    """The bound on ``Outcome.mean`` of any run of ``spec``."""
    host = spec.host()
    return float(np.mean([guest_run_bound(host, g, spec.periods, spec.window)
                          for g in _counted(spec)]))


def above_one(host, profile, n_vcpus, segment_mb):
    """The exceptions that lift a guest's bound above 1.0, in order."""
    saved = savings(host, profile, n_vcpus, segment_mb)
    return [reason for reason in EXCEPTIONS if saved[reason] > 0]


def run_above_one(spec):
    """The exceptions met by a guest ``run_bound`` counts, in order."""
    host = spec.host()
    found = set()
    for guest in _counted(spec):
        for profile in measured_profiles(guest, spec.periods, spec.window):
            found.update(above_one(host, profile, guest.app.vcpus,
                                   booted_segments(guest)))
    return [reason for reason in EXCEPTIONS if reason in found]
