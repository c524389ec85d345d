"""Unit tests of the compute agent and its pure decisions."""
