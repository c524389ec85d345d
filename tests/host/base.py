"""The host tier's base: tests on a real kernel, libvirtd and QEMU.

Every test runs against a lab host (tests/labhost): a multi-node Linux
booted in QEMU on this machine, with Debian's libvirtd running real QEMU
domains inside. Tests look at what the kernel says (numa_maps,
Cpus_allowed_list, cgroup files), never only at what the agent reports.
"""

import os
import time
import uuid as uuid_mod

import testtools

from nova_numa_policy.contracts import memtiers
from nova_numa_policy.objects import wire as report_wire
from tests import base as test_base
from tests.labhost import deploy
from tests.labhost import domains
from tests.labhost import fixture
from tests.labhost import initramfs
from tests.labhost import kernel
from tests.labhost import machine
from tests.labhost import topology as topology_mod

# Tests append options of [numa_policy_loops] to it: that section must
# stay the last.
AGENT_CONFIG = """\
[DEFAULT]
debug = true
[numa_policy_agent]
host = lab
libvirt_uri = qemu:///system
period = 5
physnet_interfaces = {interfaces}
page_migration = {page_migration}
bandwidth_monitoring = {bandwidth_monitoring}
hardware_sampling = {hardware_sampling}
io_path_steering = {io_path_steering}
access_monitoring = {access_monitoring}
state_dir = {state_dir}
dry_run = {dry_run}
# No Open vSwitch runs in the lab host (its ovs-vsctl is this machine's,
# over 9p): nothing to ask, and no ovs-vsctl started at each read.
ovs_db =
[numa_policy]
uplinks_file = {uplinks_file}
[numa_policy_loops]
enabled_loops = {loops}
{loop_options}
"""

# Where the agent hands its uplinks to the driver extension (lab tmpfs).
UPLINKS_FILE = '/tmp/numa-policy-uplinks.json'
# A CPU spinner that leaves emulation to the other vCPUs.
BUSY = os.path.join(machine.PROJECT, 'tests', 'labhost', 'busy.py')
# Ends every spinner :func:`keep_busy` started.
STOP_BUSY = "pkill -f '[l]ab-busy' || true"
# Where it keeps the interrupts' affinity as found (lab tmpfs).
STATE_DIR = '/tmp/numa-policy-state'


# The privsep daemon as QEMU's user and group (doc/source/agent.rst).
PRIVILEGED = """\
[numa_policy_privileged]
user = libvirt-qemu
group = libvirt-qemu
"""

# How often a test waiting for the kernel reads it again. Each read is a
# request the emulated lab host serves with its own CPUs: no faster.
POLL_SECONDS = 2
# How long the guest's RAM may take to stop growing after it started.
SETTLE_TIMEOUT = 60

# Interleaving page by page leaves each of two nodes close to half.
INTERLEAVE_MIN_SHARE = 0.45
# QEMU asks for transparent huge pages for guest RAM: the kernel then
# interleaves 2 MiB (512 base pages) at a time, and a guest that touched
# only a few of them is as even as that step allows, no more.
HUGE_PAGE_PAGES = 512


# numa_maps' name for each <numatune> memory mode; restrictive sets no
# memory policy (only the cgroup's cpuset.mems).
KERNEL_MODE = {'strict': 'bind', 'interleave': 'interleave',
               'preferred': 'prefer', 'restrictive': 'default'}


def text(value):
    return testtools.content.text_content(value)


def interleaved_least_pages(total, nodes, step=1):
    """The fewest of ``total`` interleaved pages a node may hold.

    INTERLEAVE_MIN_SHARE of an even share, per node. ``step``: the pages
    the kernel places at a time (HUGE_PAGE_PAGES where transparent huge
    pages back a guest that touched only a few of them): then one step
    under an even share where that is lower, and never none.
    """
    even = total / nodes
    close = 2 * INTERLEAVE_MIN_SHARE * even
    if step <= 1:
        return close
    return max(1, min(close, even - step))


def keep_busy(lab, cpus):
    """Start a spinner on each of ``cpus`` of ``lab``; STOP_BUSY ends them."""
    for cpu in sorted(cpus):
        lab.run(f'taskset -c {cpu} /usr/bin/python3 -S {BUSY} '
                f'lab-busy >/dev/null 2>&1 &')


class Guest:
    """A domain started in the lab host, and how it was decided."""

    def __init__(self, name, uuid, pid, plan, xml):
        self.name = name
        self.uuid = uuid
        self.pid = pid
        self.plan = plan
        self.xml = xml


