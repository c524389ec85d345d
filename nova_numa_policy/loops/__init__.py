"""Rebalancing strategies: pure decide functions over a HostSnapshot."""
