"""A live-migrated guest's arrival, with the lab host as the destination.

nova's own fixtures prove which XML a live migration's source sends
(tests/functional/agent/test_live_migration.py); here the lab host's
libvirtd, QEMU and kernel receive it. The source is a host of four nodes
of two CPUs each, where the driver extension defined the guest; the lab
host has two nodes. The source's placement is refused here, and the
placement the source makes for this host is what the kernel does, until
the agent here, which sees the load the source could not, re-homes a
``home`` guest that arrived on a busy node.
"""

import types
import uuid as uuid_mod
from xml.etree import ElementTree

from nova import objects

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import policy
from nova_numa_policy.decisions import enforcement
from nova_numa_policy.virt import driver
from nova_numa_policy.virt import metadata
from tests.host import base
from tests.labhost import domains
from tests.labhost import kernel
from tests.labhost import machine
from tests import topology_factory

# nova's compute node NUMA cells, as nova-compute registers them.
objects.register_all()

MEMORY_MB = 128
FLAVOR = types.SimpleNamespace(vcpus=2, memory_mb=MEMORY_MB)
SOURCE = topology_factory.host_topology(4, cpus=2, memory_mb=4096, remote=20)
# nova 34 gives every guest one QEMU I/O thread; the agent pins it with
# the emulator, and the kernel checks count it with the emulator's.
IOTHREADS = 1
# Nodes 0-2 busy on the source: a home guest went to node 3 there.
SOURCE_USAGE = tuple(backend.NodeUsage(n, 0.9 if n < 3 else 0.0, 4000)
                     for n in range(4))


