"""The ``hw:numa_policy`` contract: names, meanings and one resolver.

Everything here is pure: flavor extra specs and image properties (plain
dicts) in, a typed :class:`NumaPolicy` or a clear exception out. The nova API
validator, the scheduler plugins, the libvirt driver extension and the agent
all read a flavor through :func:`resolve`, so they can never disagree about
what an instance asked for.
"""

import dataclasses
import enum

from nova_numa_policy.contracts import exception
from nova_numa_policy.contracts import tiers

POLICY_KEY = 'hw:numa_policy'
NIC_LOCALITY_KEY = 'hw:numa_nic_locality'
IO_INTENSITY_KEY = 'hw:numa_io_intensity'
OUR_KEYS = (POLICY_KEY, NIC_LOCALITY_KEY, IO_INTENSITY_KEY,
            *tiers.TIER_KEYS)

# Nova only copies image properties that are ImageMetaProps fields into the
# request spec the scheduler sees; these would be invisible to our filters
# and weighers, so they are refused rather than half honoured.
UNSUPPORTED_IMAGE_PROPERTIES = (
    'hw_numa_policy', 'hw_numa_nic_locality', 'hw_numa_io_intensity',
    'hw_numa_memory_tiers', 'hw_numa_top_tier_percent')


# nova's own image properties that can make it own a guest's NUMA topology
# (hw_cpu_policy only when dedicated or mixed). Adapters that read images
# as nova objects copy exactly these into the dict resolve() takes.
NOVA_TOPOLOGY_IMAGE_PROPERTIES = ('hw_numa_nodes', 'hw_mem_page_size',
                                  'hw_cpu_policy')


class Placement(str, enum.Enum):
    """Where an instance's memory is put when it is allocated."""

    FIRST_TOUCH = 'first-touch'
    INTERLEAVE = 'interleave'
    HOME = 'home'


class NicLocality(str, enum.Enum):
    """How much the scheduler cares that the instance sits near its NIC."""

    REQUIRED = 'required'
    PREFERRED = 'preferred'
    NONE = 'none'


class IoIntensity(str, enum.Enum):
    """Whether the instance is network-bound (seed 002's I/O-intensive)."""

    AUTO = 'auto'
    LOW = 'low'
    HIGH = 'high'


@dataclasses.dataclass(frozen=True)
class PolicySpec:
    """One documented value of ``hw:numa_policy``."""

    value: str
    placement: Placement | None  # None: chosen at run time (``auto``)
    carrefour: bool
    auto: bool
    research_name: str
    meaning: str


POLICY_SPECS = (
    PolicySpec(
        'first-touch', Placement.FIRST_TOUCH, False, False, 'first-touch',
        'Memory is allocated on the node of the vCPU that first touches it; '
        'the agent keeps vCPUs near their memory.'),
    PolicySpec(
        'interleave', Placement.INTERLEAVE, False, False, 'round-4K',
        'Guest memory is spread page by page over the nodes the instance '
        'may use.'),
    PolicySpec(
        'home', Placement.HOME, False, False, 'round-1G',
        'Memory and vCPUs are packed on the fewest, least loaded nodes '
        '(the home nodes).'),
    PolicySpec(
        'first-touch+carrefour', Placement.FIRST_TOUCH, True, False,
        'first-touch + Carrefour',
        'First-touch, plus hot pages migrated at run time: spread when '
        'memory controllers are imbalanced, moved to the accessing node '
        'when the interconnect is the bottleneck.'),
    PolicySpec(
        'interleave+carrefour', Placement.INTERLEAVE, True, False,
        'round-4K + Carrefour',
        'Interleave, plus Carrefour hot-page migration at run time.'),
    PolicySpec(
        'auto', None, False, True, 'automatic choice',
        'The agent measures the access imbalance and picks first-touch '
        '(< 85 %), first-touch+carrefour (85-130 %) or '
        'interleave+carrefour (> 130 %), revisiting as the workload '
        'changes.'),
)
POLICIES = {spec.value: spec for spec in POLICY_SPECS}
POLICY_VALUES = tuple(POLICIES)
NIC_LOCALITY_VALUES = tuple(member.value for member in NicLocality)
IO_INTENSITY_VALUES = tuple(member.value for member in IoIntensity)


