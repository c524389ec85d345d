"""Base classes for nova-numa-policy's versioned objects."""

from oslo_utils import versionutils
from oslo_versionedobjects import base as ovo_base


class NumaPolicyObjectRegistry(ovo_base.VersionedObjectRegistry):
    """Registers our objects in ovo's process-wide registry.

    The registry is shared with nova inside nova-scheduler, so every class
    name starts with ``Numa`` and none of nova's own objects is replaced.
    """


class NumaPolicyObject(ovo_base.VersionedObject):
    OBJ_PROJECT_NAMESPACE = 'nova_numa_policy'
    OBJ_SERIAL_NAMESPACE = 'nova_numa_policy_object'

    # Values of fields a sender of an older minor version did not know;
    # a field with no default is required in every version.
    DEFAULTS = {}
    # Fields holding lists of child objects, and the child class.
    CHILDREN = {}
    # Fields added after 1.0, with the version that added each: a
    # primitive made for an older version goes without them.
    ADDED_IN = {}

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        for name, added in self.ADDED_IN.items():
            if target < versionutils.convert_version_to_tuple(added):
                primitive.pop(name, None)
