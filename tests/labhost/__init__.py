"""The lab host: a real multi-node Linux in QEMU, for the host tier.

:mod:`topology` shapes it, :mod:`initramfs` builds its boot image from
this machine's kernel and busybox, :mod:`machine` boots it and runs
commands and Python calls inside (served by :mod:`server`),
:mod:`domains` defines QEMU domains the way nova does, :mod:`kernel`
reads the kernel's own view, :mod:`inside` runs the agent's code in it
and :mod:`fixture` shares booted lab hosts between tests.
See doc/source/labhost.rst.
"""
