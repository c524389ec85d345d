"""QEMU domains defined the way nova's libvirt driver defines them.

Built on this machine (nova is installed in the test environment, and
under emulation importing it in the lab host would cost half a minute)
from nova's own guest config classes, with nova's instance metadata (the
flavor's extra specs included), then decorated by the driver extension's
own code (:func:`nova_numa_policy.virt.driver.write_policy`) from the
boot decision it makes on the lab host's real capabilities.

Departures from a nova guest, each for the lab: ``virt_type`` qemu
(TCG, as ``[libvirt] virt_type = qemu``), no disk and no NIC (nothing is
booted; the tests look at the guest's memory and threads), and memory
allocated at start (``<allocation mode='immediate'/>``) so every page
exists and has a node the moment the domain runs.
"""

import datetime
import uuid as uuid_mod

from nova.virt.libvirt import config as vconfig
from nova.virt.libvirt import designer

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import policy
from nova_numa_policy.decisions import enforcement
from nova_numa_policy.virt import driver
from nova_numa_policy.virt import metadata

LAB_FLAVOR = 'lab.numa'


def _nova_metadata(name, vcpus, memory_mb, extra_specs):
    meta = vconfig.LibvirtConfigGuestMetaNovaInstance()
    meta.package = 'nova-numa-policy lab'
    meta.name = name
    meta.creationTime = datetime.datetime(2026, 1, 1).timestamp()
    meta.roottype = 'image'
    meta.rootid = str(uuid_mod.UUID(int=0))
    image = vconfig.LibvirtConfigGuestMetaImage()
    image.uuid = meta.rootid
    image.image_meta = None
    meta.image = image
    owner = vconfig.LibvirtConfigGuestMetaNovaOwner()
    owner.userid = owner.projectid = 'lab'
    owner.username = owner.projectname = 'lab'
    meta.owner = owner
    flavor = vconfig.LibvirtConfigGuestMetaNovaFlavor()
    flavor.name = flavor.id = LAB_FLAVOR
    flavor.memory = memory_mb
    flavor.vcpus = vcpus
    flavor.disk = flavor.swap = flavor.ephemeral = 0
    flavor.extra_specs = dict(extra_specs)
    meta.flavor = flavor
    return meta


def nova_guest(name, vcpus, memory_mb, extra_specs, uuid=None,
               iothreads=0):
    """nova's guest config for a flavor, before the driver extension.

    ``iothreads``: QEMU I/O threads (nova 34 gives every guest one).
    """
    guest = vconfig.LibvirtConfigGuest()
    guest.virt_type = 'qemu'
    guest.name = name
    guest.uuid = uuid or str(uuid_mod.uuid4())
    guest.memory = memory_mb * 1024
    guest.vcpus = vcpus
    guest.os_type = 'hvm'
    guest.os_mach_type = 'q35'
    guest.features = [vconfig.LibvirtConfigGuestFeatureACPI(),
                      vconfig.LibvirtConfigGuestFeatureAPIC()]
    guest.membacking = vconfig.LibvirtConfigGuestMemoryBacking()
    guest.membacking.allocateimmediate = True
    if iothreads:
        guest.iothreads = iothreads
    guest.metadata.append(_nova_metadata(name, vcpus, memory_mb,
                                         extra_specs))
    return guest


def kept_by_the_driver(guest, extra_specs, cpus):
    """``guest`` kept to ``cpus`` as the driver extension keeps a guest.

    nova's own bound (its ``<vcpu cpuset>``, none here) goes into the
    policy record first, as ``driver.write_policy`` does: the agent may
    still move the guest anywhere nova allows.
    """
    record = metadata.PolicyRecord(policy.resolve(extra_specs),
                                   allowed_cpus=frozenset(guest.cpuset or ()))
    guest.metadata.append(driver.NumaPolicyMetadata(record))
    guest.cpuset = set(cpus)
    return guest


def vf_interface(mac, vf_address):
    """An SR-IOV VF port as nova's VIF driver writes one (``direct``).

    nova's ``vnic_type=direct``: ``<interface type='hostdev'>`` whose
    source is the VF's PCI address, libvirt binding it to vfio-pci.
    """
    conf = vconfig.LibvirtConfigGuestInterface()
    conf.mac_addr = mac
    designer.set_vif_host_backend_hw_veb(conf, 'hostdev', vf_address, None)
    return conf


def physnet_nic(physnet, node):
    """A NIC as nova's ``[neutron_physnet_<physnet>] numa_nodes`` says."""
    return backend.NicInfo(name=physnet, numa_node=node, physnet=physnet)


def host_topology(capabilities_xml, nics=(), memory_tiers=None):
    """The topology the driver extension sees in libvirt's capabilities.

    ``memory_tiers``: the lab host's, as the extension reads them at boot.
    """
    return driver.host_topology(capabilities_xml, nics, memory_tiers)


def define_xml(name, vcpus, memory_mb, extra_specs, capabilities_xml,
               usage=(), instances=(), uuid=None, nics=(), memory_tiers=None):
    """(domain XML, boot plan) for a nova guest of this flavor here.

    ``nics`` are what nova's physnet options tell the driver extension;
    ``memory_tiers`` what the lab host's kernel says of its tiers (a
    :class:`~nova_numa_policy.contracts.backend.MemoryTiers`), None for
    none.
    """
    guest = nova_guest(name, vcpus, memory_mb, extra_specs, uuid)
    resolved = policy.resolve(extra_specs)
    plan = None
    if resolved is not None:
        plan = enforcement.boot_plan(
            resolved, host_topology(capabilities_xml, nics, memory_tiers),
            usage=usage, memory_mb=memory_mb, vcpus=vcpus,
            instances=instances)
        driver.write_policy(guest, resolved, plan)
    return guest.to_xml(), plan


def policy_specs(value):
    """The extra specs of a flavor asking for ``hw:numa_policy=value``."""
    return {policy.POLICY_KEY: value}
