"""Which guests' numa_maps the agent reads at an observation: pure.

Reading a guest's ``/proc/<pid>/numa_maps`` makes the kernel walk the
page tables of all its resident memory: the cost grows with the guest's
memory (about 4-9 ms per GB with 4 KiB pages, about 0.2 ms per GB with
transparent huge pages, doc/source/agent.rst "Observation cost"), while
everything else an observation reads costs per guest. On a host with a
terabyte of guest memory, reading every guest every period would cost
seconds per period. So the reads are bounded:

* each observation (a round) spends at most ``budget`` seconds on the
  reads it may put off, each guest's cost being what its last read took;
* the stalest guests are chosen first, cheaper before dearer among the
  equally stale: a host of small guests fits in the budget and reads
  every guest at every round, as before the bound; large steady guests
  are read less often;
* whatever happens, a guest is read at least every ``max_age`` rounds
  (the staleness bound; the guests too dear for the budget are spread
  over those rounds, a few at each, each when it is due), or, when the
  budget cannot read every guest once in ``max_age`` rounds, every
  guest's cost over the budget (:func:`staleness_bound`: the budget
  holds, and readings of large steady guests grow older), and at once
  when it is new, when its process changed, when its live definition
  changed (a nodeset or a pinning the agent or nova just set) or when
  the agent moved its pages: those are the readings the loops act on
  and the report must show.

A guest not read keeps its last reading, reported as it was: the loops
and the report still have its memory per node. What a guest's memory
per node can change without is bounded by the staleness bound: its
pages move only when the agent moves them (read at once) or when the
kernel does (NUMA balancing, which the agent then follows through its
own sampled signal, not through numa_maps).

Nothing here does I/O or reads a clock: the backend times each read and
tells :class:`NumaMapsBound` (agent/backend/libvirt_backend.py).
"""

import dataclasses
import math

# 1 % of one core at the agent's default period ([numa_policy_agent]
# period, 5 s): the target of the observation cost.
CORE_SHARE = 0.01
DEFAULT_PERIOD = 5.0
# A guest is read again at least every this many rounds: a minute at the
# default period.
MAX_AGE = 12


def budget_for(period, share=CORE_SHARE):
    """Seconds of reads per round: ``share`` of one core at ``period``."""
    return share * period


def staleness_bound(costs, budget, max_age=MAX_AGE):
    """Rounds within which every guest is read again.

    ``max_age``, unless reading every guest once costs more than
    ``max_age`` budgets: then as many rounds as it takes the budget to
    read them all, so the mean cost per round stays within the budget
    however much guest memory the host holds. The readings of large
    steady guests get older instead; what an operator trades against
    that is the budget (``[numa_policy_agent] numa_maps_core_share``).
    """
    if budget is None or not math.isfinite(budget) or budget <= 0:
        return max_age
    return max(max_age, math.ceil(sum(costs) / budget))


def choose(guests, budget, max_age=MAX_AGE):
    """The guests to read this round, of ``{uuid: (cost, age)}``.

    ``cost``: seconds the guest's last read took; ``age``: rounds since
    it (1 when it was read at the last round). The stalest come first,
    cheaper first among the equally stale.

    Read whatever they cost: as many of the stalest as the staleness
    bound needs now. Every guest is due within ``max_age - age`` rounds;
    the later rounds are given room for ``len(guests) / max_age`` guests
    each (rounded up), and what they cannot take by its due round is
    read now. So guests too dear for the budget are read a few at each
    round, not all together when they reach the bound together (as they
    would after the agent's first period, which reads every guest), and
    a lone dear guest among cheap ones only when it is due.

    Then the others in that order while their total stays within
    ``budget``; one too dear for what is left is passed over for cheaper
    ones. So a round costs at most ``budget`` plus the forced reads, and
    on average about ``max(budget, total / max_age)`` once the guests'
    total cost is above the budget.
    """
    order = sorted(guests, key=lambda uuid: (-guests[uuid][1],
                                             guests[uuid][0], uuid))
    room = math.ceil(len(order) / max_age)
    due_in = [max(max_age - guests[uuid][1], 0) for uuid in order]
    # Guests due within t rounds, less the room of rounds 1..t.
    needed = max([0] + [count - room * t
                        for count, t in enumerate(due_in, start=1)])
    chosen = set(order[:needed])
    # The budget is for the reads that may be put off: a forced read does
    # not put off the cheap guests, which stay as fresh as before.
    spent = 0.0
    for uuid in order:
        cost = guests[uuid][0]
        if uuid not in chosen and spent + cost <= budget:
            chosen.add(uuid)
            spent += cost
    return chosen


@dataclasses.dataclass
class Reading:
    """A guest's last numa_maps reading and what it was read under."""
    memory: dict
    cost: float
    pid: int
    definition: object = None
    age: int = 0


class NumaMapsBound:
    """The rounds of one backend: which guest to read, and its last reading.

    The backend asks :meth:`due` for each guest it observes, in its
    listing order, and tells :meth:`read` what a read gave and took. A
    round starts when a guest is asked for a second time: the listing
    went round. Its choice (:func:`choose`) is made then, on the costs
    and ages of the guests of the last round; guests not seen in the last
    round are forgotten (gone).

    ``budget`` None: no bound, every guest read at every round (the
    benchmarks' "bound off").
    """

    def __init__(self, budget=budget_for(DEFAULT_PERIOD), max_age=MAX_AGE):
        self.budget = budget
        self.max_age = max_age
        self._readings = {}
        self._seen = set()
        self._chosen = set()
        self._moved_pids = set()

    @classmethod
    def unbounded(cls):
        return cls(budget=None)

    def _start_round(self):
        self._readings = {uuid: reading for uuid, reading
                          in self._readings.items() if uuid in self._seen}
        for reading in self._readings.values():
            reading.age += 1
        budget = math.inf if self.budget is None else self.budget
        costs = {uuid: (r.cost, r.age) for uuid, r in self._readings.items()}
        self._chosen = choose(costs, budget, staleness_bound(
            [cost for cost, _ in costs.values()], budget, self.max_age))
        self._seen = set()

    def due(self, uuid, pid, definition=None):
        """Whether to read the guest's numa_maps now."""
        if uuid in self._seen:
            self._start_round()
        self._seen.add(uuid)
        last = self._readings.get(uuid)
        return (last is None or uuid in self._chosen or last.pid != pid
                or last.definition != definition or pid in self._moved_pids)

    def read(self, uuid, pid, memory, cost, definition=None):
        """What a read of the guest gave (``memory``) and took (``cost``)."""
        self._readings[uuid] = Reading(dict(memory), cost, pid, definition)
        self._moved_pids.discard(pid)

    def failed(self, uuid):
        """The read failed: nothing kept, so the next round reads again."""
        self._readings.pop(uuid, None)

    def last(self, uuid):
        """The guest's last reading, {node: MiB}, as it was read."""
        return dict(self._readings[uuid].memory)

    def age(self, uuid):
        """Rounds since the guest was read (0: at this round)."""
        reading = self._readings.get(uuid)
        return None if reading is None else reading.age

    def moved(self, pid):
        """The agent moved pages of process ``pid``: read it next."""
        self._moved_pids.add(pid)