class LabTestCase(test_base.TestCase):
    TOPOLOGY = topology_mod.TWO_NODES

    def setUp(self):
        super().setUp()
        try:
            self.lab_fixture = self.useFixture(
                fixture.LabHostFixture(self.TOPOLOGY, self.id()))
            self.lab = self.lab_fixture.lab
        except (initramfs.LabUnavailable, machine.LabError) as exc:
            if machine.required():
                self.fail(f'the lab host must run here '
                          f'({machine.REQUIRE_ENV}=1): {exc}')
            self.skipTest(f'no lab host on this machine: {exc}')

    # -- guests -----------------------------------------------------------

    def capabilities(self):
        return self.lab.call('tests.labhost.inside:capabilities')

    def start_guest(self, extra_specs, vcpus=2, memory_mb=128,
                    paused=False, xml=None):
        """A nova-defined domain of this flavor, started in the lab host."""
        name = f'instance-{uuid_mod.uuid4().hex[:8]}'
        plan = None
        if xml is None:
            # The NIC as nova's [neutron_physnet_physnet1] numa_nodes
            # would place it for the driver extension.
            xml, plan = domains.define_xml(
                name, vcpus, memory_mb, extra_specs, self.capabilities(),
                nics=(domains.physnet_nic('physnet1',
                                          self.TOPOLOGY.nic_node),),
                memory_tiers=self.memory_tiers())
        started = self.lab.call('tests.labhost.inside:start_domain', xml,
                                paused=paused)
        return Guest(started['name'], started['uuid'], started['pid'],
                     plan, xml)

    def memory_tiers(self):
        """The lab host's tiers, as the driver extension reads them at boot.

        None on a lab host without a lower tier: its kernel lists every
        node in one tier, which ranks them all as the top.
        """
        if self.TOPOLOGY.slow_node is None:
            return None
        seen = self.lab.call('tests.labhost.inside:memory_tiers')
        found, problems = memtiers.memory_tiers(seen['tiers'],
                                                seen['demotion_enabled'])
        self.assertEqual({}, problems)
        return found

    def set_nodeset(self, guest_name, nodeset):
        """The running guest's memory nodeset, as ``virsh numatune``."""
        self.lab.call('tests.labhost.inside:set_nodeset', guest_name,
                      nodeset)

    def eventually(self, read, done, what, timeout, describe=repr):
        """Read the kernel until ``done(read())``; that value.

        The kernel acts on its own time (page migration, NUMA balancing,
        a process starting): a test reads until what it asserts holds,
        within ``timeout`` seconds, and fails saying what it last saw.
        """
        deadline = time.monotonic() + timeout
        while True:
            value = read()
            if done(value):
                return value
            if time.monotonic() > deadline:
                self.fail(f'not seen within {timeout:.0f} s: {what}; '
                          f'last seen: {describe(value)}')
            time.sleep(POLL_SECONDS)

    def settled_view(self, guest):
        """The guest's view once its RAM stops growing between two reads.

        A guest started a moment ago still touches new pages (its
        firmware runs under emulation): a count read then is not the
        count of a moment later.
        """
        views = []

        def read():
            views.append(self.view(guest))
            return [v.ram.pages for v in views[-2:]]

        def steady(last_two):
            return len(last_two) == 2 and last_two[0] == last_two[1]

        self.eventually(read, steady, "the guest RAM's pages per node the "
                        'same in two reads', SETTLE_TIMEOUT)
        return views[-1]

    def view(self, guest):
        """The kernel's view of the guest's QEMU process, now."""
        return kernel.guest_view(self.lab.call(
            'tests.labhost.inside:kernel_view', guest.pid))

    def busy(self, cpus):
        """Keep ``cpus`` of the lab host busy until the test ends.

        Busy to the lab host's kernel (a task that never sleeps), while
        the other vCPUs keep QEMU's emulation thread: see
        :mod:`tests.labhost.busy`.
        """
        keep_busy(self.lab, cpus)
        self.addCleanup(self.lab.run, STOP_BUSY)

    def node_cpus(self, *nodes):
        return frozenset(cpu for node in nodes
                         for cpu in self.TOPOLOGY.node_cpus(node))

    def assert_kernel_follows(self, view, tune, iothreads=0,
                              interleave_step=1):
        """The QEMU process's memory and threads are where ``tune`` says.

        ``iothreads``: the domain's ``<iothreads>``, each in a cgroup of
        its own beside the emulator's and the vCPUs'. ``interleave_step``:
        see :func:`interleaved_least_pages`.
        """
        everything = self.node_cpus(*range(self.TOPOLOGY.nodes))
        mode, nodes = kernel.memory_policy(view.ram.policy)
        bound_mems = {k: kernel.cpulist(v) for k, v in
                      view.cpuset_mems.items() if v}
        if tune is None or tune.mode is None:
            self.assertEqual(('default', frozenset()), (mode, nodes))
            self.assertEqual({}, bound_mems)
        else:
            self.assertEqual(KERNEL_MODE[tune.mode], mode)
            if mode != 'default':
                self.assertEqual(tune.nodes, nodes)
            if tune.mode in ('strict', 'restrictive'):
                self.assertEqual(1.0, kernel.share_on(view.ram.pages,
                                                      tune.nodes))
                # The emulator's, each vCPU's and each I/O thread's.
                self.assertEqual({tune.nodes}, set(bound_mems.values()))
                self.assertEqual(1 + len(view.vcpu_threads()) + iothreads,
                                 len(bound_mems), view.cpuset_mems)
            if tune.mode == 'interleave':
                self.assert_interleaved(view.ram.pages, tune.nodes,
                                        interleave_step)
            if tune.mode == 'preferred':
                # Preferred, not bound: nearly all of it, memory allowing.
                self.assertGreater(kernel.share_on(view.ram.pages,
                                                   tune.nodes), 0.95)
        pins = tune.vcpu_pins if tune else ()
        cpus = (tune.cpus if tune else None) or everything
        for thread in view.vcpu_threads():
            # An empty pin: a vCPU the tune leaves free to run anywhere.
            expected = (pins[thread.vcpu] if pins else cpus) or everything
            self.assertEqual(expected, thread.cpus_allowed, thread)
        for thread in view.emulator_threads():
            self.assertEqual(cpus, thread.cpus_allowed, thread)

    def assert_interleaved(self, pages, nodes, step=1):
        """``pages`` ({node: count}) are interleaved over ``nodes``.

        Each node holds its share (:func:`interleaved_least_pages`), but
        where the kernel placed fewer ``step``-sized pieces than there are
        nodes (a guest that touched three huge pages, on four nodes):
        then only that they lie on two nodes or more, as first touch
        would have put them on one.
        """
        total = sum(pages.values())
        if step > 1 and total < step * len(nodes):
            holding = {node for node, count in pages.items() if count}
            self.assertLessEqual(holding, set(nodes), pages)
            self.assertGreaterEqual(len(holding), 2, pages)
            return
        least = interleaved_least_pages(total, len(nodes), step)
        for node in nodes:
            self.assertGreaterEqual(pages.get(node, 0), least, pages)

    # -- the agent --------------------------------------------------------

    def agent_config(self, page_migration=False, dry_run=False,
                     loops=(), interfaces='physnet1:eth0',
                     bandwidth_monitoring=False, hardware_sampling=False,
                     io_path_steering=False, access_monitoring=False,
                     loop_options=None):
        """The agent's file; ``loop_options``: more [numa_policy_loops]."""
        more = '\n'.join(f'{name} = {value}'
                         for name, value in (loop_options or {}).items())
        return AGENT_CONFIG.format(
            page_migration=page_migration, dry_run=dry_run,
            loops=','.join(loops), interfaces=interfaces, loop_options=more,
            uplinks_file=UPLINKS_FILE, state_dir=STATE_DIR,
            bandwidth_monitoring=bandwidth_monitoring,
            hardware_sampling=hardware_sampling,
            io_path_steering=io_path_steering,
            access_monitoring=access_monitoring)

    def run_agent(self, periods=1, pause=0.0, user='nova', **options):
        """Periods of the real agent in the lab host, as ``user``.

        Returns (reports, loop actions per period, log text).
        """
        deploy.write_config(self.lab, self.agent_config(**options))
        result = self.lab.call('tests.labhost.inside:run_agent',
                               deploy.CONFIG_FILES, periods=periods,
                               pause=pause, user=user, timeout=600)
        self.addDetail('agent-log', text(result['log']))
        reports = [None if r is None else report_wire.load_report(r)
                   for r in result['reports']]
        return reports, result['loop_actions'], result['log']

    @staticmethod
    def reported(report, guest):
        return {i.uuid: i for i in report.instances}[guest.uuid]
