"""nova's libvirt driver, plus the guest's NUMA memory policy at boot.

On a compute node, run ``numa-policy-nova-driver-shim`` once and set
``[DEFAULT] compute_driver = numa_policy.NumaPolicyLibvirtDriver``: nova
loads ``nova.virt.<value>``, and the shim's module
``nova/virt/numa_policy.py`` makes this class reachable there
(:mod:`nova_numa_policy.virt.shim`).
For an instance whose flavor has ``hw:numa_policy`` and no NUMA topology
owned by nova, the domain XML nova generates gets the ``<numatune>`` the
policy asks for (libvirt cannot change a running guest's memory mode), and
every instance with a policy gets our metadata element recording it, which
the agent reads back. Everything else is nova's own XML, untouched.

The decision is :func:`nova_numa_policy.decisions.enforcement.boot_tune`; this
module only adapts nova's objects to it.
"""

import functools
import time
from xml.etree import ElementTree

from lxml import etree
from nova import objects
from nova import version as nova_version
from nova.virt.libvirt import config as vconfig
from nova.virt.libvirt import driver as libvirt_driver
from oslo_config import cfg
from oslo_log import log as logging

from nova_numa_policy.conf import policy as policy_conf
from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import exception
from nova_numa_policy.contracts import memtiers as tier_files
from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import topology
from nova_numa_policy.decisions import arrival
from nova_numa_policy.decisions import enforcement
from nova_numa_policy.virt import memtiers
from nova_numa_policy.virt import metadata
from nova_numa_policy.virt import migration

LOG = logging.getLogger(__name__)
CONF = cfg.CONF
policy_conf.register_opts(CONF)

# Major versions of nova whose _get_guest_config this extension wraps; it
# is exercised by the functional tests on 34. Outside the range the driver
# is plain nova (a warning says so) rather than a guess.
MIN_NOVA_MAJOR = 32
MAX_NOVA_MAJOR = 34
# getCellsFreeMemory answers in bytes.
_BYTES_PER_MB = 1024 * 1024


def nova_major():
    return int(nova_version.version_info.version_string().split('.')[0])


def supported(major):
    return MIN_NOVA_MAJOR <= major <= MAX_NOVA_MAJOR


class NumaPolicyMetadata(vconfig.LibvirtConfigObject):
    """Our metadata element, in the shape nova's guest config expects."""

    def __init__(self, record):
        super().__init__(root_name=metadata.ELEMENT,
                         ns_prefix=metadata.PREFIX, ns_uri=metadata.NAMESPACE)
        self.record = record

    def format_dom(self):
        return etree.fromstring(metadata.render(self.record))


def host_topology(caps_xml, nics=(), memory_tiers=None):
    """libvirt's host capabilities XML, and ``nics``, as our HostTopology.

    The raw XML, as the agent reads it: nova's parsed capabilities drop
    the firmware's distances. libvirt says nothing of memory tiers: each
    node's rank is the kernel's, ``memory_tiers`` (a
    :class:`~backend.MemoryTiers`; None: every node in the top tier).
    """
    host = backend.HostTopology(
        nodes=topology.nodes_from_capabilities(caps_xml), nics=tuple(nics))
    return tier_files.ranked(host, memory_tiers or backend.MemoryTiers())


def recorded_topology(numa_topology):
    """A compute node's NUMA cells as nova records them, as HostTopology.

    What a live migration's source knows of its destination: each cell's
    CPUs (shared and dedicated alike), memory, and the physnets nova's
    ``[neutron_physnet_<name>] numa_nodes`` put there (a physnet on exactly
    one cell is an uplink near it, as in :func:`physnet_nics`). nova keeps
    no distances; the SLIT defaults stand in.
    """
    cells = list(numa_topology.cells) if numa_topology else []
    physnets = {}
    for cell in cells:
        network = _field(cell, 'network_metadata', None)
        for physnet in (network.physnets if network else ()):
            physnets.setdefault(physnet, []).append(cell.id)
    return backend.HostTopology(
        nodes=topology.nodes(
            (cell.id, cell.cpuset | _field(cell, 'pcpuset', set()),
             cell.memory, {}) for cell in cells),
        nics=topology.physnet_nics(physnets))


def _field(obj, name, default):
    """An ovo field, or ``default`` where an older record lacks it."""
    return getattr(obj, name) if obj.obj_attr_is_set(name) else default


