"""Tempest plugin of nova-numa-policy: flavor validation, boot scenarios."""
