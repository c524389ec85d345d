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

    ``{'xml': live domain XML, 'pid': its QEMU process, 'uuid': ...}``;
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
    finally:
        conn.close()
    pid = None
    try:
        with open(os.path.join(PID_DIR, f'{name}.pid')) as f:
            pid = int(f.read().strip())
    except (FileNotFoundError, ValueError):
        pass
    return {'xml': xml, 'pid': pid, 'uuid': uuid, 'active': active}


def domain_names():
    """The names of every domain libvirt knows here."""
    conn = libvirt.open(SYSTEM_URI)
    try:
        return sorted(d.name() for d in conn.listAllDomains())
    finally:
        conn.close()
