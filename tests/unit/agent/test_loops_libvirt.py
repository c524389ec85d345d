"""The rebalancing loops on the real backend: libvirt's test driver.

Each test runs what the agent runs each period: a loops Runner built by
:func:`agent.service.rebalance.build_runner` from a
``[numa_policy_loops]`` group, and
:meth:`agent.service.manager.Agent.run_once` (observe, enforce, rebalance
through :func:`nova_numa_policy.decisions.execution.carry_out`, report) on a
:class:`agent.backend.libvirt_backend.LibvirtBackend` connected to
libvirt's test driver. The host's NUMA layout comes from a fixture sysfs tree:
two nodes of four CPUs, the physnet's NIC on node 1. A guest's qemu is a real
child
process: the kernel places its memory, and its numa_maps is read and its
pages moved by the privileged calls, run in this process as root (like
test_pagemove_backend).

What the test driver contributes, and the scenarios rely on:

* a vCPU is reported running on the last CPU of its affinity: a guest
  booted with ``<vcpu cpuset='0-3'>`` runs on CPU 3 (node 0), one without
  a cpuset on CPU 7 (node 1);
* its interface counters grow with the wall clock (about 10000 packets/s
  received and 9100 sent), so over the real time between two periods,
  read with the backend's real clock, a guest with an ``<interface>``
  measures far above vNUIOA's 500 packets/s and one without measures 0;
* ``pinVcpu`` changes what ``vcpuPinInfo`` and ``vcpus`` return.

The expected decisions and the kernel's answers are those of a host
with one NUMA node, like the one the project's tests run on: every
guest's memory is on node 0, and the kernel has no node 1 to move pages
to.
"""

import collections
import logging
import time

import fixtures
import libvirt
import testtools

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import errors
from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import scope
from nova_numa_policy.virt import metadata

from agent.backend import calls
from agent.backend import libvirt_backend
from agent.backend import pagemoves
from agent.backend import settings
from agent.sensors import discovery
from agent.sensors import sysfs
from agent.service import manager
from agent.service import rebalance
from tests import fixtures as host_fixtures
from tests.unit.agent import base
from tests.unit.agent import test_pagemove_backend as guest_files
from tests.unit.agent import test_pagemover

PERIOD = 5.0
# Real time before each period: the packet counters of the test driver
# grow with it (about 19 packets a millisecond). Rates are measured over
# windows of at least half of it, so not between two observations of the
# same period.
GAP = 0.05
NODE0 = frozenset(range(0, 4))
NODE1 = frozenset(range(4, 8))
EVERY_CPU = NODE0 | NODE1
PAGES_PER_MB = 256

IO_GUEST = '66666666-6666-4666-8666-666666666666'
QUIET = '77777777-7777-4777-8777-777777777777'
WANDERER = '88888888-8888-4888-8888-888888888888'
UNSEEN = '99999999-9999-4999-8999-999999999999'
CARREFOUR = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa'
# The loops manage only guests that asked for a policy: the driver
# extension's record, made when nova allowed every CPU (the tests then
# narrow <vcpu cpuset> to where the guest booted, as the driver does).
FIRST_TOUCH = metadata.render(metadata.PolicyRecord(
    policy.resolve({policy.POLICY_KEY: 'first-touch'}),
    allowed_cpus=frozenset(range(8))))
# The same request read from nova's flavor metadata, with no record.
NOVA_FIRST_TOUCH = {policy.POLICY_KEY: 'first-touch'}

KERNEL_NODES = sysfs.node_ids('/')
ONE_NODE_HOST = KERNEL_NODES in ([], [0])

Request = collections.namedtuple('Request',
                                 'pid source target pages outcome')


def placed(xml, cpus):
    """``xml`` booted with its vCPUs allowed on ``cpus`` (a cpulist)."""
    return xml.replace('<vcpu>', f"<vcpu cpuset='{cpus}'>")


