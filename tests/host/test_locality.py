"""Measured locality on a real kernel: the hinting-fault signal and its use.

The guest is a real QEMU domain whose only vCPU runs a boot sector that
writes its low memory (64 KiB to 576 KiB) in a loop, for ever: the
kernel's NUMA balancing samples those writes as hinting faults of the
vCPU thread. Its vCPU runs on node 0; its memory is placed on node 1 at
start (a restrictive nodeset of node 1).

Under the lab host's TCG the guest's firmware runs for a long time
before the boot sector's loop: once, with the kernel's balancing off,
the loop's first word (0x1000 at 64 KiB) was still unwritten four
minutes after start, and at half a minute the firmware was still
running and no boot sector was in memory. The vCPU thread's writes are
then the firmware's, which go to the guest's RAM on node 1 too: what
the kernel samples and the agent does here holds for them as for the
loop's.

The lab host's nodes are emulated and equally fast: these tests prove
what the kernel samples and what the agent does with it, not any gain.
"""

import re
import time
import typing

from nova_numa_policy.contracts import policy

from agent.privsep import monitorgroups
from tests.host import base
from tests.labhost import deploy
from tests.labhost import domains
from tests.labhost import kernel

MEMORY_MB = 128
BOOT_IMAGE = '/tmp/lab-memory-writer.img'
# 16-bit code, loaded by the firmware at 0x7c00:
#       cli
# top:  mov ax, 0x1000          ; first segment: 64 KiB
# next: mov es, ax
#       xor di, di
#       mov cx, 0x8000          ; 32 Ki words: the whole 64 KiB segment
#       rep stosw
#       add ax, 0x1000
#       cmp ax, 0x9000          ; up to 576 KiB
#       jb next
#       jmp top
WRITER = bytes.fromhex('fab800108ec031ffb90080f3ab0500103d009072efebea')
BOOT_SECTOR = WRITER + bytes(510 - len(WRITER)) + b'\x55\xaa'
DISK = ("<devices><disk type='file' device='disk'>"
        "<driver name='qemu' type='raw'/>"
        f"<source file='{BOOT_IMAGE}'/><target dev='sda' bus='sata'/>"
        "</disk></devices>")
# Samples the tests wait for before they judge anything.
ENOUGH_SAMPLES = 64
SAMPLING_TIMEOUT = 240
# How long the agent's Carrefour periods may take to move the written
# pages: one period (about 20 s in the lab host) unless the kernel's
# sampling or marking got in the way of the first.
CARREFOUR_TIMEOUT = 120
# A guest the writer is not.
OTHER_UUID = '1c9f3b63-4d2e-4f60-9bac-1d2e3f4a5b6c'
# The shared-pages tests' buffer: 2048 pages.
SHARED_MB = 8
BUFFER_PAGES = SHARED_MB * 256
# How long numa_maps may take to count a buffer the kernel is moving.
COUNT_TIMEOUT = 60


def sampled_nodes(thread):
    return {node for node, faults in thread.faults.items() if faults}


def carrefour_lines(log):
    """The agent's lines on Carrefour and its page moves, of its log."""
    return [line for line in log.splitlines()
            if 'carrefour' in line or 'not moved' in line
            or 'could not be moved' in line]


class CarrefourPeriod(typing.NamedTuple):
    """One period of the agent's Carrefour loop, and the kernel after it."""

    report: object
    # Its MovePages actions on the guest.
    moves: list
    log: str
    # The kernel's view of the guest once the period ended.
    view: object


def local_share(thread):
    """The share of a node-0 thread's samples that were of node 0."""
    total = sum(thread.faults.values())
    return thread.faults.get(0, 0) / total if total else 0.0


