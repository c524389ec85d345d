"""Benchmarks: each measures ours next to a baseline in one run."""
