"""What the agent needs from one domain's XML: pure parsing.

The requested policy comes, in order of trust, from our own metadata element
(written by the driver extension when nova defined the domain), then from
the flavor extra specs nova records in its own ``<nova:flavor>`` metadata
(nova 33 and later), resolved with the same :func:`policy.resolve` the
driver uses. Both survive an agent restart: they live in the domain.
"""

import dataclasses
from xml.etree import ElementTree

from oslo_log import log as logging

from nova_numa_policy.contracts import exception
from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import scope
from nova_numa_policy.virt import metadata

from agent.sensors import sysfs

LOG = logging.getLogger(__name__)

SOURCE_AGENT_METADATA = 'numa-policy-metadata'
SOURCE_NOVA_FLAVOR = 'nova-flavor-metadata'


@dataclasses.dataclass(frozen=True)
class DomainFacts:
    uuid: str
    name: str
    memory_mb: int
    vcpus: int
    requested: policy.NumaPolicy | None
    # Where ``requested`` came from, or why it is unknown.
    source: str | None
    memory_mode: str | None
    memory_nodes: frozenset
    hands_off_reason: str | None
    # The CPUs nova allows the guest; empty: no bound.
    allowed_cpus: frozenset = frozenset()
    # Whether a live migration's source chose its placement here, blind
    # to this host's load (the record's chosen-by).
    chosen_by_source: bool = False


# Devices whose NUMA node the hardware fixes: moving the guest away from
# it costs every DMA, and nova placed it for the device.
_PASSTHROUGH = ('./devices/hostdev', "./devices/interface[@type='hostdev']",
                "./devices/interface[@type='vdpa']")


def _hands_off(root, requested, agent_scope):
    """Why the agent must not touch this guest's placement, or None."""
    out_of_scope = scope.unmanaged_reason(
        agent_scope, requested=requested,
        nova_defined=(metadata.is_nova_instance(root)
                      or metadata.has_record(root)),
        passthrough=any(root.find(p) is not None for p in _PASSTHROUGH))
    if out_of_scope:
        return out_of_scope
    if root.find('./cpu/numa/cell') is not None:
        return 'nova owns the guest NUMA topology'
    if root.find('./numatune/memnode') is not None:
        return 'nova owns the per-cell memory binding'
    if root.find('./memoryBacking/locked') is not None:
        return 'guest memory is locked'
    if requested is not None and requested.within_nova_topology:
        return 'nova owns the NUMA topology of this flavor'
    return None


def _requested(root):
    try:
        record = metadata.find_record(root)
        if record is not None:
            return record.policy, SOURCE_AGENT_METADATA
        specs = metadata.find_nova_flavor_specs(root)
        if specs is not None:
            resolved = policy.resolve(specs, _image_props(root))
            if resolved is not None:
                return resolved, SOURCE_NOVA_FLAVOR
    except exception.NumaPolicyError as exc:
        # A flavor edited after the guest was defined, or an image property
        # we refuse: enforce nothing rather than a guess, and say why.
        return None, f'unusable: {exc}'
    return None, None


def _image_props(root):
    # Our own hw_numa_* properties are refused by resolve(); nova's NUMA
    # ones (hw_numa_nodes...) matter for the conflict check.
    return {k: v for k, v in metadata.find_nova_image_props(root).items()
            if k not in policy.UNSUPPORTED_IMAGE_PROPERTIES}


_UNITS_PER_MIB = {'b': 1 / 1024 / 1024, 'bytes': 1 / 1024 / 1024,
                  'k': 1 / 1024, 'KiB': 1 / 1024, 'M': 1, 'MiB': 1,
                  'G': 1024, 'GiB': 1024}


def _mb(element):
    if element is None or not (element.text or '').strip():
        return 0
    return int(int(element.text) * _UNITS_PER_MIB.get(
        element.get('unit', 'KiB'), 1 / 1024))


def _record(root):
    try:
        return metadata.find_record(root)
    except exception.NumaPolicyError:
        return None


def _allowed_cpus(root):
    """nova's bound on the guest's CPUs: recorded at boot, else live.

    The driver extension records ``<vcpu cpuset>`` as nova wrote it
    before narrowing it (empty: nova set none). A guest without that
    record (booted before the extension or before it recorded this, or
    without a policy) is held to its ``<vcpu cpuset>``: nova's own, or the
    driver's narrower one, never wider than nova's.
    """
    record = _record(root)
    if record is not None and record.allowed_cpus is not None:
        return record.allowed_cpus
    vcpu = root.find('./vcpu')
    return libvirt_cpuset(vcpu.get('cpuset') if vcpu is not None else '')


def _chosen_by_source(root):
    record = _record(root)
    return record is not None and record.chosen_by_source


def libvirt_cpuset(text):
    """libvirt's cpuset syntax: CPUs and ranges, ``^N`` excluding N."""
    parts = [p.strip() for p in (text or '').split(',')]
    excluded = [p[1:] for p in parts if p.startswith('^')]
    included = [p for p in parts if not p.startswith('^')]
    return (sysfs.parse_cpulist(','.join(included))
            - sysfs.parse_cpulist(','.join(excluded)))


def parse(xml, agent_scope=scope.Scope()):
    """The facts of one domain's XML; ``agent_scope`` is what we manage."""
    root = ElementTree.fromstring(xml)
    requested, source = _requested(root)
    tune = root.find('./numatune/memory')
    vcpu = root.find('./vcpu')
    return DomainFacts(
        uuid=root.findtext('./uuid'),
        name=root.findtext('./name'),
        memory_mb=_mb(root.find('./memory')),
        vcpus=int(vcpu.text) if vcpu is not None else 0,
        requested=requested,
        source=source,
        # libvirt writes mode='strict' explicitly; a <memory> without a
        # mode is strict too.
        memory_mode=(tune.get('mode', 'strict')
                     if tune is not None else None),
        memory_nodes=(sysfs.parse_cpulist(tune.get('nodeset'))
                      if tune is not None else frozenset()),
        hands_off_reason=_hands_off(root, requested, agent_scope),
        allowed_cpus=_allowed_cpus(root),
        chosen_by_source=_chosen_by_source(root))
