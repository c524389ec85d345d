"""nova's libvirt driver extension and the domain metadata it writes."""