@dataclasses.dataclass(frozen=True)
class NumaPolicy:
    """What one instance asked for, resolved and typed."""

    value: str
    nic_locality: NicLocality = NicLocality.NONE
    io_intensity: IoIntensity = IoIntensity.AUTO
    # True when nova owns the instance's NUMA topology; the policy then only
    # applies inside the host nodes nova chose (see doc/source/policy.rst).
    within_nova_topology: bool = False
    # Which memory tiers may hold the guest's memory (contracts/tiers.py).
    memory_tiers: tiers.MemoryTiers = tiers.ANY

    @property
    def spec(self):
        return POLICIES[self.value]

    @property
    def placement(self):
        return self.spec.placement

    @property
    def carrefour(self):
        return self.spec.carrefour

    @property
    def auto(self):
        return self.spec.auto

    @property
    def needs_locality_signal(self):
        """Carrefour and auto decide from measured accesses per node."""
        return self.spec.carrefour or self.spec.auto


# The only value compatible with a NUMA topology nova owns: nova's strict
# per-cell binding already allocates every page on the guest cell's node.
VALUES_COMPATIBLE_WITH_NOVA_TOPOLOGY = ('first-touch',)

# The tier modes compatible with a NUMA topology nova owns. ``any`` is
# nova's own behaviour. ``top`` asks nothing nova's binding does not
# already give: nova/virt/hardware.py, _numa_fit_instance_cell (nova 34),
# refuses a host cell with fewer CPUs than the guest cell has vCPUs
# (len(instance_cell.cpuset) > len(host_cell.cpuset), and the same with
# pcpuset for pinned cells), and the libvirt driver reports a CPU-less
# node with an empty cpuset and pcpuset (_get_host_numa_topology), so a
# lower-tier node never holds a guest cell that has a vCPU. nova does fit
# a cell without vCPUs (hw:numa_cpus.N=^0) on a CPU-less node, but its
# libvirt driver writes that cell as <cell cpus=''>, which libvirt (9.0)
# refuses when the guest is defined, so no such guest runs. ``tiered``
# is refused: the strict per-cell binding keeps every page on one node.
TIER_MODES_COMPATIBLE_WITH_NOVA_TOPOLOGY = (tiers.TierMode.ANY,
                                            tiers.TierMode.TOP)


def _choice(specs, key, allowed, default):
    value = specs.get(key)
    if value is None:
        return default
    value = str(value).strip()
    if value not in allowed:
        raise exception.InvalidNumaPolicy(key, value, allowed)
    return value


def nova_topology_reasons(extra_specs, image_props=None):
    """Return the settings that make nova own the instance's NUMA topology.

    Nova builds a guest NUMA topology, and binds each guest cell strictly to
    one host node, when any of these is present; an empty list means the
    instance is left to the kernel's default placement by nova.
    """
    image_props = image_props or {}
    reasons = []
    for key in ('hw:numa_nodes', 'hw:mem_page_size'):
        if key in extra_specs:
            reasons.append(f'{key}={extra_specs[key]}')
    cpu_policy = extra_specs.get('hw:cpu_policy')
    if cpu_policy in ('dedicated', 'mixed'):
        reasons.append(f'hw:cpu_policy={cpu_policy}')
    for key, value in extra_specs.items():
        if (key.startswith('resources') and key.endswith(':PCPU')
                and str(value).strip() not in ('', '0')):
            reasons.append(f'{key}={value}')
    for prop in ('hw_numa_nodes', 'hw_mem_page_size'):
        if prop in image_props:
            reasons.append(f'image {prop}={image_props[prop]}')
    if image_props.get('hw_cpu_policy') in ('dedicated', 'mixed'):
        reasons.append(f"image hw_cpu_policy={image_props['hw_cpu_policy']}")
    return reasons


