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
        # Gone between the lookup and a read (a migration's source
        # undefines it as the move ends): not here either.
        try:
            dom = conn.lookupByName(name)
            xml = dom.XMLDesc(0)
            uuid = dom.UUIDString()
            active = bool(dom.isActive())
            domain_id = dom.ID()
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                return None
            raise
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


def kill_once_migrating(name, pattern, timeout):
    """SIGKILL what ``pattern`` matches once domain ``name`` migrates.

    Polls libvirt here for a job on the domain (a live migration's, on
    its source) and kills the processes at once, from inside the lab
    host: a migration of a small guest lasts seconds. Returns libvirt's
    figures of the job read just after the kill (whether it still ran,
    and its data done and left), or None if no job came in ``timeout``
    seconds.
    """
    import signal
    import subprocess
    import time

    conn = libvirt.open(SYSTEM_URI)
    try:
        dom = conn.lookupByName(name)
        deadline = time.monotonic() + timeout
        while dom.jobInfo()[0] == libvirt.VIR_DOMAIN_JOB_NONE:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)
        found = subprocess.run(['pgrep', '-f', pattern], capture_output=True,
                               text=True).stdout.split()
        for pid in found:
            os.kill(int(pid), signal.SIGKILL)
        stats = dom.jobStats()
    finally:
        conn.close()
    return {'killed': len(found),
            'job_running': stats.get('type') != libvirt.VIR_DOMAIN_JOB_NONE,
            'data_processed': stats.get('data_processed'),
            'data_remaining': stats.get('data_remaining')}


def job_running(name):
    """Whether libvirt runs a job (a migration, say) on domain ``name``."""
    conn = libvirt.open(SYSTEM_URI)
    try:
        try:
            dom = conn.lookupByName(name)
            return dom.jobInfo()[0] != libvirt.VIR_DOMAIN_JOB_NONE
        except libvirt.libvirtError:
            return False
    finally:
        conn.close()


def remove(name):
    """Destroy and undefine domain ``name`` if libvirt has it here.

    What nova lost track of: a fault scenario's leftover copy. Returns
    what there was: 'running', 'defined' (shut off), or None.
    """
    conn = libvirt.open(SYSTEM_URI)
    try:
        try:
            dom = conn.lookupByName(name)
        except libvirt.libvirtError:
            return None
        was = 'running' if dom.isActive() else 'defined'
        persistent = dom.isPersistent()
        if dom.isActive():
            dom.destroy()
        if persistent:
            dom.undefine()
        return was
    finally:
        conn.close()