class _MemoryWriterTest(base.LabTestCase):

    def setUp(self):
        super().setUp()
        self.lab.call('tests.labhost.inside:write_file', BOOT_IMAGE,
                      BOOT_SECTOR.hex())
        self.addCleanup(self.lab.run, f'rm -f {BOOT_IMAGE}')
        self.balancing(True)

    def balancing(self, on):
        self.lab.run(f'echo {int(on)} > /proc/sys/kernel/numa_balancing')
        self.addCleanup(self.lab.run,
                        'echo 1 > /proc/sys/kernel/numa_balancing')

    def start_writer(self, policy_value='first-touch+carrefour',
                     mode='restrictive'):
        """The writer, its vCPU kept to node 0, its memory on node 1."""
        specs = {policy.POLICY_KEY: policy_value}
        guest = domains.kept_by_the_driver(
            domains.nova_guest('instance-writer', 1, MEMORY_MB, specs),
            specs, self.TOPOLOGY.node_cpus(0))
        xml = guest.to_xml().replace(
            '</vcpu>', f"</vcpu><numatune><memory mode='{mode}' "
                       "nodeset='1'/></numatune>").replace(
            '</os>', "<boot dev='hd'/></os>").replace(
            '</domain>', DISK + '</domain>')
        return self.start_guest({}, xml=xml)

    def allow_node0(self, guest):
        """Widen the nodeset to both nodes: nothing moves by itself."""
        self.set_nodeset(guest.name, '0-1')

    def vcpu(self, guest, view=None):
        (thread,) = (view or self.view(guest)).vcpu_threads()
        return thread

    def assert_carrefour_saw_remote_accesses(self, log):
        # Nearly every sample is remote: 0 % local on a quiet machine,
        # 1 % seen once in a CI run with other jobs beside it. Well under
        # Carrefour's 80 % threshold either way.
        local = re.search(r'carrefour migrate: local accesses (\d+) %', log)
        self.assertIsNotNone(local, log)
        self.assertLess(int(local.group(1)), 10, local.group(0))

    def wait_for(self, guest, done, what, timeout=SAMPLING_TIMEOUT):
        """Read the kernel until ``done(vCPU thread, view)``; the view."""
        def read():
            view = self.view(guest)
            return self.vcpu(guest, view), view

        return self.eventually(
            read, lambda seen: done(*seen), what, timeout,
            describe=lambda seen: f'{seen[0]}, {seen[1].ram.pages}')[1]

    def sampled(self, guest):
        return self.vcpu(guest, self.wait_for(
            guest, lambda t, v: sum(t.faults.values()) >= ENOUGH_SAMPLES,
            f'{ENOUGH_SAMPLES} hinting faults of the vCPU thread'))

    def carrefour_period(self, guest, dry_run=False):
        """One period of the agent's Carrefour loop: a CarrefourPeriod."""
        (report,), (actions,), log = self.run_agent(
            page_migration=True, dry_run=dry_run, loops=('carrefour',))
        moves = [a for a in actions
                 if a[:3] == ['carrefour', 'MovePages', guest.uuid]]
        return CarrefourPeriod(report, moves, log, self.view(guest))

    def agent_config(self, **options):
        # Appended to [numa_policy_loops], the base configuration's last
        # section: act in the first period, on the lab's samples.
        return (super().agent_config(**options)
                + 'hysteresis_pin_count = 0\n'
                  'pages_per_second = 20000\n'
                  f'carrefour_min_samples = {ENOUGH_SAMPLES}\n'
                  + base.PRIVILEGED)


