"""Functional tests of the compute agent: real broker, nova services."""
