"""The nova-numa-policy compute agent."""
