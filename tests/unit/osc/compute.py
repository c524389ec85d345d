"""A stand-in for openstacksdk's compute proxy, holding nova's flavors.

Only the two calls ``openstack numa explain --flavor`` makes. They behave
as ``openstack.compute.v2._proxy.Proxy`` does against a nova older than
microversion 2.61: a flavor comes back as openstacksdk's own ``Flavor``
without its extra specs, which need ``get_extra_specs=True`` or
``fetch_flavor_extra_specs``.
"""

from openstack.compute.v2 import flavor as sdk_flavor
from openstack import exceptions


class FakeCompute:

    def __init__(self):
        self._flavors = []
        self._extra_specs = {}

    def add_flavor(self, flavor_id, name, vcpus, ram, extra_specs=None):
        self._flavors.append({'id': flavor_id, 'name': name, 'vcpus': vcpus,
                              'ram': ram, 'disk': 10})
        self._extra_specs[flavor_id] = dict(extra_specs or {})

    def _matches(self, name_or_id):
        # The real proxy tries the ID first, then the name.
        by_id = [f for f in self._flavors if f['id'] == name_or_id]
        return by_id or [f for f in self._flavors if f['name'] == name_or_id]

    def find_flavor(self, name_or_id, ignore_missing=True, *,
                    get_extra_specs=False, **query):
        matches = self._matches(name_or_id)
        if len(matches) > 1:
            raise exceptions.DuplicateResource(
                f"More than one Flavor exists with the name '{name_or_id}'.")
        if not matches:
            if ignore_missing:
                return None
            raise exceptions.NotFoundException(
                f'No Flavor found for {name_or_id}')
        flavor = sdk_flavor.Flavor.existing(**matches[0])
        if get_extra_specs and not flavor.extra_specs:
            flavor = self.fetch_flavor_extra_specs(flavor)
        return flavor

    def fetch_flavor_extra_specs(self, flavor):
        attrs, = (f for f in self._flavors if f['id'] == flavor.id)
        return sdk_flavor.Flavor.existing(
            extra_specs=self._extra_specs[flavor.id], **attrs)
