"""The real backend: libvirt for guests, the kernel for the host."""
