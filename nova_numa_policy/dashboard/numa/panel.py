from django.utils.translation import gettext_lazy as _
import horizon


class NumaPolicy(horizon.Panel):
    name = _('NUMA')
    slug = 'numa_policy'
    # The API's default policy is admin only; hiding the panel from
    # others saves them a page of 403 errors.
    permissions = ('openstack.roles.admin',)
