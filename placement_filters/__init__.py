"""Nova scheduler filters and weighers of nova-numa-policy."""
