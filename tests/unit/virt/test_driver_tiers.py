"""The driver extension's host topology knows the kernel's memory tiers.

libvirt's capabilities do not say them: the driver reads the kernel's
files at each boot, under a fixture root here.
"""


import fixtures

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import memtiers as tier_files
from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import tiers
from nova_numa_policy.decisions import enforcement
from nova_numa_policy.virt import driver
from nova_numa_policy.virt import memtiers
from tests import base as test_base
from tests import fixtures as host_fixtures

# The lab host's layout: nodes 0 and 1 with two CPUs each, node 2 memory
# only; its 6.1 kernel lists 0-1 in memory_tier4 and 2 in memory_tier22.
LAB_HOST = {4: '0-1', 22: '2'}


def capabilities():
    cells = []
    for node, cpus in ((0, (0, 1)), (1, (2, 3)), (2, ())):
        cpu_list = ''.join(f"<cpu id='{cpu}'/>" for cpu in cpus)
        cells.append(f"<cell id='{node}'><memory unit='KiB'>4194304</memory>"
                     f"<cpus num='{len(cpus)}'>{cpu_list}</cpus></cell>")
    return ('<capabilities><host><topology><cells num="3">'
            + ''.join(cells) + '</cells></topology></host></capabilities>')


class HostTopologyTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        self.log = self.useFixture(fixtures.FakeLogger())

    def read(self, reader=None):
        return (reader or memtiers.TierReader(self.root)).read()

    def test_each_node_has_the_kernels_tier_rank(self):
        host_fixtures.write_memory_tiers(self.root, LAB_HOST, 'true')
        host = driver.host_topology(capabilities(), (), self.read())
        self.assertEqual([(0, 0), (1, 0), (2, 1)],
                         [(n.id, n.memory_tier) for n in host.nodes])
        self.assertEqual('', self.log.output)

    def test_without_tiers_every_node_is_in_the_top_tier(self):
        for memory_tiers in (None, self.read()):
            with self.subTest(memory_tiers):
                host = driver.host_topology(capabilities(), (), memory_tiers)
                self.assertEqual([0, 0, 0],
                                 [n.memory_tier for n in host.nodes])
        self.assertEqual('', self.log.output)

    def test_what_cannot_be_read_is_no_tiers_and_warned_once(self):
        host_fixtures.write_memory_tiers(self.root, {4: '0-1', 22: '2-x'})
        reader = memtiers.TierReader(self.root)
        for _ in range(3):
            self.assertEqual(backend.MemoryTiers(), self.read(reader))
        self.assertEqual(
            1, self.log.output.count('memory tiers cannot be read'))
        self.assertIn("'2-x'", self.log.output)

    def test_bytes_that_are_not_text_are_no_tiers(self):
        host_fixtures.write_undecodable_tier(self.root,
                                             tier_files.MEMORY_TIERING_DIR)
        self.assertEqual(backend.MemoryTiers(), self.read())
        self.assertIn('memory tiers cannot be read', self.log.output)

    def test_the_hosts_root_is_read_by_default(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_numa_policy.virt.memtiers.SYSFS_ROOT', self.root))
        host_fixtures.write_memory_tiers(self.root, LAB_HOST)
        self.assertEqual({0: 0, 1: 0, 2: 1},
                         memtiers.TierReader().read().ranks)

    def test_a_top_guest_boots_on_the_top_tier_of_that_topology(self):
        host_fixtures.write_memory_tiers(self.root, LAB_HOST)
        host = driver.host_topology(capabilities(), (), self.read())
        plan = enforcement.boot_plan(policy.resolve({
            policy.POLICY_KEY: 'interleave',
            tiers.MEMORY_TIERS_KEY: 'top'}), host)
        self.assertEqual(('interleave', frozenset({0, 1})),
                         (plan.tune.mode, plan.tune.nodes))