class HintingFaultSignalTest(_MemoryWriterTest):

    def test_the_kernel_samples_remote_accesses_and_the_agent_reads_them(
            self):
        guest = self.start_writer()
        thread = self.sampled(guest)
        # What the kernel says: every sample is of node 1's memory, by a
        # thread only allowed on node 0.
        self.assertEqual(self.node_cpus(0), thread.cpus_allowed)
        self.assertEqual({1}, sampled_nodes(thread), thread)
        # Dry run: the decision, without the kernel being asked to move.
        # In the first period, or a later one if the kernel's decaying
        # count fell below Carrefour's threshold meanwhile.
        period = self.eventually(
            lambda: self.carrefour_period(guest, dry_run=True),
            lambda seen: seen.moves, 'a Carrefour period planning a move',
            CARREFOUR_TIMEOUT,
            describe=lambda seen: carrefour_lines(seen.log))
        report = period.report
        self.assertEqual('hinting-faults', report.locality_signal)
        for value in ('first-touch+carrefour', 'interleave+carrefour',
                      'auto'):
            self.assertIn(value, report.enforceable_policies)
        reported = self.reported(report, guest)
        # One node sampled among the guest's two (vCPU on 0, memory on
        # 1): an imbalance of 100 %, the moderate class.
        self.assertEqual('moderate', reported.access_class)
        self.assert_carrefour_saw_remote_accesses(period.log)
        # A dry run moves nothing: the kernel's view after the period.
        self.assertEqual({1}, {n for n, p in period.view.ram.pages.items()
                               if p})

    def test_without_the_kernels_balancing_there_is_no_signal(self):
        self.balancing(False)
        guest = self.start_writer()
        time.sleep(10)
        self.assertEqual(set(), sampled_nodes(self.vcpu(guest)))
        (report,), _, log = self.run_agent(page_migration=True,
                                           loops=('carrefour',))
        self.assertIsNone(report.locality_signal)
        self.assertNotIn('first-touch+carrefour',
                         report.enforceable_policies)
        self.assertIsNone(self.reported(report, guest).access_class)
        self.assertIn("loop carrefour not started: backend libvirt lacks "
                      "['access-counters']", log)


class BandwidthTest(_MemoryWriterTest):
    """Memory bandwidth where the CPU cannot count it: said, and refused.

    The lab host's CPU is TCG's, which has no resctrl monitoring: the
    kernel cannot mount resctrl. What is proven is the path an operator
    meets on such a host, on the real kernel and the real monitoring
    daemon started through sudo as deployed; counting itself cannot run.
    """

    def test_the_agent_says_why_and_the_daemon_touches_nothing(self):
        self.balancing(False)
        self.addCleanup(self.lab.run, 'umount /tmp/resctrl 2>/dev/null; '
                                      'rmdir /tmp/resctrl')
        mount = self.lab.run('mkdir -p /tmp/resctrl && mount -t resctrl '
                             'resctrl /tmp/resctrl', check=False)
        self.assertNotEqual(0, mount.rc, 'resctrl mounted on a TCG CPU')
        guest = self.start_writer()
        thread = self.vcpu(guest)
        # The real kernel's text for a thread while resctrl is unmounted.
        text = self.lab.run(f'cat /proc/{guest.pid}/task/{thread.tid}/'
                            'cpu_resctrl_groups').stdout
        self.assertEqual(('', ''), monitorgroups.groups_of(text))
        (report,), _, log = self.run_agent(
            page_migration=True, bandwidth_monitoring=True,
            loops=('carrefour',))
        self.assertIsNone(report.locality_signal)
        self.assertIn('No locality signal', log)
        self.assertIn('resctrl is not mounted at /sys/fs/resctrl', log)
        # The monitoring daemon, as nova starts it: root, no capability,
        # and it writes nothing where resctrl is not mounted.
        result = self.lab.call(
            'tests.labhost.inside:privsep_probes', deploy.CONFIG_FILES,
            [['join', [guest.pid, guest.uuid, [thread.tid]]],
             ['join', [guest.pid, OTHER_UUID, [thread.tid]]],
             ['join', [guest.pid, '../../etc', [thread.tid]]]],
            module='monitorgroups', user='nova', timeout=300)
        refused, other_guest, path = result['answers']
        self.assertEqual('OSError', refused[0], refused)
        self.assertIn('not a resctrl mount', refused[1])
        self.assertEqual('NotAGuest', other_guest[0], other_guest)
        self.assertEqual('ValueError', path[0], path)
        (status,) = result['daemons']
        self.addDetail('daemon-status', base.text(status))
        fields = dict(line.split(':\t', 1) for line in status.splitlines()
                      if ':\t' in line)
        self.assertEqual('0', fields['Uid'].split()[0])
        self.assertEqual(0, int(fields['CapEff'], 16))
        self.assertEqual(0, int(fields['CapPrm'], 16))