class RecordingMover(pagemoves.PageMover):
    """The real page mover, keeping each request and what came of it.

    The executor keeps only whether a step went through; the tests also
    need the pages a loop's request asked for and the mover's own answer
    (its MoveResult, or the error the kernel's refusal became).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.requests = []

    def move(self, pid, source, target, pages):
        request = (pid, source, target, pages)
        try:
            result = super().move(pid, source, target, pages)
        except errors.HostError as exc:
            self.requests.append(Request(*request, exc))
            raise
        self.requests.append(Request(*request, result))
        return result


@testtools.skipUnless(
    ONE_NODE_HOST,
    f'the scenarios expect the kernel of a one-node host (guest memory on '
    f'node 0, no node 1); this one has nodes {KERNEL_NODES}')
class LibvirtLoopsTest(base.TestDriverHostTest):
    """The agent's loop path on the test driver, a page mover included."""

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))
        self.privsep = self.useFixture(test_pagemover.InProcessPrivsep())
        self.mover = RecordingMover(batch_pages=512)
        self.backend = libvirt_backend.LibvirtBackend(
            self.connection, paths=settings.HostPaths(root=self.root),
            timing=settings.Timing(rate_window=GAP / 2),
            share=settings.HostShare(
                uplinks=discovery.Uplinks({'physnet1': 'ens2f0'})),
            helpers=settings.Helpers(page_mover=self.mover))

    def guest_process(self, index, uuid):
        """A real process as guest ``index``'s qemu, 8 MiB touched."""
        child = self.privsep.child(8 << 20)
        guest_files.write_qemu(self.root, f'instance-{index:08x}', uuid,
                               child.pid)
        return child

    def agent(self, dry_run=False, **options):
        """What agent.service.cmd.build_agent wires, on this test's backend."""
        runner = rebalance.build_runner(self.backend,
                                        base.loops_group(**options), PERIOD,
                                        dry_run=dry_run)
        return manager.Agent(self.backend, host='cn1', period=PERIOD,
                             runner=runner)

    def periods(self, agent, count):
        """Run ``count`` periods; the (loop, action) pairs of each."""
        done = []
        for _ in range(count):
            time.sleep(GAP)
            agent.run_once()
            done.append(agent.last_loop_actions)
        return done

    def pinning(self, uuid):
        """The CPUs each vCPU may run on, as libvirt says."""
        return [calls.cpus_from_map(bits) for bits in
                self.dom(uuid).vcpuPinInfo(libvirt.VIR_DOMAIN_AFFECT_LIVE)]

    def running_on(self, uuid):
        """The CPU each vCPU runs on, as libvirt says."""
        return [info[3] for info in self.dom(uuid).vcpus()[0]]

    def reported(self, agent, uuid):
        return [i for i in agent.last_report.instances if i.uuid == uuid][0]


class VnuioaScenario(LibvirtLoopsTest):
    """Two guests on node 0, the NIC on node 1; one of them has traffic."""

    def domains(self):
        io_guest = guest_files.with_interface(
            host_fixtures.domain_xml(6, IO_GUEST, vcpus=2,
                                     policy=FIRST_TOUCH))
        quiet = host_fixtures.domain_xml(7, QUIET, vcpus=1,
                                         policy=FIRST_TOUCH)
        return [placed(io_guest, '0-3'), placed(quiet, '0-3')]

    def setUp(self):
        super().setUp()
        self.io_child = self.guest_process(6, IO_GUEST)
        self.guest_process(7, QUIET)

    def vnuioa(self, dry_run=False, **options):
        # One period's choice is enough here: damping by the pin count is
        # the subject of the simulator's tests.
        return self.agent(dry_run, enabled_loops=['vnuioa'],
                          hysteresis_pin_count=0, **options)


