"""nova's ``test_numa_servers``, as nova ships it, with our plugins enabled.

Every test of the module runs unchanged; only the scheduler's
configuration differs (:mod:`tests.functional.nova.shipped`). Our plugins
must not change what nova decides for flavors that do not ask for them,
nor break a move operation, nor leave their report listener's poller
behind when nova's fixture stops the scheduler service (nova fails a test
that leaks one).
"""

from tests.functional.nova import shipped

load_tests = shipped.loader_of(
    'nova.tests.functional.libvirt.test_numa_servers')
