"""nova's ``test_pci_sriov_servers``, as nova ships it, our plugins enabled.

SR-IOV and vDPA guests: their PCI requests, ports and physnets go through
the scheduler with our filters and weighers in it, on boot and on every
move operation (:mod:`tests.functional.nova.shipped`).
"""

from tests.functional.nova import shipped

load_tests = shipped.loader_of(
    'nova.tests.functional.libvirt.test_pci_sriov_servers')
