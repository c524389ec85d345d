"""The memory-tier contract of a flavor: which memory tiers hold a guest.

Some hosts have lower memory tiers: NUMA nodes with memory and no CPUs
(a CXL memory expander, say), about twice as slow as DRAM, which Linux
places in a lower tier (``/sys/devices/virtual/memory_tiering``). Two
flavor extra specs say whether a guest's memory may live there:

* ``hw:numa_memory_tiers``: ``any``, ``top`` or ``tiered``;
* ``hw:numa_top_tier_percent``: with ``tiered`` only, the share of the
  guest's memory that must stay on the top tier.

Pure, like :mod:`nova_numa_policy.contracts.policy`, which calls
:func:`resolve_tiers` so that every component reads the same answer.
"""

import dataclasses
import enum

from nova_numa_policy.contracts import exception

MEMORY_TIERS_KEY = 'hw:numa_memory_tiers'
TOP_TIER_PERCENT_KEY = 'hw:numa_top_tier_percent'
TIER_KEYS = (MEMORY_TIERS_KEY, TOP_TIER_PERCENT_KEY)

MIN_TOP_TIER_PERCENT = 1
MAX_TOP_TIER_PERCENT = 100
# InvalidNumaPolicy lists "allowed values"; a range is one such value.
TOP_TIER_PERCENT_RANGE = (
    f'an integer from {MIN_TOP_TIER_PERCENT} to {MAX_TOP_TIER_PERCENT}',)

# The top-tier share of a ``tiered`` guest whose flavor gives none. Pond
# (ASPLOS '23) sizes each VM's split from a prediction of how much of its
# memory stays untouched; nothing predicts that here, at resolve time, so
# the default keeps half on the top tier: no more than half of the guest
# can land on a tier about twice as slow, and half is still free for its
# cold pages. An operator who knows the workload sets the key.
DEFAULT_TOP_TIER_PERCENT = 50


class TierMode(str, enum.Enum):
    """Which memory tiers may hold the guest's memory."""

    # Today's behaviour: any node the NUMA policy allows, and the kernel
    # may demote pages to a lower tier under memory pressure.
    ANY = 'any'
    # Top tier only: what the kernel demotes under pressure goes back.
    TOP = 'top'
    # Top tier first; cold pages may live on a lower tier, above a floor.
    TIERED = 'tiered'


TIER_MODE_VALUES = tuple(member.value for member in TierMode)


@dataclasses.dataclass(frozen=True)
class MemoryTiers:
    """What one instance asked of the memory tiers, resolved and typed."""

    mode: TierMode = TierMode.ANY
    # The minimum share (%) of the guest's memory kept on the top tier;
    # None unless ``tiered``, where it is always set.
    top_tier_percent: int | None = None

    def __post_init__(self):
        # Built by hand (tests, the agent's records) as well as by
        # resolve_tiers(): a half-filled value would be read as something
        # no flavor can ask for, so it is a programming error.
        tiered = self.mode == TierMode.TIERED
        if tiered != (self.top_tier_percent is not None):
            raise ValueError(
                f'top_tier_percent is set with, and only with, '
                f'{TierMode.TIERED.value}: got {self.mode!r}, '
                f'{self.top_tier_percent!r}')

    def top_tier_mb(self, memory_mb):
        """How much of a guest of ``memory_mb`` must be on the top tier.

        All of it with ``top``; with ``tiered`` its share, rounded up to
        a whole MB (the floor is a minimum); none with ``any``.
        """
        if self.mode is TierMode.TOP:
            return memory_mb
        if self.mode is TierMode.TIERED:
            return -(-memory_mb * self.top_tier_percent // 100)
        return 0


# No tier key on the flavor: the kernel's own behaviour.
ANY = MemoryTiers()


def _mode(extra_specs):
    """The flavor's tier mode, or None when it names none."""
    value = extra_specs.get(MEMORY_TIERS_KEY)
    if value is None:
        return None
    # Stripped like the hw:numa_policy values (policy._choice).
    value = str(value).strip()
    if value not in TIER_MODE_VALUES:
        raise exception.InvalidNumaPolicy(
            MEMORY_TIERS_KEY, value, TIER_MODE_VALUES)
    return TierMode(value)


def _percent(extra_specs):
    """The flavor's top-tier share, or None when it names none.

    Parsed with int(), as nova's API parses an integer extra spec, so
    that a value nova-api accepts is never refused here, nor the reverse.
    """
    value = extra_specs.get(TOP_TIER_PERCENT_KEY)
    if value is None:
        return None
    text = str(value).strip()
    try:
        percent = int(text)
    except ValueError:
        percent = None
    if (percent is None
            or not MIN_TOP_TIER_PERCENT <= percent <= MAX_TOP_TIER_PERCENT):
        raise exception.InvalidNumaPolicy(
            TOP_TIER_PERCENT_KEY, text, TOP_TIER_PERCENT_RANGE)
    return percent


def resolve_tiers(extra_specs):
    """Resolve a flavor's extra specs to its :class:`MemoryTiers`.

    :param extra_specs: the flavor's extra specs, a mapping of str to str.
    :returns: a :class:`MemoryTiers`; :data:`ANY` when the flavor names
        no tier key.
    :raises InvalidNumaPolicy: a mode outside the documented set, or a
        percent that is not an integer in range.
    :raises ConflictingNumaSpecs: a percent without ``tiered``.
    """
    extra_specs = extra_specs or {}
    mode = _mode(extra_specs)
    percent = _percent(extra_specs)
    if mode is not TierMode.TIERED:
        if percent is not None:
            # Short: like resolve()'s conflicts, it can end up in an
            # instance's fault message, of which nova keeps 255 chars.
            raise exception.ConflictingNumaSpecs(
                f"{TOP_TIER_PERCENT_KEY} applies only with "
                f"{MEMORY_TIERS_KEY}=tiered, and {MEMORY_TIERS_KEY} is "
                f"{'unset' if mode is None else mode.value}. Set "
                f"{MEMORY_TIERS_KEY}=tiered, or remove "
                f"{TOP_TIER_PERCENT_KEY}.")
        return MemoryTiers(mode or TierMode.ANY)
    if percent is None:
        percent = DEFAULT_TOP_TIER_PERCENT
    return MemoryTiers(mode, percent)
