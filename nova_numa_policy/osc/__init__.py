"""openstackclient plugin: ``openstack numa ...`` over the REST API."""