class VnuioaTest(VnuioaScenario):

    def test_an_io_intensive_guest_is_pinned_to_the_nic_node(self):
        # vNUIOA also asks to move the guest's memory after its vCPUs;
        # this host's kernel would refuse node 1 and, a plan being all or
        # nothing, undo the pins too (the next test). With no page budget
        # the move is not admitted and the pins stand on their own.
        agent = self.vnuioa(pages_per_second=0)
        first, second = self.periods(agent, 2)
        # The first observation measures packet rates over a window
        # before anything is decided: the I/O guest is placed at once,
        # and stays placed.
        self.assertEqual([(IO_GUEST, 0, NODE1), (IO_GUEST, 1, NODE1)],
                         [(a.instance_uuid, a.vcpu, a.cpus)
                          for _, a in first])
        self.assertEqual([], second)
        for loop, action in first:
            self.assertEqual('vnuioa', loop)
            self.assertIn('NIC-prior (I/O-intensive', action.reason)
        self.assertIn('vnuioa: over budget, dropped MovePages',
                      self.log.output)
        self.assertEqual([NODE1, NODE1], self.pinning(IO_GUEST))
        self.assertTrue(NODE1.issuperset(self.running_on(IO_GUEST)))
        self.assertEqual([NODE0], self.pinning(QUIET))
        self.assertEqual([], self.mover.requests)
        self.assertTrue(NODE1.issuperset(
            self.reported(agent, IO_GUEST).vcpu_cpus))
        self.assertEqual(0.0, self.reported(agent, QUIET).io_rate)

    def test_its_memory_move_reaches_the_page_mover_and_a_refusal_undoes_it(
            self):
        agent = self.vnuioa()
        (first,) = self.periods(agent, 1)
        (request,) = self.mover.requests
        self.assertEqual((self.io_child.pid, 0, 1), request[:3])
        self.assertGreater(request.pages, 0)
        # The kernel's own answer (ENODEV), as the mover turns it.
        self.assertIsInstance(request.outcome, pagemoves.InvalidNode)
        self.assertIn('node 1 is not a memory node of this host',
                      str(request.outcome))
        self.assertIn('rolling back 2 change(s)', self.log.output)
        # The pins before it were undone: nothing carried out, and libvirt
        # shows the guest where it was.
        self.assertEqual([], first)
        self.assertEqual([NODE0, NODE0], self.pinning(IO_GUEST))
        self.assertTrue(NODE0.issuperset(self.running_on(IO_GUEST)))


class NovaBoundTest(VnuioaScenario):
    """The same guests, but nova confined them to node 0's CPUs.

    ``<vcpu cpuset='0-3'>`` with no wider record is nova's own bound
    (``[compute] cpu_shared_set``): node 1's CPUs may be dedicated to
    pinned guests.
    """

    def domains(self):
        io_guest = guest_files.with_interface(host_fixtures.domain_xml(
            6, IO_GUEST, vcpus=2, nova_specs=NOVA_FIRST_TOUCH))
        quiet = host_fixtures.domain_xml(7, QUIET, vcpus=1,
                                         nova_specs=NOVA_FIRST_TOUCH)
        return [placed(io_guest, '0-3'), placed(quiet, '0-3')]

    def test_no_pin_leaves_the_cpus_nova_allows(self):
        agent = self.vnuioa(pages_per_second=0)
        periods = self.periods(agent, 3)
        self.assertEqual([[], [], []], periods)
        self.assertEqual([NODE0, NODE0], self.pinning(IO_GUEST))
        self.assertEqual([NODE0], self.pinning(QUIET))
        # VnuioaTest's guests differ only in the record saying nova
        # allowed every CPU: there the I/O guest goes to node 1.


class HostPartitionTest(VnuioaScenario):
    """VnuioaTest's guests, on a host nova has since partitioned.

    Their records say nova set them no bound when they were defined; the
    host's nova.conf now dedicates node 1's CPUs to pinned guests.
    """

    def setUp(self):
        super().setUp()
        self.backend = libvirt_backend.LibvirtBackend(
            self.connection, paths=settings.HostPaths(root=self.root),
            timing=settings.Timing(rate_window=GAP / 2),
            share=settings.HostShare(
                uplinks=discovery.Uplinks({'physnet1': 'ens2f0'}),
                cpu_partition=scope.CpuPartition(dedicated=NODE1)),
            helpers=settings.Helpers(page_mover=self.mover))

    def test_no_pin_reaches_the_cpus_nova_now_dedicates(self):
        agent = self.vnuioa(pages_per_second=0)
        self.assertEqual([[], [], []], self.periods(agent, 3))
        self.assertEqual([NODE0, NODE0], self.pinning(IO_GUEST))


class DryRunTest(VnuioaScenario):

    def test_the_same_decisions_change_nothing_visible_through_libvirt(self):
        before = {uuid: (self.pinning(uuid), self.running_on(uuid))
                  for uuid in (IO_GUEST, QUIET)}
        agent = self.vnuioa(dry_run=True)
        _, second = self.periods(agent, 2)
        # Decided and logged as in a real run: the pins and the move.
        self.assertEqual(['MovePages', 'PinVcpu', 'PinVcpu'],
                         sorted(type(a).__name__ for _, a in second))
        self.assertIn(f'[dry-run] PinVcpu on {IO_GUEST}: vnuioa: NIC-prior',
                      self.log.output)
        self.assertIn(f'[dry-run] MovePages on {IO_GUEST}', self.log.output)
        self.assertEqual(before, {uuid: (self.pinning(uuid),
                                         self.running_on(uuid))
                                  for uuid in (IO_GUEST, QUIET)})
        self.assertEqual([], self.mover.requests)


