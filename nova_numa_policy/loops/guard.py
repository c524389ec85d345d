"""First do no harm: refuse actions that load a harmed neighbour's nodes.

A pure filter the runner applies to every loop's actions, from what a real
agent observes. Each guest's *progress* is its request rate when it does
network I/O, else its memory accesses per second (counters, not the
kernel's sampled hinting faults, whose number follows its scan rate);
both fall when the guest slows down. Per guest:

* the *reference* is its mean progress while it is undisturbed, i.e.
  until an admitted action first lands on it or on a node it uses; it is
  frozen then, and measured again every ``revisit_periods``;
* its progress is smoothed (EWMA, ``smoothing`` old weight); while it is
  more than ``tolerance`` below the reference the guest is *protected*.
  Moves onto its nodes stop as soon as it crosses the line, so it settles
  at most about ``tolerance`` plus one period's step below where it was
  (no latch: a guest slowed for a moment by a neighbour's transition, or
  by its own phase, does not freeze the host for an hour);
* an action by or for another guest that would add load to a node a
  protected guest uses (memory or vCPUs there, at least ``min_share`` of
  its own) is refused with a logged reason: pages moved *to* the node,
  vCPUs pinned *onto* it, nodes added to a nodeset.

So that the feedback can act before the harm is done, a node receives
the vCPUs of at most one guest per period; the others wait for the next
period (vNUIOA would otherwise crowd the NIC's node with every I/O guest
in one step, before any harm could be measured). Page moves are limited
this way only onto a node another guest uses and the mover does not run
on, or one where another guest lives wholly (all its vCPUs, most of its
memory): Carrefour spreads two guests over the same nodes at once, and
serializing them made convergence seed-dependent; neither guest lives
wholly on one node there.

Feedback alone lets the guest a move harms lose one arrival's worth
before it reacts. For a guest living wholly on one node the guard also
predicts: each arrival there (another guest's load, nothing done to the
guest itself in that period) shows what one arrival costs it; the next
is refused while its latest progress, less that cost, would fall more
than ``tolerance`` below its reference.

Guests arriving on the host or leaving it are nova's doing, not a
loop's: a drop a guest shows in the observation where the set of guests
changed is not held against the loops. Its reference and smoothed
progress are scaled down by that drop, so a guest already below its
reference stays as far below it, and one that was not is not protected
for it. Without this, the first guests on a host keep references taken
while it was nearly empty; every later arrival leaves them "harmed", and
the guard then refuses the newcomer's own repair onto their nodes.

Where the kernel balances (the host's signal is its hinting faults), a
guest also speeds up on its own as the kernel brings its memory to its
vCPUs, often after the first loop action has frozen its reference. A
rise held through two quiet periods in a row (no action on the guest,
no guest arriving or leaving) is its undisturbed progress too: the
reference and the smoothed progress move up to the lower of the two
samples. Without this, a guest whose reference froze before the kernel
helped it could lose much of that help to other guests' moves and
still read as above its reference.

On hardware samples a guest's progress is its sampled accesses, good
to about one over the square root of its samples per period: a guest
giving a thousand is read to about 3 %, coarser than ``tolerance``, and
the guard sees its harm late (doc/source/loops.rst, "Known gaps").

Actions on a guest itself are never refused for its own sake: a loop
acting on a slowed guest is trying to repair it. Guests without a
measurable progress (no counters, no I/O) are not protected by the guard;
the loops' own thresholds still apply to them.
"""

import dataclasses

import numpy as np

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality
from nova_numa_policy.loops import base


@dataclasses.dataclass(frozen=True)
class Config:
    enabled: bool = True
    tolerance: float = 0.01
    smoothing: float = 0.5
    min_share: float = 0.05
    revisit_periods: int = 720
    period_s: float = 5.0
    # Page moves onto a node another guest uses: at most one guest's per
    # period, so the feedback sees each arrival before the next.
    one_page_arrival_per_node: bool = True
    # A guest lives wholly on a node when all its vCPUs run there and at
    # least this share of its memory is there: well placed already, it
    # has nothing to gain from any loop and only load to lose.
    home_share: float = 0.9


