"""Commands of ``openstack.numa_policy.v1``."""