class BudgetTest(VnuioaScenario):

    def test_one_vcpu_re_pin_per_period_reaches_libvirt_at_a_budget_of_one(
            self):
        agent = self.vnuioa(vcpu_moves_per_period=1, pages_per_second=0)
        self.periods(agent, 1)
        self.assertEqual(1, self.pinning(IO_GUEST).count(NODE1))
        self.periods(agent, 1)
        self.assertEqual([NODE1, NODE1], self.pinning(IO_GUEST))

    def test_the_page_mover_is_asked_for_no_more_than_the_page_budget(self):
        # The mover moves no more than it is asked for (PageMoverTest, on
        # a real child); this is the other half: what a loop asks of it.
        agent = self.vnuioa(pages_per_second=200)
        budget = int(200 * PERIOD)
        self.periods(agent, 1)
        held = self.reported(agent, IO_GUEST).memory_mb_per_node['0']
        # vNUIOA asks for the guest's memory on node 0: more than that.
        self.assertGreater(held * PAGES_PER_MB, budget)
        (request,) = self.mover.requests
        self.assertEqual((self.io_child.pid, budget),
                         (request.pid, request.pages))


class BrmTest(LibvirtLoopsTest):
    """Two one-vCPU guests on node 1; only one's memory can be seen."""

    def domains(self):
        return [host_fixtures.domain_xml(8, WANDERER, vcpus=1,
                                         policy=FIRST_TOUCH),
                host_fixtures.domain_xml(9, UNSEEN, vcpus=1,
                                         policy=FIRST_TOUCH)]

    def test_a_vcpu_away_from_its_memory_is_pinned_to_the_memory_node(self):
        # Without uncore counters BRM's penalty is the NUMA distance from
        # the vCPU's node to its memory: the test driver gives the
        # vCPU's node, the real process's numa_maps its memory's.
        self.guest_process(8, WANDERER)
        # A step of 100: the first period that finds the vCPU away from
        # its memory moves it (the gradual rise is the simulator's).
        agent = self.agent(enabled_loops=['brm'], brm_probability_step=100)
        first, second = self.periods(agent, 2)
        self.assertEqual([('brm', WANDERER, 0, NODE0)],
                         [(loop, a.instance_uuid, a.vcpu, a.cpus)
                          for loop, a in first])
        self.assertIn('on node 1 above node 0', first[0][1].reason)
        self.assertEqual([NODE0], self.pinning(WANDERER))
        self.assertTrue(NODE0.issuperset(self.running_on(WANDERER)))
        # Where no memory is seen (no qemu process found) no node is
        # nearer: that vCPU is left to the host's scheduler.
        self.assertEqual([EVERY_CPU], self.pinning(UNSEEN))
        # Home now: the next period has nothing to do.
        self.assertEqual([], second)


class CarrefourTest(LibvirtLoopsTest):
    """A Carrefour guest with its vCPUs on node 1, its memory on node 0."""

    def domains(self):
        return [host_fixtures.domain_xml(
            10, CARREFOUR, vcpus=2,
            nova_specs={policy.POLICY_KEY: 'first-touch+carrefour'})]

    def test_is_not_started_without_access_counters_and_says_why(self):
        self.guest_process(10, CARREFOUR)
        before = self.pinning(CARREFOUR)
        self.assertNotIn(backend.CAP_ACCESS_COUNTERS,
                         self.backend.capabilities())
        (observed,) = self.backend.observe().instances
        self.assertIsNone(observed.accesses_per_node)
        agent = self.agent(enabled_loops=['carrefour'])
        self.assertIn("loop carrefour not started: backend libvirt lacks "
                      "['access-counters']", self.log.output)
        self.assertEqual(['carrefour'], agent.runner.skipped)
        self.assertEqual((), rebalance.active_loops(agent.runner))
        self.periods(agent, 2)
        self.assertEqual([], agent.last_loop_actions)
        self.assertEqual([], self.mover.requests)
        self.assertEqual(before, self.pinning(CARREFOUR))
        # The report says so too: Carrefour is not in force on the guest
        # and not a policy this host enforces.
        self.assertEqual('first-touch',
                         self.reported(agent, CARREFOUR).applied_policy)
        self.assertNotIn('first-touch+carrefour',
                         agent.last_report.enforceable_policies)
