"""What every test of the plugin shares: the deployment check and the
extra specs of the policy contract (doc/source/policy.rst).

The values are spelled out here, not imported from the package: these
tests check the contract as a user of the cloud sees it.
"""

from tempest import config
from tempest.lib.common.utils import data_utils

CONF = config.CONF

POLICY_KEY = 'hw:numa_policy'
NIC_LOCALITY_KEY = 'hw:numa_nic_locality'
IO_INTENSITY_KEY = 'hw:numa_io_intensity'
POLICIES = ('first-touch', 'interleave', 'home', 'first-touch+carrefour',
            'interleave+carrefour', 'auto')
NIC_LOCALITIES = ('required', 'preferred', 'none')
IO_INTENSITIES = ('auto', 'low', 'high')
MEMORY_TIERS_KEY = 'hw:numa_memory_tiers'
TOP_TIER_PERCENT_KEY = 'hw:numa_top_tier_percent'
MEMORY_TIERS = ('any', 'top', 'tiered')


def skip_unless_deployed(skip_exception):
    if not CONF.service_available.numa_policy:
        raise skip_exception(
            'nova-numa-policy is not deployed in this cloud '
            '([service_available] numa_policy = False)')


def create_flavor_like(add_cleanup, flavors_client, flavor_ref,
                       extra_specs):
    """A new flavor sized like ``flavor_ref``, with ``extra_specs``.

    Deleted by the clean-ups ``add_cleanup`` registers: a test's
    ``addCleanup`` or a class's ``addClassResourceCleanup``.
    """
    template = flavors_client.show_flavor(flavor_ref)['flavor']
    flavor = flavors_client.create_flavor(
        name=data_utils.rand_name(prefix=CONF.resource_name_prefix,
                                  name='numa-policy'),
        ram=template['ram'], vcpus=template['vcpus'], disk=template['disk'],
        id=data_utils.rand_uuid())['flavor']
    add_cleanup(flavors_client.wait_for_resource_deletion, flavor['id'])
    add_cleanup(flavors_client.delete_flavor, flavor['id'])
    if extra_specs:
        flavors_client.set_flavor_extra_spec(flavor['id'], **extra_specs)
    return flavor
