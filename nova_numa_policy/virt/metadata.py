"""The domain metadata element that records an instance's NUMA policy.

The driver extension writes it into the domain XML at boot; the agent
reads it back, also right after its own restart, so the policy it enforces
is the one nova resolved from the flavor when the guest was defined, without
asking nova's API. Hard reboot, rebuild, resize and migrations regenerate the
XML through the driver, which writes the element again.

Pure: strings in, strings or values out. No nova, no libvirt.
"""

import dataclasses
from xml.etree import ElementTree

from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import tiers

NAMESPACE = 'http://openstack.org/xmlns/nova-numa-policy/1.0'
PREFIX = 'numapolicy'
ELEMENT = 'policy'
# The record's ``chosen-by`` when a live migration's source wrote the
# placement for this host, blind to its load and free memory; absent when
# the host's own driver chose it at boot.
CHOSEN_BY_MIGRATION_SOURCE = 'migration-source'
# nova's own instance metadata; since namespace 1.1 its <nova:flavor>
# carries <nova:extraSpecs> (seen in nova 33 and 34), older ones do not.
NOVA_NAMESPACES = ('http://openstack.org/xmlns/libvirt/nova/1.1',
                   'http://openstack.org/xmlns/libvirt/nova/1.0')
# So the element reads numapolicy:policy rather than ns0:policy.
ElementTree.register_namespace(PREFIX, NAMESPACE)


@dataclasses.dataclass(frozen=True)
class PolicyRecord:
    """What the driver decided for one guest when it was defined."""

    policy: policy.NumaPolicy
    # The <numatune> memory mode and nodes written at boot, if any.
    mode: str | None = None
    nodes: frozenset = frozenset()
    # The CPUs nova allowed the guest (its <vcpu cpuset>) before the
    # driver narrowed it to the policy's nodes; empty: nova set no bound;
    # None: a record from before this was recorded. The agent keeps every
    # pin inside it.
    allowed_cpus: frozenset | None = None
    # True when a live migration's source chose ``mode`` and ``nodes``
    # for this host without seeing its load: the agent here takes the
    # home decision again once the guest has arrived.
    chosen_by_source: bool = False


def format_ids(ids):
    """Node or CPU ids as libvirt reads them: ``0,1,5``."""
    return ','.join(str(n) for n in sorted(ids))


def _parse_nodes(text):
    return frozenset(int(n) for n in text.split(',') if n.strip())


def render(record):
    """Return the element as XML text, for virDomainSetMetadata or nova."""
    pol = record.policy
    element = ElementTree.Element(f'{{{NAMESPACE}}}{ELEMENT}', {
        'value': pol.value,
        'nic-locality': pol.nic_locality.value,
        'io-intensity': pol.io_intensity.value,
        'within-nova-topology': str(pol.within_nova_topology).lower(),
    })
    # Only when asked for, so that the element of a guest that names no
    # tier is what it was before tiers existed.
    if pol.memory_tiers != tiers.ANY:
        element.set('memory-tiers', pol.memory_tiers.mode.value)
    if pol.memory_tiers.top_tier_percent is not None:
        element.set('top-tier-percent',
                    str(pol.memory_tiers.top_tier_percent))
    if record.mode:
        element.set('mode', record.mode)
        element.set('nodeset', format_ids(record.nodes))
    if record.allowed_cpus is not None:
        # Written even when empty: "no bound" is not "not recorded".
        element.set('allowed-cpus', format_ids(record.allowed_cpus))
    if record.chosen_by_source:
        element.set('chosen-by', CHOSEN_BY_MIGRATION_SOURCE)
    return ElementTree.tostring(element, encoding='unicode')


def parse_element(element):
    """Read our element; raise NumaPolicyError if its values are invalid."""
    specs = {policy.POLICY_KEY: element.get('value'),
             policy.NIC_LOCALITY_KEY: element.get('nic-locality'),
             policy.IO_INTENSITY_KEY: element.get('io-intensity'),
             tiers.MEMORY_TIERS_KEY: element.get('memory-tiers'),
             tiers.TOP_TIER_PERCENT_KEY: element.get('top-tier-percent')}
    resolved = policy.resolve({k: v for k, v in specs.items() if v})
    if resolved is None:
        return None
    within = element.get('within-nova-topology') == 'true'
    resolved = dataclasses.replace(resolved, within_nova_topology=within)
    allowed = element.get('allowed-cpus')
    return PolicyRecord(
        resolved, element.get('mode'),
        _parse_nodes(element.get('nodeset') or ''),
        None if allowed is None else _parse_nodes(allowed),
        element.get('chosen-by') == CHOSEN_BY_MIGRATION_SOURCE)


_RECORD_PATH = f'./metadata/{{{NAMESPACE}}}{ELEMENT}'


def has_record(domain_root):
    """Whether a parsed domain XML holds our element, valid or not."""
    return domain_root.find(_RECORD_PATH) is not None


def find_record(domain_root):
    """Our record in a parsed domain XML, or None."""
    element = domain_root.find(_RECORD_PATH)
    return None if element is None else parse_element(element)


def _nova_pairs(domain_root, path, item):
    """{name: text} of nova's metadata at ``instance/path``, or None.

    ``path`` and ``item`` are element names without a namespace; every
    nova metadata namespace version is tried.
    """
    for ns in NOVA_NAMESPACES:
        steps = '/'.join(f'{{{ns}}}{step}' for step in path.split('/'))
        found = domain_root.find(f'./metadata/{{{ns}}}instance/{steps}')
        if found is not None:
            return {e.get('name'): (e.text or '')
                    for e in found.findall(f'{{{ns}}}{item}')}
    return None


def is_nova_instance(domain_root):
    """Whether nova's own instance metadata is in a parsed domain XML."""
    return any(domain_root.find(f'./metadata/{{{ns}}}instance') is not None
               for ns in NOVA_NAMESPACES)


def find_nova_flavor_specs(domain_root):
    """Flavor extra specs from nova's own metadata, or None if absent."""
    return _nova_pairs(domain_root, 'flavor/extraSpecs', 'extraSpec')


def find_nova_image_props(domain_root):
    """Image properties from nova's own metadata ({} if absent)."""
    return _nova_pairs(domain_root, 'image/properties', 'property') or {}