def physnet_nics(conf):
    """nova's ``[neutron_physnet_<name>] numa_nodes`` as NICs.

    nova-compute registers those groups when it starts.
    """
    physnets = {}
    for physnet in conf.neutron.physnets:
        try:
            physnets[physnet] = conf[f'neutron_physnet_{physnet}'].numa_nodes
        except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
            continue
    return topology.physnet_nics(physnets)


def uplinks(conf):
    """The host's uplinks as the agent found them, else nova's physnets.

    The agent's list (``[numa_policy] uplinks_file``) is what the
    scheduler saw in its report, so a guest that passed the NIC filter
    boots near the NIC the filter counted; nova's own physnet options are
    the fallback until the agent has written it.
    """
    path = conf.numa_policy.uplinks_file
    if path:
        try:
            with open(path) as f:
                return topology.parse_uplinks(f.read())
        except FileNotFoundError:
            LOG.debug('No uplinks from the agent at %s yet', path)
        except (OSError, ValueError) as exc:
            LOG.warning('Uplinks at %s unusable (%s); using nova\'s physnet '
                        'options', path, exc)
    return physnet_nics(conf)


# The agent writes the node loads every period; older than this many of
# its periods, they are not the loads the scheduler judged by.
FRESH_PERIODS = 3


def measured_loads(conf, now=time.time):
    """``{node id: load}`` the agent measured, if fresh; else ``{}``.

    The loads its last report gave the scheduler
    (:func:`topology.node_loads_path`, beside the uplinks), so that a
    ``home`` guest's nodes are chosen by the load the scheduler ranked
    nodes by. Without them (no agent, a stale or damaged file) every
    node reads idle and free memory decides, as nova's view alone would.
    """
    path = topology.node_loads_path(conf.numa_policy.uplinks_file)
    if not path:
        return {}
    try:
        with open(path) as f:
            loads, written_at, period = topology.parse_node_loads(f.read())
    except FileNotFoundError:
        LOG.debug('No node loads from the agent at %s yet', path)
        return {}
    except (OSError, ValueError) as exc:
        LOG.warning('Node loads at %s unusable (%s); choosing home nodes '
                    'by free memory', path, exc)
        return {}
    age = now() - written_at
    if age > FRESH_PERIODS * period:
        LOG.info('Node loads at %s are %.0f s old (the agent writes them '
                 'every %s s): choosing home nodes by free memory',
                 path, age, period)
        return {}
    return loads


