"""Glue shared by the filters and weighers: nova objects in, pure inputs out.

Everything that reads a RequestSpec or the configuration runs once per
scheduling request; the per-host path is a dict lookup and arithmetic.
"""

import operator
import time

from oslo_config import cfg

from nova_numa_policy.conf import scheduler as sched_conf
from nova_numa_policy.contracts import policy
from nova_numa_policy.scheduling import scoring
from placement_filters import assessors
from placement_filters import lifecycle
from placement_filters import listener

CONF = cfg.CONF


def settings():
    group = CONF.numa_policy_scheduler
    return scoring.Settings(
        ttl=group.report_ttl,
        strict=group.no_report_mode == sched_conf.STRICT,
        threshold=group.node_load_threshold,
        weigh_plain_flavors=group.weigh_plain_flavors,
        vcpu_load=group.expected_vcpu_load,
        filter_plain_flavors=group.filter_plain_flavors)


def _image_props(spec_obj):
    image = spec_obj.image if spec_obj.obj_attr_is_set('image') else None
    if image is None or not image.obj_attr_is_set('properties'):
        return {}
    # The scheduler sees them as ImageMetaProps fields, not as a dict.
    props = image.properties
    return {name: getattr(props, name)
            for name in policy.NOVA_TOPOLOGY_IMAGE_PROPERTIES
            if props.obj_attr_is_set(name)}


def _physnets(spec_obj):
    if not spec_obj.obj_attr_is_set('network_metadata'):
        return ()
    metadata = spec_obj.network_metadata
    if metadata is None or not metadata.obj_attr_is_set('physnets'):
        return ()
    return metadata.physnets


def request_for(spec_obj):
    """The pure :class:`~scoring.Request` of a nova RequestSpec."""
    flavor = spec_obj.flavor
    return scoring.make_request(
        flavor.extra_specs, vcpus=flavor.vcpus, memory_mb=flavor.memory_mb,
        image_props=_image_props(spec_obj), physnets=_physnets(spec_obj),
        # Explicit topology, pinning, huge pages and NUMA-aware vSwitches
        # all show up as a guest NUMA topology NUMATopologyFilter fits.
        nova_topology=spec_obj.obj_attr_is_set('numa_topology') and (
            spec_obj.numa_topology is not None),
        instance_uuid=spec_obj.obj_attr_is_set('instance_uuid') and (
            spec_obj.instance_uuid) or None)


def assessor_for(spec_obj):
    """``(request, assessor)`` of a RequestSpec, once per plugin and request.

    Log with ``request``: the shared assessor may hold another instance's.
    """
    request = request_for(spec_obj)
    return request, assessors.assessor_for(request, settings())


# The cache's key of a HostState, read in C: runs for every host.
HOST_KEY = operator.attrgetter('host', 'nodename')


def cache():
    return listener.RUNTIME.get_cache()


def start_listening():
    """Listen for reports now, for as long as the scheduler service runs.

    Called as nova builds our plugins, inside its scheduler service: the
    cache is warm by the first request, and the listener stops and
    restarts with the service (:mod:`placement_filters.lifecycle`).
    """
    lifecycle.install()
    cache()


def now():
    return time.time()