class VcpuWaitTest(_MemoryWriterTest):
    """Run-queue delay: the writer's vCPU, alone, then sharing its CPU."""

    def kernel_wait_share(self, guest, seconds=3):
        """The vCPU thread's waiting share, from the kernel's schedstat.

        Over windows of ``seconds`` until one in which the thread was
        runnable at all: while the guest's firmware halts its vCPU (longer
        under a loaded machine), the thread neither runs nor waits.
        """
        path = f'/proc/{guest.pid}/task/{self.vcpu(guest).tid}/schedstat'

        def times():
            ran, waited = self.lab.run(f'cat {path}').stdout.split()[:2]
            return int(ran), int(waited)

        def window():
            before = times()
            time.sleep(seconds)
            after = times()
            return after[0] - before[0], after[1] - before[1]

        ran, waited = self.eventually(
            window, lambda delta: sum(delta) > 0,
            'the vCPU thread runnable in a window', 60)
        return waited / (ran + waited)

    def agent_wait_share(self, guest):
        """The agent's reading of the same, once it has one.

        The agent reads schedstat twice a rate window apart in its first
        period; in a window where the vCPU was halted (its firmware
        waiting) it rightly reports nothing: another period is asked for,
        as the kernel's figure is read again above.
        """
        def read():
            (report,), _, _ = self.run_agent()
            return report

        report = self.eventually(
            read, lambda found: self.reported(found, guest).cpu_wait
            is not None, "the agent's run-queue reading of the vCPU", 180,
            describe=lambda found: self.reported(found, guest))
        return report, self.reported(report, guest).cpu_wait

    def hog(self, cpu):
        """A busy loop on ``cpu`` at the highest priority, until the end."""
        self.lab.run(f"nice -n -19 taskset -c {cpu} sh -c ': lab-hog; "
                     f"while :; do :; done' >/dev/null 2>&1 &")
        self.addCleanup(self.lab.run, "pkill -f '[l]ab-hog' || true")

    def test_a_vcpu_sharing_its_cpu_is_reported_waiting(self):
        # The guest's vCPU pinned to one CPU, then a busy loop at the
        # highest priority on that CPU beside it.
        guest = self.start_writer()
        cpu = min(self.node_cpus(0))
        self.lab.call('tests.labhost.inside:pin_vcpu', guest.name, 0, cpu)
        kernel_alone = self.kernel_wait_share(guest)
        report, alone = self.agent_wait_share(guest)
        self.assertIn('cpu-wait', report.measurements)
        self.assertIn('interface-traffic', report.measurements)
        self.hog(cpu)
        kernel_shared = self.kernel_wait_share(guest)
        _, shared = self.agent_wait_share(guest)
        self.addDetail('shares', base.text(
            f'kernel alone {kernel_alone}, agent alone {alone}; kernel '
            f'sharing {kernel_shared}, agent sharing {shared}'))
        # Alone, the vCPU thread waits little (the agent's own run is the
        # only other work near it); beside the busy loop it waits nearly
        # whenever it could run, in the kernel's figures and the agent's.
        self.assertLess(alone, 0.5)
        self.assertGreater(kernel_shared, 0.8)
        self.assertGreater(shared, 0.8)