def free_memory(conn, host, loads=None):
    """NodeUsage with libvirt's free memory per node; () if unavailable.

    Without it every home guest would pick the same node; the agent later
    corrects what a stale or missing figure got wrong. ``loads``: each
    node's measured load (:func:`measured_loads`), 0 where not given.
    """
    loads = loads or {}
    ids = [n.id for n in host.nodes]
    if not ids:
        return ()
    try:
        free = conn.getCellsFreeMemory(min(ids), max(ids) - min(ids) + 1)
    except Exception as exc:  # libvirtError, or a driver without the call
        LOG.debug('Free memory per NUMA node unavailable: %s', exc)
        return ()
    base = min(ids)
    return tuple(
        backend.NodeUsage(node_id=node_id, cpu_load=loads.get(node_id, 0.0),
                          memory_free_mb=free[node_id - base] // _BYTES_PER_MB)
        for node_id in ids if node_id - base < len(free))


def _vcpu_cpus(guest):
    try:
        return tuple(v.cpu for v in guest.get_vcpus_info() if v.cpu >= 0)
    except Exception as exc:  # libvirtError: the guest stopped meanwhile
        LOG.debug('vCPUs of %s unavailable: %s', guest.uuid, exc)
        return ()


def running_guests(host):
    """The running guests, each with the host CPUs its vCPUs last ran on.

    What the boot decision counts as load per node, so that a guest booted
    right after another sees it before the measured load does; () when
    libvirt cannot list them.
    """
    try:
        guests = host.list_guests(only_running=True)
    except Exception as exc:  # libvirtError
        LOG.debug('Running guests unavailable: %s', exc)
        return ()
    return tuple(backend.InstanceState(uuid=guest.uuid, requested_policy=None,
                                       vcpu_cpus=_vcpu_cpus(guest))
                 for guest in guests)


def image_properties(image_meta):
    props = image_meta.properties
    return {name: getattr(props, name)
            for name in policy.NOVA_TOPOLOGY_IMAGE_PROPERTIES
            if props.obj_attr_is_set(name)}


def ignored_image_properties(system_metadata):
    """Our image properties this instance's image carried, as 'key=value'.

    nova drops image properties that are not ImageMetaProps fields from
    the image_meta the scheduler and this driver see, but keeps every
    property in the instance's system metadata (``image_<name>``). They
    are not honoured (doc/source/policy.rst says why); this finds them so
    the boot says so instead of ignoring them in silence.
    """
    found = []
    for prop in policy.UNSUPPORTED_IMAGE_PROPERTIES:
        value = (system_metadata or {}).get('image_' + prop)
        if value is not None:
            found.append(f'{prop}={value}')
    return found


def apply_tune(guest, tune):
    if tune.mode:
        numatune = vconfig.LibvirtConfigGuestNUMATune()
        numatune.memory = vconfig.LibvirtConfigGuestNUMATuneMemory()
        numatune.memory.mode = tune.mode
        numatune.memory.nodeset = sorted(tune.nodes)
        guest.numatune = numatune
    if tune.cpus:
        # <vcpu cpuset> binds vCPUs and, with no <emulatorpin>, the
        # emulator threads too.
        guest.cpuset = set(tune.cpus)
    if tune.vcpu_pins:
        # <vcpupin> per vCPU, beside any quota nova put in <cputune>.
        if guest.cputune is None:
            guest.cputune = vconfig.LibvirtConfigGuestCPUTune()
        for vcpu, cpus in enumerate(tune.vcpu_pins):
            pin = vconfig.LibvirtConfigGuestCPUTuneVCPUPin()
            pin.id = vcpu
            pin.cpuset = set(cpus)
            guest.cputune.vcpupin.append(pin)


def write_policy(guest, resolved, plan):
    """Write ``resolved`` into nova's guest config; the tune written.

    ``plan`` is the boot decision (:func:`enforcement.boot_plan`), or
    None where nova owns the guest's NUMA placement: the guest then keeps
    nova's XML and only gets our metadata element.
    """
    tune = plan.tune if plan is not None else None
    # What nova allows the guest, recorded before the tune narrows it:
    # the agent keeps its own pins inside it for the guest's lifetime.
    allowed = frozenset(guest.cpuset or ())
    if tune is not None:
        apply_tune(guest, tune)
    record = metadata.PolicyRecord(
        resolved, tune.mode if tune else None,
        tune.nodes if tune else frozenset(), allowed)
    guest.metadata.append(NumaPolicyMetadata(record))
    return tune


def destination_allowed(migrate_data, record):
    """The CPUs nova allows the guest on a live migration's destination.

    The destination sends its ``cpu_shared_set`` (empty: no bound), which
    nova writes into ``<vcpu cpuset>``; every nova this extension supports
    sends it. Without it nova keeps the source's bound, and so do we.
    """
    if 'dst_cpu_shared_set_info' in migrate_data:
        return frozenset(migrate_data.dst_cpu_shared_set_info)
    return record.allowed_cpus or frozenset()


def retarget(domain_xml, record, topology, allowed, flavor):
    """(the XML to send, the decision) for a destination of ``topology``.

    ``record`` is the guest's policy record, ``allowed`` the CPUs nova
    allows it there (:func:`destination_allowed`) and ``flavor`` its
    flavor; the decision is the boot decision there, made without the
    destination's free memory and load, which the source cannot see,
    in a memory mode the destination's agent can still change
    (:func:`arrival.movable_on_arrival`).
    """
    plan = arrival.movable_on_arrival(enforcement.boot_plan(
        record.policy, topology, memory_mb=flavor.memory_mb,
        allowed_cpus=allowed or None, vcpus=flavor.vcpus,
        large_share=CONF.numa_policy.large_guest_share))
    return migration.retarget(domain_xml, record, plan.tune, allowed), plan


def record_of(domain_xml):
    try:
        return metadata.find_record(ElementTree.fromstring(domain_xml))
    except exception.NumaPolicyError:
        # An unusable record: nova's XML travels as nova made it.
        return None


class _RetargetedGuest:
    """nova's Guest, except that migrate() sends a retargeted XML."""

    def __init__(self, guest, retarget):
        self._guest = guest
        self._retarget = retarget

    def __getattr__(self, name):
        return getattr(self._guest, name)

    def migrate(self, *args, destination_xml=None, **kwargs):
        if destination_xml:
            destination_xml = self._retarget(destination_xml)
        return self._guest.migrate(*args, destination_xml=destination_xml,
                                   **kwargs)


class NumaPolicyLibvirtDriver(libvirt_driver.LibvirtDriver):

    def __init__(self, virtapi, read_only=False):
        super().__init__(virtapi, read_only)
        major = nova_major()
        self._numa_policy_enabled = supported(major)
        self._memory_tiers = memtiers.TierReader()
        if not self._numa_policy_enabled:
            LOG.warning(
                'nova %s is outside the versions %s-%s this driver '
                'extension supports; hw:numa_policy is not written into '
                'domain XML on this host', major, MIN_NOVA_MAJOR,
                MAX_NOVA_MAJOR)

    def _get_guest_config(self, instance, network_info, image_meta,
                          disk_info, *args, **kwargs):
        guest = super()._get_guest_config(instance, network_info, image_meta,
                                          disk_info, *args, **kwargs)
        if self._numa_policy_enabled:
            self._add_numa_policy(guest, instance, image_meta)
        return guest

    def _add_numa_policy(self, guest, instance, image_meta):
        ignored = ignored_image_properties(instance.system_metadata)
        if ignored:
            LOG.warning(
                'Instance %s: image properties %s are ignored: nova does not '
                'pass them to the scheduler, so they cannot be honoured; set '
                'the hw:numa_* extra specs on the flavor instead',
                instance.uuid, ', '.join(ignored))
        try:
            resolved = policy.resolve(
                instance.flavor.extra_specs, image_properties(image_meta),
                default=CONF.numa_policy.default_policy)
        except exception.NumaPolicyError as exc:
            # The API and scheduler refuse such flavors; one that slipped
            # through (edited after boot) gets nova's XML, not a guess.
            LOG.warning('Instance %s: %s; booting without a NUMA policy',
                        instance.uuid, exc)
            return
        if resolved is None:
            return
        plan = None
        why = "nova's own NUMA topology or <numatune> is kept"
        if guest.numatune is None and instance.numa_topology is None:
            conn = self._host.get_connection()
            host = host_topology(conn.getCapabilities(), uplinks(CONF),
                                 self._memory_tiers.read())
            plan = enforcement.boot_plan(
                resolved, host,
                usage=free_memory(conn, host, measured_loads(CONF)),
                memory_mb=instance.flavor.memory_mb,
                allowed_cpus=guest.cpuset, vcpus=instance.flavor.vcpus,
                instances=running_guests(self._host),
                large_share=CONF.numa_policy.large_guest_share)
            why = plan.reason
        tune = write_policy(guest, resolved, plan)
        LOG.info('Instance %s: hw:numa_policy=%s, memory %s (%s)',
                 instance.uuid, resolved.value,
                 f'{tune.mode} on nodes {sorted(tune.nodes)}'
                 if tune and tune.mode else "left to the kernel's default",
                 why)

    def _live_migration_operation(self, context, instance, dest,
                                  block_migration, migrate_data, guest,
                                  device_names):
        # nova hands the XML it prepared for the destination to
        # guest.migrate(); a guest of ours must carry a placement made
        # for the destination instead of the source's (virt/migration.py).
        if self._numa_policy_enabled:
            guest = _RetargetedGuest(guest, functools.partial(
                self._retarget_for, context, instance, dest, migrate_data))
        return super()._live_migration_operation(
            context, instance, dest, block_migration, migrate_data, guest,
            device_names)

    def _retarget_for(self, context, instance, dest, migrate_data,
                      domain_xml):
        record = record_of(domain_xml)
        if (record is None or record.policy.within_nova_topology
                or instance.numa_topology is not None):
            # No policy of ours, or nova's own NUMA live migration
            # rewrites the placement.
            return domain_xml
        sent, plan = retarget(
            domain_xml, record, self._destination_topology(context, dest),
            destination_allowed(migrate_data, record), instance.flavor)
        tune = plan.tune
        LOG.info('Instance %s: live migration to %s: hw:numa_policy=%s, '
                 'memory %s (%s)', instance.uuid, dest, record.policy.value,
                 f'{tune.mode} on nodes {sorted(tune.nodes)}'
                 if tune and tune.mode else "left to the kernel's default",
                 plan.reason)
        return sent

    def _destination_topology(self, context, dest):
        """The destination's NUMA cells as nova recorded them; may be empty.

        Empty (a record without cells, or none readable) leaves the guest
        to the kernel's default there: a placement made for a host we
        cannot see could name nodes it does not have.
        """
        try:
            node = objects.ComputeNode.get_first_node_by_host_for_old_compat(
                context, dest)
            cells = (objects.NUMATopology.obj_from_db_obj(node.numa_topology)
                     if node.numa_topology else None)
        except Exception as exc:  # nova's NotFound, or a conductor error
            LOG.warning('NUMA topology of %s unavailable (%s); a migrating '
                        "guest's placement is left to its kernel", dest, exc)
            return backend.HostTopology(nodes=())
        return recorded_topology(cells)
