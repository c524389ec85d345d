"""A calibrated, deterministic NUMA host for testing and benchmarking loops.

``topology`` describes hosts, ``workload`` the guests' access behaviour,
``model`` turns a placement into latencies and throughput, ``state`` holds
what the loops change, ``backend`` exposes it all through the project's
:class:`~nova_numa_policy.contracts.backend.Backend` interface, and
``scenarios`` and ``experiment`` build and run the named experiments.
"""