class CarrefourOnHintingFaultsTest(_MemoryWriterTest):

    def open_node0_to_the_emulator_only(self, guest):
        """Let move_pages, not the kernel's balancing, reach node 0.

        move_pages(2) checks the target process's cpuset (QEMU's main
        thread, in the domain's emulator cgroup); the kernel's balancing
        allocates for the faulting thread (the vCPU, in its own cgroup).
        Node 0 opened to the first only: Carrefour's moves can land
        there, the kernel's cannot, so what arrives is Carrefour's.
        """
        view = self.view(guest)
        (emulator,) = [group for group in view.cpuset_mems
                       if group.endswith('/emulator')]
        self.lab.run(f'echo 0-1 > /sys/fs/cgroup/{emulator}/cpuset.mems')

    def test_carrefour_moves_the_hot_pages_and_the_local_share_rises(self):
        guest = self.start_writer()
        self.sampled(guest)
        self.open_node0_to_the_emulator_only(guest)
        before = self.view(guest)
        self.assertEqual({1}, {n for n, p in before.ram.pages.items() if p})
        # The written pages (576 KiB, in the guest's first 2 MiB: one
        # transparent huge page) reach node 0 in the first period, or in
        # a later one. A period may rightly leave them: the samples are a
        # decaying average the kernel halves at each scan, so a count
        # above Carrefour's threshold when read here can be below it when
        # the agent reads it; and on this kernel (6.1) move_pages cannot
        # move a page the scanner has just marked and nobody touched
        # since. (A CI run failed the one-period form of this test; its
        # output did not keep which of the checks.)
        period = self.eventually(
            lambda: self.carrefour_period(guest),
            lambda seen: seen.moves and seen.view.ram.pages.get(0, 0)
            >= 576 // 4,
            'a Carrefour period moving the written pages to node 0',
            CARREFOUR_TIMEOUT,
            describe=lambda seen: f'moves {seen.moves}, pages '
                                  f'{seen.view.ram.pages}; agent: '
                                  f'{carrefour_lines(seen.log)}')
        log, after = period.log, period.view
        self.assert_carrefour_saw_remote_accesses(log)
        # The plan was carried out: the kernel refused none of it.
        self.assertEqual('applied',
                         self.reported(period.report, guest).enforcement)
        # The kernel migrated nothing for the vCPU: Carrefour moved them.
        self.assertEqual(self.vcpu(guest, before).pages_migrated,
                         self.vcpu(guest, after).pages_migrated)
        # The cold rest stays where the scanner marked it, and the agent
        # says why.
        if kernel.share_on(after.ram.pages, {0}) < 0.9:
            self.assertIn("marked them for a hinting fault", log)
        # The kernel goes on sampling: the writes now land local. (QEMU's
        # own memory, which a TCG vCPU thread also touches, stays on node
        # 1: the samples turn partly local, not wholly.)
        self.wait_for(
            guest, lambda t, v: local_share(t) > 0.2,
            'over a fifth of the vCPU thread\'s samples local')


class CoexistenceTest(_MemoryWriterTest):
    """What the kernel's balancing does on its own, beside the agent."""

    def test_it_pulls_touched_pages_to_their_thread_and_nothing_else(self):
        guest = self.start_writer(policy_value='first-touch')
        self.sampled(guest)
        self.allow_node0(guest)
        # Both in one view: pages of node 0 alone can be QEMU's own
        # (its emulator thread, on node 0 too, touches guest RAM for
        # the disk), and the counter may be read a moment before the
        # numa_maps that would show its pages.
        view = self.wait_for(
            guest, lambda t, v: t.pages_migrated > 0 and
            v.ram.pages.get(0, 0) > 0,
            'the kernel migrating written guest memory to its writer '
            '(the vCPU thread)')
        ram = view.ram.pages
        # The written pages follow their writer: spreading them over
        # nodes by hand would be undone. The untouched rest stays.
        self.assertLess(kernel.share_on(ram, {0}), 0.1, ram)