class ArrivalTest(base.LabTestCase):

    def source_xml(self, value):
        """(XML, boot plan) of a guest the source's driver defined."""
        specs = {policy.POLICY_KEY: value}
        guest = domains.nova_guest(f'instance-{uuid_mod.uuid4().hex[:8]}',
                                   FLAVOR.vcpus, MEMORY_MB, specs,
                                   iothreads=IOTHREADS)
        resolved = policy.resolve(specs)
        plan = enforcement.boot_plan(resolved, SOURCE, SOURCE_USAGE,
                                     memory_mb=MEMORY_MB, vcpus=FLAVOR.vcpus)
        driver.write_policy(guest, resolved, plan)
        return guest.to_xml(), plan

    def recorded_here(self):
        """The lab host as nova records it in its compute node's cells."""
        nic = self.TOPOLOGY.nic_node
        return driver.recorded_topology(objects.NUMATopology(cells=[
            objects.NUMACell(
                id=n, cpuset=set(self.node_cpus(n)), pcpuset=set(),
                memory=self.TOPOLOGY.memory_mb_per_node,
                network_metadata=objects.NetworkMetadata(
                    physnets={'physnet1'} if n == nic else set(),
                    tunneled=False))
            for n in range(self.TOPOLOGY.nodes)]))

    def arrive(self, value):
        """The guest started here from the XML its source sends."""
        xml, _ = self.source_xml(value)
        record = driver.record_of(xml)
        sent, plan = driver.retarget(xml, record, self.recorded_here(),
                                     frozenset(), FLAVOR)
        return self.start_guest({}, xml=sent), plan

    def test_the_sources_placement_does_not_start_here(self):
        for value, nodes in (('interleave', {0, 1, 2, 3}), ('home', {3})):
            xml, plan = self.source_xml(value)
            self.assertEqual(frozenset(nodes), plan.tune.nodes)
            error = self.assertRaises(machine.CallFailed, self.start_guest,
                                      {}, xml=xml)
            self.assertIn('NUMA node', str(error))

    def test_interleave_arrives_interleaved_over_the_nodes_here(self):
        guest, plan = self.arrive('interleave')
        self.assertEqual(('interleave', frozenset({0, 1})),
                         (plan.tune.mode, plan.tune.nodes))
        self.assert_kernel_follows(self.view(guest), plan.tune, IOTHREADS)
        self.assert_recorded(guest, plan)

    def test_home_arrives_on_a_node_here(self):
        guest, plan = self.arrive('home')
        self.assertEqual('restrictive', plan.tune.mode)
        self.assertEqual(1, len(plan.tune.nodes))
        self.assert_kernel_follows(self.view(guest), plan.tune, IOTHREADS)
        self.assert_recorded(guest, plan)

    def kernel_home(self, guest):
        """(node, its share of the RAM, vCPU CPUs, emulator CPUs, mems).

        What the kernel says of the guest: the one node its cgroups'
        cpuset.mems allow (None when they do not agree on one), the share
        of its RAM's pages there, its threads' Cpus_allowed_list (the
        emulator's: every thread that is no vCPU's, QEMU's I/O thread
        among them).
        """
        view = self.view(guest)
        mems = {kernel.cpulist(v) for v in view.cpuset_mems.values() if v}
        node = (next(iter(mems.pop())) if len(mems) == 1
                and len(next(iter(mems))) == 1 else None)
        share = (kernel.share_on(view.ram.pages, {node})
                 if node is not None else 0.0)
        return (node, share,
                {t.cpus_allowed for t in view.vcpu_threads()},
                {t.cpus_allowed for t in view.emulator_threads()},
                dict(view.cpuset_mems))

    def assert_kernel_home(self, home, node):
        self.assertEqual(node, home[0], home)
        self.assertGreater(home[1], 0.99, home)
        self.assertEqual(({self.node_cpus(node)}, {self.node_cpus(node)}),
                         home[2:4], home)

    def test_home_arriving_on_a_busy_node_is_rehomed_by_the_agent(self):
        guest, plan = self.arrive('home')
        (arrived,) = plan.tune.nodes
        other = 1 - arrived
        before = self.kernel_home(guest)
        self.addDetail('kernel-before', base.text(repr(before)))
        self.assert_kernel_home(before, arrived)
        # This host keeps the node the source chose busy.
        self.busy(self.node_cpus(arrived))
        # The first period measures the guest's own load; the second
        # decides.
        reports, _, log = self.run_agent(periods=2)
        after = self.eventually(
            lambda: self.kernel_home(guest),
            lambda home: home[0] == other and home[1] > 0.99,
            f'the guest re-homed on node {other}', 60)
        self.addDetail('kernel-after', base.text(repr(after)))
        self.assert_kernel_home(after, other)
        self.assertIn(f'arrival: home moves to nodes [{other}]', log)
        self.assertEqual('applied',
                         self.reported(reports[-1], guest).enforcement)
        # Handled once: a later period leaves it where it is now.
        _, _, log = self.run_agent(periods=1)
        self.assertNotIn('arrived by live migration', log)
        self.assert_kernel_home(self.kernel_home(guest), other)

    def test_home_arriving_on_the_right_node_stays(self):
        guest, plan = self.arrive('home')
        (arrived,) = plan.tune.nodes
        before = self.kernel_home(guest)
        self.addDetail('kernel-before', base.text(repr(before)))
        # The other node is the busy one here.
        self.busy(self.node_cpus(1 - arrived))
        reports, _, log = self.run_agent(periods=2)
        after = self.kernel_home(guest)
        self.addDetail('kernel-after', base.text(repr(after)))
        self.assert_kernel_home(after, arrived)
        self.assertEqual(before[4], after[4])
        self.assertIn(f'stays: nodes [{arrived}] are where home would put '
                      f'it here', log)
        self.assertIsNone(self.reported(reports[-1], guest).enforcement)

    def assert_recorded(self, guest, plan):
        """The running domain's record says what this host decided."""
        live = self.lab.call('tests.labhost.inside:domain_xml', guest.name)
        record = metadata.find_record(ElementTree.fromstring(live))
        self.assertEqual((plan.tune.mode, plan.tune.nodes, frozenset(), True),
                         (record.mode, record.nodes, record.allowed_cpus,
                          record.chosen_by_source))
