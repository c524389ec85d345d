"""A live-migrated guest of ours gets a placement made for its destination.

nova rewrites ``<numatune>`` and ``<vcpupin>`` on live migration only for
guests with a NUMA topology of its own; for ours it rewrites only
``<vcpu cpuset>`` (to the destination's ``cpu_shared_set``). Left alone,
the source's nodeset, pins and record would travel to a host whose nodes
and CPUs may not exist, be reserved, or lie far from its NIC, and a
memory mode libvirt cannot change while the guest runs (``interleave``,
``preferred``) could never be corrected there.

So the source rewrites the XML it sends: the boot decision
(:func:`nova_numa_policy.decisions.enforcement.boot_plan`) is taken again for
the destination as nova records it, and this module writes that decision
into the domain XML nova prepared, in place of the source's placement.
Pure: XML text and plain values in, XML text out.
"""

from lxml import etree

from nova_numa_policy.virt import metadata

RECORD_TAG = f'{{{metadata.NAMESPACE}}}{metadata.ELEMENT}'


def _child(parent, tag):
    found = parent.find(tag)
    if found is None:
        found = etree.SubElement(parent, tag)
    return found


def _drop(parent, path):
    for element in parent.findall(path):
        element.getparent().remove(element)


def _write_memory(root, tune):
    # Every <numatune> of a guest without a nova topology is ours: the
    # driver wrote it at boot, or the agent changed its nodeset since.
    _drop(root, './numatune')
    if tune is not None and tune.mode:
        memory = etree.SubElement(etree.SubElement(root, 'numatune'),
                                  'memory')
        memory.set('mode', tune.mode)
        memory.set('nodeset', metadata.format_ids(tune.nodes))


def _write_cpus(root, tune, allowed):
    vcpu = root.find('./vcpu')
    cpus = tune.cpus if tune is not None and tune.cpus else allowed
    if vcpu is not None:
        if cpus:
            vcpu.set('cpuset', metadata.format_ids(cpus))
        else:
            vcpu.attrib.pop('cpuset', None)
    # Pins are the driver's (at boot) or the agent's (since, the I/O
    # threads' with the emulator's): the source's CPUs, which mean nothing
    # on the destination. Without them the emulator and its I/O threads
    # start on <vcpu cpuset> there.
    cputune = root.find('./cputune')
    if cputune is not None:
        _drop(cputune, './vcpupin')
        _drop(cputune, './emulatorpin')
        _drop(cputune, './iothreadpin')
    pins = tune.vcpu_pins if tune is not None else ()
    if pins:
        cputune = _child(root, 'cputune')
        for number, pinned in enumerate(pins):
            etree.SubElement(cputune, 'vcpupin', vcpu=str(number),
                             cpuset=metadata.format_ids(pinned))
    if cputune is not None and len(cputune) == 0 and not cputune.attrib:
        root.remove(cputune)


def _write_record(root, record, tune, allowed):
    old = root.find(f'./metadata/{RECORD_TAG}')
    # Marked as the source's choice: the destination's agent re-takes it
    # with the load and free memory the source could not see.
    new = etree.fromstring(metadata.render(metadata.PolicyRecord(
        record.policy, tune.mode if tune is not None else None,
        tune.nodes if tune is not None else frozenset(), allowed,
        chosen_by_source=True)))
    old.getparent().replace(old, new)


def retarget(domain_xml, record, tune, allowed):
    """``domain_xml`` with ``tune`` in place of the source's placement.

    ``record`` is the guest's policy record as the source holds it,
    ``tune`` the decision for the destination (None: the kernel's
    default) and ``allowed`` the CPUs nova allows the guest there (empty:
    no bound); the record written says both, so the destination's agent
    keeps its own pins inside the destination's bound, and that the
    source chose this placement (``chosen-by``).
    """
    root = etree.fromstring(domain_xml)
    _write_memory(root, tune)
    _write_cpus(root, tune, frozenset(allowed))
    _write_record(root, record, tune, frozenset(allowed))
    return etree.tostring(root, encoding='unicode')
