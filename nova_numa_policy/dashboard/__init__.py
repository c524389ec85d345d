"""Horizon plugin: Admin -> Compute -> NUMA, over the REST API."""
