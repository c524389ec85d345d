"""What the cloud tier reads inside a compute lab host (``LabHost.call``).

Each function runs in a child of the lab host's request server, as
root, and returns JSON values. Only the standard library and libvirt
are imported: a module imported here is imported under emulation.
"""

import os

import libvirt

SYSTEM_URI = 'qemu:///system'
PID_DIR = '/run/libvirt/qemu'


def domain(name):
    """The running domain ``name`` as nova's driver defined it.

    ``{'xml': live domain XML, 'pid': its QEMU process, 'uuid': ...,
    'active': ..., 'id': libvirt's domain id (-1 when not running)}``;
    None when libvirt has no domain of that name here.
    """
    conn = libvirt.open(SYSTEM_URI)
    try:
        try:
            dom = conn.lookupByName(name)
        except libvirt.libvirtError:
            return None
        xml = dom.XMLDesc(0)
        uuid = dom.UUIDString()
        active = bool(dom.isActive())
        domain_id = dom.ID()
    finally:
        conn.close()
    pid = None
    try:
        with open(os.path.join(PID_DIR, f'{name}.pid')) as f:
            pid = int(f.read().strip())
    except (FileNotFoundError, ValueError):
        pass
    return {'xml': xml, 'pid': pid, 'uuid': uuid, 'active': active,
            'id': domain_id}


def cells_memory_kib():
    """{node: memory in KiB} of libvirt's host cells, as nova records them.

    nova-compute takes each NUMA cell's memory from libvirt's
    capabilities; a live migration's source ranks the destination's nodes
    by it when it cannot see their free memory.
    """
    from xml.etree import ElementTree

    conn = libvirt.open(SYSTEM_URI)
    try:
        caps = ElementTree.fromstring(conn.getCapabilities())
    finally:
        conn.close()
    return {int(cell.get('id')): int(cell.findtext('memory'))
            for cell in caps.findall('./host/topology/cells/cell')}


def arrivals_handled(state_dir):
    """{uuid: domain id} of the live-migration arrivals our agent handled.

    The domain id tells one arrival of a guest from its next one here.
    """
    import json

    try:
        with open(os.path.join(state_dir, 'arrivals.json')) as f:
            return json.load(f)['handled']
    except FileNotFoundError:
        return {}