class SharedPagesTest(base.LabTestCase):
    """The kernel's balancing on pages that threads of two nodes share.

    Two processes each write the whole of a buffer allocated interleaved
    over both nodes, then left to the default policy: one from a thread
    on each node, one from two threads on node 0. The kernel brings the
    second's pages to node 0. It does not keep the first's spread either:
    it moves them between the nodes in bulk, toward whichever node faults
    most at the time, until one node holds most of them. A buffer
    allocated on node 0 and written as much from each node does not stay
    there, nor anywhere: its pages go back and forth in bulk (the
    simulator's kernel gathers shared pages on the node whose vCPUs
    faulted most in the period, a draw, for this). So spreading a
    guest's memory by page moves would not stay spread where the kernel
    balances, even over vCPUs on several nodes: Carrefour's interleave
    step and ``auto``'s interleaving are held back there
    (doc/source/agent.rst, "Coexistence with the kernel's balancing").
    """

    def setUp(self):
        super().setUp()
        self.lab.run('echo 1 > /proc/sys/kernel/numa_balancing')

    def start_sharer(self, *cpus, on_node=None):
        """A writer process on ``cpus``: (pid, its buffer's address).

        The buffer starts interleaved over the nodes, or all on
        ``on_node``.
        """
        out = f'/tmp/sharer-{"-".join(map(str, cpus))}'
        where = '' if on_node is None else f'--on {on_node} '
        pid = int(self.lab.run(
            f'{self.lab.python} -m tests.labhost.sharer {SHARED_MB} '
            f'{where}{" ".join(map(str, cpus))} > {out} 2>&1 & echo $!'
        ).stdout)
        self.addCleanup(self.lab.run, f'rm -f {out}')
        self.addCleanup(self.lab.run, f'kill {pid}', check=False)
        printed = self.eventually(
            lambda: self.lab.read(out).strip(), bool,
            f'the writers on CPUs {cpus} printing their buffer', 120)
        return pid, int(printed.split()[0], 16)

    def buffer_pages(self, pid, address):
        # The mapping holding the buffer: the kernel may have merged it
        # with an anonymous neighbour, so it may start below it.
        buffer = max((m for m in kernel.mappings(
            self.lab.read(f'/proc/{pid}/numa_maps'))
            if m.address <= address), key=lambda m: m.address)
        return buffer.pages

    def pages_until(self, writer, done, what, seen,
                    timeout=SAMPLING_TIMEOUT):
        """Read ``writer``'s buffer until ``done(pages)``, kept in ``seen``.

        numa_maps counts present pages only: a page (or a whole huge
        page) the kernel is migrating at the moment of a read is missing
        from it until the move ends (once 1539 of 2048 pages were
        counted, 509 short: about a huge page's worth).
        """
        def read():
            seen.append(self.buffer_pages(*writer))
            return seen[-1]

        return self.eventually(read, done, what, timeout)

    def test_pages_written_from_both_nodes_do_not_stay_spread(self):
        node0, node1 = (self.TOPOLOGY.node_cpus(n) for n in (0, 1))
        spread = self.start_sharer(node0[0], node1[0])
        packed = self.start_sharer(*node0)
        # Every page written, whatever the kernel has moved already.
        for writer in (spread, packed):
            self.pages_until(
                writer, lambda pages: sum(pages.values()) >= BUFFER_PAGES,
                f'numa_maps counting all {BUFFER_PAGES} pages of the '
                f'buffer', [], timeout=COUNT_TIMEOUT)
        self.pages_until(
            packed, lambda pages: kernel.share_on(pages, {0}) > 0.9,
            "the kernel bringing node 0's writers' pages to node 0", [])
        seen = []
        self.addDetail('spread-buffer', base.text(repr(seen)))
        self.pages_until(
            spread, lambda pages: max(kernel.share_on(pages, {n})
                                      for n in (0, 1)) > 0.75,
            'the kernel gathering the pages both nodes write on one of '
            'them', seen)

    def test_pages_both_nodes_write_as_much_go_back_and_forth(self):
        # One writer per node, nothing else running: the kernel neither
        # leaves the pages on the node they start on nor keeps them
        # still anywhere. It moves them in bulk toward whichever node
        # faults most at the time, which changes.
        node0, node1 = (self.TOPOLOGY.node_cpus(n) for n in (0, 1))
        writer = self.start_sharer(node0[0], node1[0], on_node=0)
        seen = []
        self.addDetail('buffer', base.text(repr(seen)))
        self.pages_until(
            writer, lambda pages: kernel.share_on(pages, {0}) < 0.5,
            'the kernel moving half the pages off node 0', seen)
        lowest = min(kernel.share_on(p, {0}) for p in seen)
        self.pages_until(
            writer, lambda pages: kernel.share_on(pages, {0}) > lowest + 0.15,
            'the kernel moving pages back to node 0', seen)