@dataclasses.dataclass(frozen=True)
class Record:
    ref: float
    samples: int  # samples in ref; frozen once disturbed
    ewma: float
    disturbed: bool = False
    protected: bool = False
    age: int = 0
    cputime_ns: int = 0  # the guest's vCPU time when last seen
    last: float = 0.0  # the latest sample, unsmoothed
    # The most one other guest's arrival on its home node has cost it, as
    # a fraction of the reference; what the next arrival is expected to.
    step: float = 0.0
    arrival: bool = False  # another guest's load landed on its home node
    moved: bool = False  # and an action on the guest itself, same period
    # The guests on the host when it was last observed.
    peers: frozenset = frozenset()
    # The latest sample came from a period with no loop acting on the
    # guest and no guest arriving or leaving.
    quiet: bool = False

    @property
    def loss(self):
        """How far below its reference the guest is, 0.0 when not."""
        return max(0.0, 1.0 - self.ewma / self.ref) if self.ref > 0 else 0.0

    def expected_loss(self):
        """Its loss after one more arrival like the worst one seen.

        From the latest sample, not the smoothed one, and signed: a guest
        a loop has lifted above its reference has that much to give
        before an arrival harms it.
        """
        if self.ref <= 0:
            return 0.0
        return 1.0 - self.last / self.ref + self.step


def initial_state():
    return {}


def progress(topology, inst, period_s):
    """Requests per second, else accesses per second, else None.

    Sampled accesses (hinting faults) are no progress: their number
    follows the kernel's scan rate, which slows down as a guest's faults
    turn local, not the guest's work.
    """
    if inst.io_rate and inst.io_rate > 0:
        return float(inst.io_rate)
    if locality.is_sampled(inst.access_signal):
        return None
    acc = base.access_vector(topology, inst)
    if acc is None or acc.sum() <= 0:
        return None
    return float(acc.sum()) / period_s


def exposure(topology, inst, min_share):
    """Nodes whose load this guest feels: its vCPUs' and memory's nodes."""
    nodes = set(base.vcpu_nodes(topology, inst))
    mem = base.memory_vector(topology, inst)
    acc = base.access_vector(topology, inst)
    for vec in (mem, acc):
        if vec is not None and vec.sum() > 0:
            nodes |= {int(n) for n in np.flatnonzero(
                vec / vec.sum() >= min_share)}
    nodes.discard(None)
    return nodes


def home(topology, inst, config):
    """The node ``inst`` lives on wholly, or None (see ``home_share``).

    Such a guest is where every loop would put it: any other guest's load
    arriving on its node can only cost it.
    """
    nodes = set(base.vcpu_nodes(topology, inst))
    if len(nodes) != 1 or None in nodes:
        return None
    (node,) = nodes
    mem = base.memory_vector(topology, inst)
    total = mem.sum()
    return node if total > 0 and mem[node] >= config.home_share * total \
        else None


def restarted(rec, cputime_ns):
    """True when the guest's vCPU time went backwards: it was rebooted.

    A rebooted guest is a new placement (the host scatters it again), so
    what it did before says nothing about what it will do now.
    """
    return rec is not None and cputime_ns < rec.cputime_ns


def _rescaled(rec, value, peers):
    """``rec`` with a drop seen as the host's guests changed taken out.

    The drop is the arrival's (or departure's) doing: scaling the
    reference and the smoothed progress by it keeps the guest's loss as
    it was, and the drop teaches nothing about loop actions (``last``
    becomes this sample). A rise is left to the usual update.
    """
    if peers == rec.peers or not rec.peers or not 0 < value < rec.last:
        return rec
    factor = value / rec.last
    return dataclasses.replace(rec, ref=rec.ref * factor,
                               ewma=rec.ewma * factor, last=value)


