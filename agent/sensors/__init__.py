"""What the agent reads of the host's kernel: sysfs, /proc, perf, resctrl.

Readers and parsers of kernel files and counters, unprivileged and
without libvirt; they decide nothing.
"""
