"""A cloud in the lab: real OpenStack services on this machine's loopback,
nova-compute with the project's driver in lab hosts (tests/labhost).

Nothing in it leaves this machine: services listen on 127.0.0.1 only,
and lab hosts reach them through QEMU's per-connection forwarding.
"""