def _update(rec, value, config, cputime_ns=0, peers=frozenset(),
            balancing=False):
    if (rec is None or rec.age >= config.revisit_periods
            or restarted(rec, cputime_ns)):
        return Record(ref=value, samples=1, ewma=value,
                      cputime_ns=cputime_ns, last=value, peers=peers)
    quiet = not rec.moved and peers == rec.peers
    rec = _rescaled(rec, value, peers)
    step = rec.step
    if rec.arrival and not rec.moved and rec.ref > 0:
        # Only another guest's load changed on its node: the drop is what
        # that arrival cost it.
        step = max(step, (rec.last - value) / rec.ref)
    ewma = config.smoothing * rec.ewma + (1 - config.smoothing) * value
    ref, samples = rec.ref, rec.samples
    if not rec.disturbed:
        samples += 1
        ref += (value - ref) / samples
        ewma = ref
    elif balancing and quiet and rec.quiet:
        # Where the kernel balances (``balancing``), a guest risen for two
        # quiet periods in a row owes it to the kernel moving its memory,
        # as it would without the loops: that is its undisturbed progress
        # now. The smoothed progress starts from there too: lagging behind
        # the rise, it would read as a loss.
        risen = min(value, rec.last)
        if risen > ref:
            ref, ewma = risen, max(ewma, risen)
    protected = rec.disturbed and ewma < (1.0 - config.tolerance) * ref
    return dataclasses.replace(rec, ref=ref, samples=samples, ewma=ewma,
                               protected=protected, age=rec.age + 1,
                               cputime_ns=cputime_ns, last=value, step=step,
                               arrival=False, moved=False, peers=peers,
                               quiet=quiet)


def observe(snapshot, state, config):
    """New guard state after one snapshot; never mutates ``state``."""
    new = {}
    peers = frozenset(inst.uuid for inst in snapshot.instances)
    balancing = locality.kernel_balances(snapshot.locality_signal)
    for inst in snapshot.instances:
        value = progress(snapshot.topology, inst, config.period_s)
        if value is not None:
            new[inst.uuid] = _update(state.get(inst.uuid), value, config,
                                     base.cputime_ns(inst), peers, balancing)
    return new


def destinations(topology, inst, action):
    """Nodes the action adds load to."""
    if isinstance(action, backend.MovePages):
        return {action.target_node}
    if isinstance(action, backend.SetNodeset):
        return set(action.nodes) - set(inst.memory_nodes or ())
    if isinstance(action, backend.PinVcpu):
        nodes = {topology.node_of_cpu(c) for c in action.cpus}
        if action.vcpu < len(inst.vcpu_cpus):
            current = topology.node_of_cpu(inst.vcpu_cpus[action.vcpu])
            if current in nodes:
                return set()
        return nodes - {None}
    return set()


class View:
    """One snapshot as the guard reads it: guests by uuid, their exposure.

    Built once per period: every action of every loop is checked against
    the same snapshot, so each guest's exposed nodes are computed once.
    """

    def __init__(self, snapshot, config):
        self.topology = snapshot.topology
        self.config = config
        self.by_uuid = {i.uuid: i for i in snapshot.instances}
        self._exposure = {}
        self._residents = None
        self._homes = None

    def exposure(self, uuid):
        if uuid not in self._exposure:
            inst = self.by_uuid.get(uuid)
            self._exposure[uuid] = exposure(
                self.topology, inst, self.config.min_share) if inst else set()
        return self._exposure[uuid]

    def vcpu_nodes(self, uuid):
        inst = self.by_uuid.get(uuid)
        return set(base.vcpu_nodes(self.topology, inst)) if inst else set()

    def home(self, uuid):
        """The node a guest lives on wholly (vCPUs and memory), or None."""
        if self._homes is None:
            self._homes = {u: home(self.topology, i, self.config)
                           for u, i in self.by_uuid.items()}
        return self._homes.get(uuid)

    def resident(self, node, uuid):
        """True when a guest other than ``uuid`` lives wholly on ``node``."""
        if self._residents is None:
            self._residents = {}
            for other in self.by_uuid:
                self._residents.setdefault(self.home(other), set()).add(other)
        return bool(self._residents.get(node, set()) - {uuid})

    def shared(self, node, uuid):
        """True when a guest other than ``uuid`` uses ``node``."""
        return any(node in self.exposure(other)
                   for other in self.by_uuid if other != uuid)


