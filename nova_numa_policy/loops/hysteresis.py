"""vScope's pin count (seed 004 Algorithm 1) as a pure function.

An affinity only changes after the new choice has been proposed more than
``max_pin_count`` times in a row; proposing the current value again resets
the count. Every loop passes its affinity changes through it.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Pinned:
    value: object
    count: int


def update(pinned, proposed, max_pin_count):
    """Return the new :class:`Pinned` after one proposal.

    ``pinned`` is None the first time: the proposal is taken at once, as
    vScope creates a new record with the current node.
    """
    if pinned is None:
        return Pinned(proposed, max_pin_count)
    if proposed == pinned.value:
        return Pinned(pinned.value, max_pin_count)
    count = pinned.count - 1
    if count < 0:
        return Pinned(proposed, max_pin_count)
    return Pinned(pinned.value, count)