def _refuse_image_properties(image_props):
    present = [p for p in UNSUPPORTED_IMAGE_PROPERTIES if p in image_props]
    if present:
        flavor_keys = ', '.join(
            'hw:' + prop[len('hw_'):] for prop in present)
        raise exception.UnsupportedImageProperty(
            f"Image properties {', '.join(present)} are not supported: "
            f"nova's scheduler does not see image properties it does not "
            f"know, so the policy could not be honoured at placement. Set "
            f"{flavor_keys} on the flavor instead.")


def resolve(extra_specs, image_props=None, default=None):
    """Resolve a flavor's extra specs (and image properties) to a policy.

    :param extra_specs: the flavor's extra specs, a mapping of str to str.
    :param image_props: the image's properties, a mapping, or None.
    :param default: the ``hw:numa_policy`` value to assume when the flavor
        names none, or None for "no policy" (nova's own behaviour).
    :returns: a :class:`NumaPolicy`, or None when the instance has none.
    :raises InvalidNumaPolicy: a value outside the documented set.
    :raises NumaPolicyConflict: a policy or tier mode nova's own topology
        would contradict.
    :raises ConflictingNumaSpecs: our own keys contradict each other.
    :raises UnsupportedImageProperty: the image asks for a policy.
    """
    extra_specs = extra_specs or {}
    _refuse_image_properties(image_props or {})
    value = _choice(extra_specs, POLICY_KEY, POLICY_VALUES, None)
    nic = _choice(extra_specs, NIC_LOCALITY_KEY, NIC_LOCALITY_VALUES, None)
    io = _choice(extra_specs, IO_INTENSITY_KEY, IO_INTENSITY_VALUES, None)
    # Before the early return below: a percent alone is an error, not
    # "no policy".
    memory_tiers = tiers.resolve_tiers(extra_specs)
    names_tiers = extra_specs.get(tiers.MEMORY_TIERS_KEY) is not None
    reasons = nova_topology_reasons(extra_specs, image_props)
    if value is None and nic is None and io is None and not names_tiers:
        # The operator's default never overrides a topology nova owns.
        if default is None or reasons:
            return None
        value = _choice({POLICY_KEY: default}, POLICY_KEY, POLICY_VALUES,
                        None)
    # A companion key alone asks for the kernel's own default placement,
    # which is first-touch, plus the scheduling preference (or the memory
    # tiers) it names.
    value = value or Placement.FIRST_TOUCH.value

    if reasons and value not in VALUES_COMPATIBLE_WITH_NOVA_TOPOLOGY:
        # Short: nova keeps 255 characters of an instance's fault message,
        # where the scheduler's refusal of the flavor reaches the user.
        raise exception.NumaPolicyConflict(
            f"{POLICY_KEY}={value} cannot be combined with "
            f"{', '.join(reasons)}: nova then binds each guest NUMA node to "
            f"one host node. Use {POLICY_KEY}=first-touch, or remove "
            f"{', '.join(r.split('=')[0] for r in reasons)}.")
    if (reasons and memory_tiers.mode
            not in TIER_MODES_COMPATIBLE_WITH_NOVA_TOPOLOGY):
        # Short, for the same reason as above.
        raise exception.NumaPolicyConflict(
            f"{tiers.MEMORY_TIERS_KEY}={memory_tiers.mode.value} cannot be "
            f"combined with {', '.join(reasons)}: nova then keeps each "
            f"guest NUMA node's memory on one host node. Use "
            f"{tiers.MEMORY_TIERS_KEY}=top, or remove "
            f"{', '.join(r.split('=')[0] for r in reasons)}.")
    return NumaPolicy(
        value=value,
        nic_locality=NicLocality(nic or NicLocality.NONE.value),
        io_intensity=IoIntensity(io or IoIntensity.AUTO.value),
        within_nova_topology=bool(reasons),
        memory_tiers=memory_tiers,
    )