def _arrival(view, action, dest, arrivals):
    """Refusal when another guest's load already arrives on ``dest``.

    vCPUs: one guest per node per period, always. Pages: only with
    ``one_page_arrival_per_node``, only onto a node another guest uses
    and none of the mover's vCPUs runs on: memory following its vCPUs,
    or spread over them (Carrefour), is the repair the move exists for,
    while memory landing where the guest does not run only adds load.
    Onto a node another guest lives on wholly even memory following the
    mover's vCPUs waits its turn: that guest can only lose, and each
    arrival must be seen alone to learn what it costs (:func:`_predicted`).
    """
    pin = isinstance(action, backend.PinVcpu)
    if not pin and not (isinstance(action, backend.MovePages)
                        and view.config.one_page_arrival_per_node):
        return None
    mover = action.instance_uuid
    for node in sorted(dest):
        first = (arrivals or {}).get(node, mover)
        if first == mover:
            continue
        if pin or view.resident(node, mover) or (
                node not in view.vcpu_nodes(mover)
                and view.shared(node, mover)):
            return f'guard: node {node} already receives {first} this period'
    return None


def refusal(snapshot, state, config, action, arrivals=None, view=None):
    """Why ``action`` must not run, or None when it may.

    ``arrivals`` maps a node to the guest whose load was already let onto
    it this period; ``view`` is the snapshot's :class:`View` when the
    caller checks many actions.

    A protected neighbour does not block a guest that is itself worse off
    (further below its own reference): that guest's loop is repairing it
    (typically memory following vCPUs moved the period before), and
    blocking it would freeze the host with the worst-off guest stuck
    halfway.
    """
    if not config.enabled:
        return None
    view = view or View(snapshot, config)
    inst = view.by_uuid.get(action.instance_uuid)
    if inst is None:
        return None
    dest = destinations(view.topology, inst, action)
    if not dest:
        return None
    why = _arrival(view, action, dest, arrivals)
    if why:
        return why
    mine = state.get(action.instance_uuid)
    own_loss = mine.loss if mine is not None and mine.disturbed else 0.0
    for uuid, rec in sorted(state.items()):
        if uuid == action.instance_uuid or not rec.protected:
            continue
        if uuid not in view.by_uuid or rec.loss <= own_loss:
            continue
        hit = dest & view.exposure(uuid)
        if hit:
            return (f'guard: {uuid} is {base.pct(rec.loss)} '
                    f'below its undisturbed progress and uses node(s) '
                    f'{sorted(hit)}')
    return _predicted(view, state, config, action, dest, own_loss)


def _predicted(view, state, config, action, dest, own_loss):
    """Refusal when the arrival would put a resident guest past tolerance.

    A guest living wholly on a node has shown, with the last arrival
    there, what one arrival costs it (``Record.step``); the next is
    expected to cost as much on top of its present loss. Refusing before
    it crosses the line, rather than after, keeps it within the tolerance
    instead of one step below it. A worse-off mover still repairs itself.
    """
    for uuid, rec in sorted(state.items()):
        if uuid == action.instance_uuid or rec.step <= 0:
            continue
        node = view.home(uuid)
        if node not in dest:
            continue
        expected = rec.expected_loss()
        if expected > config.tolerance and expected > own_loss:
            return (f'guard: {uuid} lost {base.pct(rec.step)} to the last '
                    f'arrival on node {node}; another would leave it '
                    f'{base.pct(expected)} below its undisturbed progress')
    return None


def disturb(snapshot, state, config, action, view=None):
    """Mark the guests an admitted action touches.

    Touched guests are disturbed (their reference freezes); a guest
    living wholly on a node another guest's load now arrives on learns,
    next period, what that arrival cost it, unless it was acted on
    itself in the same period.
    """
    view = view or View(snapshot, config)
    inst = view.by_uuid.get(action.instance_uuid)
    dest = destinations(view.topology, inst, action) if inst else set()
    new = dict(state)
    for uuid, rec in state.items():
        mine = uuid == action.instance_uuid
        if not mine and uuid not in view.by_uuid:
            continue
        changes = {}
        if not rec.disturbed and (mine or dest & view.exposure(uuid)):
            changes['disturbed'] = True
        if mine and dest and not rec.moved:
            # A pin to the node it already runs on changes nothing.
            changes['moved'] = True
        elif not mine and not rec.arrival and view.home(uuid) in dest:
            changes['arrival'] = True
        if changes:
            new[uuid] = dataclasses.replace(rec, **changes)
    return new
