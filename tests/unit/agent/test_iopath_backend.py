"""The guests' I/O path in the libvirt backend (agent.backend.iopath).

The steering daemon is a fake recording its calls (its own checks are
tests/unit/agent/test_steering_daemon.py); the host is a fixture tree.
"""

import json
import os

import fixtures

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import errors
from nova_numa_policy.contracts import scope

from agent.backend import iopath
from agent.backend import libvirt_backend
from agent.backend import settings
from agent.sensors import discovery
from agent.service import cmd
from tests import base as test_base
from tests import fixtures as host_fixtures
from tests.unit.agent import base
from tests.unit.agent import iopath_files as files
from tests.unit.agent import test_pagemove_backend as guest_files
from tests.unit import conf_fixture

PID = 6161


class FakeSteering:
    """The daemon's side as the backend sees it: writes the fixture tree."""

    def __init__(self, root):
        self.root = root
        self.calls = []
        self.reason = None
        self.refuse = None
        # What irqbalance answers of its banned list before a call.
        self.was_banned = None

    def steer(self, nic, irq, cpus, banned):
        self.calls.append(('steer', nic, irq, frozenset(cpus), banned))
        if self.refuse:
            raise self.refuse
        files.irq(self.root, irq, ','.join(map(str, sorted(cpus))))
        return frozenset(cpus), frozenset(), self.was_banned

    def balancer_state(self):
        self.calls.append(('balancer_state',))
        return self.reason

    def pin_threads(self, uuid, pid, tids, cpus):
        self.calls.append(('pin', uuid, pid, tuple(tids), frozenset(cpus)))
        if self.refuse:
            raise self.refuse
        return {tid: sorted(cpus) for tid in tids}


class FoundRecordTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                'state')
        self.path = os.path.join(self.dir, iopath.RECORD_NAME)

    def test_kept_across_restarts_until_dropped(self):
        record = iopath.FoundRecord(self.path)
        self.assertIsNone(record.found(120))
        record.keep(120, iopath.Found('ens1f0', {0, 1}))
        record.keep(121, iopath.Found('ens1f0', {2}, banned_before=True))
        again = iopath.FoundRecord(self.path)
        self.assertEqual(frozenset({0, 1}), again.found(120))
        again.drop(120)
        self.assertIsNone(iopath.FoundRecord(self.path).found(120))
        with open(self.path) as f:
            self.assertEqual(
                {'version': 1, 'irqs': {'121': {
                    'nic': 'ens1f0', 'found': [2], 'banned_before': True}}},
                json.load(f))

    def test_an_unreadable_record_is_said_and_started_afresh(self):
        os.makedirs(self.dir)
        with open(self.path, 'w') as f:
            f.write('{"irqs": [')
        log = self.useFixture(fixtures.FakeLogger())
        self.assertIsNone(iopath.FoundRecord(self.path).found(120))
        self.assertIn('Ignoring the IRQ affinity record', log.output)

    def test_a_record_that_cannot_be_written_refuses(self):
        with open(self.dir, 'w'):
            pass  # a file where the directory should be
        record = iopath.FoundRecord(self.path)
        self.assertRaises(errors.NotEnforceable, record.keep, 120,
                          iopath.Found('x', {1}))


class IoPathTree(test_base.TestCase):

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.root = os.path.join(tmp, 'root')
        self.state = os.path.join(tmp, 'state')
        files.pci_nic(self.root, 'ens1f0', vectors=(120, 121))
        files.irq(self.root, 120, '0-7', '3')
        files.irq(self.root, 121, '0-7')
        self.steering = FakeSteering(self.root)
        self.clock = base.FakeClock()
        self.bridges = {}
        self.io = iopath.IoPath(self.root, self.state, self.clock,
                                self.steering, self.bridges.get)


NICS = (backend.NicInfo('ens1f0', 0),)


class IrqsTest(IoPathTree):

    def test_each_vector_with_its_affinity(self):
        self.assertEqual((
            backend.IrqState(120, 'ens1f0', frozenset(range(8)),
                             frozenset({3})),
            backend.IrqState(121, 'ens1f0', frozenset(range(8)))),
            self.io.irqs(NICS + (backend.NicInfo('br0', None),)))

    def test_the_first_steer_keeps_what_was_found(self):
        self.io.steer(120, 'ens1f0', {4, 5})
        self.assertEqual(('steer', 'ens1f0', 120, frozenset({4, 5}), True),
                         self.steering.calls[-1])
        self.io.steer(120, 'ens1f0', {6})
        state = self.io.irqs(NICS)[0]
        self.assertEqual(frozenset({6}), state.affinity)
        self.assertEqual(frozenset(range(8)), state.found)
        # A restarted agent still knows.
        fresh = iopath.IoPath(self.root, self.state, self.clock,
                              self.steering)
        self.assertEqual(frozenset(range(8)), fresh.irqs(NICS)[0].found)

    def test_giving_back_what_was_found_releases_it(self):
        self.io.steer(120, 'ens1f0', {4})
        self.io.steer(120, 'ens1f0', set(range(8)))
        self.assertEqual(('steer', 'ens1f0', 120, frozenset(range(8)),
                          False), self.steering.calls[-1])
        self.assertIsNone(self.io.irqs(NICS)[0].found)

    def test_banned_by_the_operator_it_stays_banned(self):
        self.steering.was_banned = True
        self.io.steer(120, 'ens1f0', {4})
        self.io.steer(120, 'ens1f0', {5})
        self.assertTrue(self.io.record.get(120).banned_before)
        self.io.steer(120, 'ens1f0', set(range(8)))
        # Written back, irqbalance's list left as it was.
        self.assertEqual(('steer', 'ens1f0', 120, frozenset(range(8)),
                          None), self.steering.calls[-1])
        self.assertIsNone(self.io.record.get(120))

    def test_banned_by_the_agent_it_is_released(self):
        self.io.steer(120, 'ens1f0', {4})
        self.steering.was_banned = True  # the agent's own ban, seen later
        self.io.steer(120, 'ens1f0', {5})
        self.assertFalse(self.io.record.get(120).banned_before)

    def test_asked_for_what_it_has_it_is_claimed_then_given_back(self):
        # Where it is already: the agent takes it over (irqbalance is
        # told to leave it alone) and keeps what it found.
        self.io.steer(121, 'ens1f0', set(range(8)))
        self.assertEqual(1, len(self.steering.calls))
        self.assertEqual(frozenset(range(8)), self.io.irqs(NICS)[1].found)
        # Asked again for what was found: given back, and forgotten.
        self.io.steer(121, 'ens1f0', set(range(8)))
        self.assertIsNone(self.io.irqs(NICS)[1].found)

    def test_a_vector_gone(self):
        self.assertRaises(iopath.IrqGone, self.io.steer, 999, 'ens1f0', {1})

    def test_a_refused_first_steer_still_keeps_what_was_found(self):
        # The write may have happened before the refusal (irqbalance's
        # release, say): what to restore must be known.
        self.steering.refuse = errors.NotEnforceable('no')
        self.assertRaises(errors.NotEnforceable, self.io.steer, 120,
                          'ens1f0', {4})
        self.assertEqual(frozenset(range(8)), self.io.irqs(NICS)[0].found)


class HandsOffTest(IoPathTree):

    def test_no_irqbalance_no_question(self):
        self.assertIsNone(self.io.hands_off())
        self.assertEqual([], self.steering.calls)

    def test_an_irqbalance_that_does_not_answer_is_said_once(self):
        files.process(self.root, 700, 'irqbalance')
        self.steering.reason = 'irqbalance (pid 700) runs without a socket'
        log = self.useFixture(fixtures.FakeLogger())
        for _ in range(3):
            self.assertEqual(self.steering.reason, self.io.hands_off())
        self.assertEqual(1, log.output.count('Leaving the NICs'))
        self.assertEqual(1, self.steering.calls.count(('balancer_state',)))

    def test_processes_are_scanned_again_after_a_while(self):
        self.assertIsNone(self.io.hands_off())
        files.process(self.root, 700, 'irqbalance')
        self.steering.reason = 'no socket'
        self.assertIsNone(self.io.hands_off())
        self.clock.now += iopath.BALANCER_RESCAN
        self.assertEqual('no socket', self.io.hands_off())

    def test_an_irqbalance_gone_is_seen_at_once(self):
        files.process(self.root, 700, 'irqbalance')
        self.steering.reason = 'no socket'
        self.assertEqual('no socket', self.io.hands_off())
        os.unlink(os.path.join(self.root, 'proc/700/comm'))
        self.assertIsNone(self.io.hands_off())


def guest_xml(*interfaces):
    return (f"<domain><devices>{''.join(interfaces)}</devices></domain>")


BRIDGE = ("<interface type='bridge'><source bridge='{}'/>"
          "<model type='virtio'/></interface>")
DIRECT = ("<interface type='direct'><source dev='{}' mode='bridge'/>"
          "<model type='virtio'/></interface>")
NETWORK = ("<interface type='network'><source network='{}'/>"
           "<model type='virtio'/></interface>")
VF = ("<interface type='hostdev'><source><address type='pci' "
      "domain='0x0000' bus='0x3b' slot='0x02' function='0x1'/></source>"
      "</interface>")


class GuestNicsTest(IoPathTree):

    def nics(self, *interfaces, nics=NICS):
        self.io.learn('u', guest_xml(*interfaces))
        return self.io.nics('u', backend.HostTopology((), nics))

    def test_a_bridge_named_as_an_uplinks(self):
        nics = NICS + (backend.NicInfo('ens2', 1, bridge='br-ex'),)
        self.assertEqual({'ens2'}, self.nics(BRIDGE.format('br-ex'),
                                             nics=nics))
        self.assertEqual({'ens1f0'}, self.nics(BRIDGE.format('ens1f0')))

    def test_a_linux_bridge_through_its_ports(self):
        files.write(self.root, 'sys/class/net/bond0/bonding/mode', '1\n')
        os.symlink('../ens1f0', os.path.join(
            self.root, 'sys/class/net/bond0/lower_ens1f0'))
        files.write(self.root, 'sys/class/net/br0/bridge/stp_state', '0\n')
        os.symlink('../bond0', os.path.join(
            self.root, 'sys/class/net/br0/lower_bond0'))
        self.assertEqual({'ens1f0'}, self.nics(BRIDGE.format('br0')))

    def test_a_macvtap_on_a_vlan(self):
        files.write(self.root, 'sys/class/net/ens1f0.100/mtu', '1500\n')
        os.symlink('../ens1f0', os.path.join(
            self.root, 'sys/class/net/ens1f0.100/lower_ens1f0'))
        self.assertEqual({'ens1f0'}, self.nics(DIRECT.format('ens1f0.100')))

    def test_a_vf_by_its_pf(self):
        pf = 'sys/bus/pci/devices/0000:3b:00.0'
        vf = 'sys/bus/pci/devices/0000:3b:02.1'
        files.write(self.root, f'{pf}/net/ens1f0/ifindex', '4\n')
        files.write(self.root, f'{vf}/vendor', '0x8086\n')
        os.symlink(os.path.join(self.root, pf),
                   os.path.join(self.root, vf, 'physfn'))
        os.symlink(os.path.join(self.root, vf),
                   os.path.join(self.root, pf, 'virtfn3'))
        self.assertEqual({'ens1f0'}, self.nics(VF))

    def test_a_network_by_its_bridge_if_it_has_one(self):
        self.bridges['default'] = 'ens1f0'
        self.assertEqual({'ens1f0'}, self.nics(NETWORK.format('default')))
        self.assertEqual(set(), self.nics(NETWORK.format('macvtaps')))

    def test_found_again_with_the_topology_only(self):
        topology = backend.HostTopology((), NICS)
        files.write(self.root, 'sys/class/net/br0/bridge/stp_state', '0\n')
        self.io.learn('u', guest_xml(BRIDGE.format('br0')))
        self.assertEqual(set(), self.io.nics('u', topology))
        os.symlink('../ens1f0', os.path.join(
            self.root, 'sys/class/net/br0/lower_ens1f0'))
        self.assertEqual(set(), self.io.nics('u', topology))
        self.assertEqual({'ens1f0'}, self.io.nics('u', backend.HostTopology(
            (), NICS)))

    def test_no_uplinks_nothing(self):
        self.assertEqual(set(), self.nics(BRIDGE.format('ens1f0'), nics=()))
        self.assertEqual(set(), self.io.nics('unknown', backend.HostTopology(
            (), NICS)))


class WorkersTest(IoPathTree):

    def setUp(self):
        super().setUp()
        files.kthreadd(self.root, [900, 901, 902])
        files.thread(self.root, 900, 'vhost-10', '0-3', ppid=2)
        files.thread(self.root, 901, 'vhost-10', '4-5', ppid=2)
        files.thread(self.root, 902, 'vhost-20', '6', ppid=2)
        for uuid in ('a', 'b'):
            self.io.learn(uuid, guest_xml(BRIDGE.format('br0')))
        self.scans = 0
        real = iopath.vhost.kernel_workers

        def counted(root):
            self.scans += 1
            return real(root)
        self.useFixture(fixtures.MonkeyPatch(
            'agent.sensors.vhost.kernel_workers', counted))

    def cpus(self, uuid, pid):
        return self.io.io_thread_cpus(uuid, pid, iopath.vhost.guestproc
                                      .read_text)

    def test_the_union_of_the_workers_cpus(self):
        self.io.new_observation()
        self.assertEqual(frozenset(range(6)), self.cpus('a', 10))
        self.assertEqual(frozenset({6}), self.cpus('b', 20))
        self.assertEqual(1, self.scans)
        # Next period: the workers are known, no scan.
        self.io.new_observation()
        self.assertEqual(frozenset(range(6)), self.cpus('a', 10))
        self.assertEqual(1, self.scans)

    def test_a_worker_gone_lists_them_again(self):
        self.io.new_observation()
        self.cpus('a', 10)
        os.unlink(os.path.join(self.root, 'proc/901/status'))
        files.kthreadd(self.root, [900, 902])
        self.io.new_observation()
        self.assertEqual(frozenset(range(4)), self.cpus('a', 10))

    def test_a_guest_without_vhost_is_not_looked_for(self):
        self.io.learn('a', guest_xml(VF))
        self.assertEqual(frozenset(), self.cpus('a', 10))
        self.assertEqual(0, self.scans)

    def test_pinned_through_the_daemon(self):
        self.io.new_observation()
        self.io.pin('a', 10, {1})
        self.assertEqual(('pin', 'a', 10, (900, 901), frozenset({1})),
                         self.steering.calls[-1])
        self.assertRaises(errors.NotEnforceable, self.io.pin, 'b', 30, {1})


UPLINKED = '66666666-6666-4666-8666-666666666666'


class BackendTest(base.TestDriverHostTest):
    """ens2f0 (node 1) raising 120-121 under br-ex; a guest on br-ex."""

    def domains(self):
        xml = base.host_fixtures.domain_xml(6, UPLINKED)
        xml = xml.replace('</domain>', (
            "<devices><interface type='bridge'><source bridge='br-ex'/>"
            "<model type='virtio'/></interface></devices></domain>"))
        return base.domains() + [xml]

    def setUp(self):
        super().setUp()
        for vector in (120, 121):
            files.write(self.root,
                        f'sys/class/net/ens2f0/device/msi_irqs/{vector}', '')
            files.irq(self.root, vector, '0-7', '0')
        files.write(self.root, 'sys/devices/system/cpu/isolated', '7\n')
        guest_files.write_qemu(self.root, 'instance-00000006', UPLINKED, PID)
        files.thread(self.root, PID + 9, f'vhost-{PID}', '4-6', tgid=PID,
                     pid=PID)
        self.state = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                  'state')
        self.steering = FakeSteering(self.root)
        self.backend = self.steered(self.steering)

    def steered(self, steering):
        return libvirt_backend.LibvirtBackend(
            self.connection,
            paths=settings.HostPaths(root=self.root, state_dir=self.state),
            timing=settings.Timing(sleep=lambda seconds: None),
            share=settings.HostShare(
                uplinks=discovery.Uplinks(
                    bridge_interfaces={'br-ex': 'ens2f0'}),
                cpu_partition=scope.CpuPartition(dedicated=frozenset({0, 1}))),
            helpers=settings.Helpers(steering=steering))

    def instance(self, snapshot, uuid=UPLINKED):
        return [i for i in snapshot.instances if i.uuid == uuid][0]

    def test_capabilities_with_the_steering_daemon_only(self):
        caps = self.backend.capabilities()
        self.assertIn(backend.CAP_IRQ_STEERING, caps)
        self.assertIn(backend.CAP_IO_THREAD_PINNING, caps)
        caps = self.steered(None).capabilities()
        self.assertNotIn(backend.CAP_IRQ_STEERING, caps)
        self.assertNotIn(backend.CAP_IO_THREAD_PINNING, caps)

    def test_observed(self):
        snapshot = self.backend.observe()
        self.assertEqual(frozenset({0, 1, 7}),
                         snapshot.topology.reserved_cpus)
        self.assertEqual([120, 121], [i.irq for i in snapshot.irqs])
        self.assertEqual({'ens2f0'}, {i.nic for i in snapshot.irqs})
        self.assertIsNone(snapshot.irq_hands_off)
        guest = self.instance(snapshot)
        self.assertEqual(frozenset({'ens2f0'}), guest.nics)
        self.assertEqual(frozenset({4, 5, 6}), guest.io_thread_cpus)
        other = self.instance(snapshot, base.HOME_FROM_NOVA)
        self.assertEqual(frozenset(), other.nics)
        self.assertEqual(frozenset(), other.io_thread_cpus)

    def test_without_the_daemon_no_interrupts_and_no_workers(self):
        snapshot = self.steered(None).observe()
        self.assertEqual((), snapshot.irqs)
        self.assertEqual(frozenset(), self.instance(snapshot).io_thread_cpus)
        # Its uplinks are still said.
        self.assertEqual(frozenset({'ens2f0'}), self.instance(snapshot).nics)

    def test_steered_and_given_back_through_apply(self):
        self.backend.observe()
        self.backend.apply(backend.SteerIrq(
            backend.nic_subject('ens2f0'), 'test', irq=120, nic='ens2f0',
            cpus=frozenset({4}), previous=frozenset(range(8))))
        state = self.backend.observe().irqs[0]
        self.assertEqual((frozenset({4}), frozenset(range(8))),
                         (state.affinity, state.found))
        self.backend.steer_irq(120, 'ens2f0', frozenset(range(8)))
        self.assertIsNone(self.backend.observe().irqs[0].found)

    def test_hands_off_refuses_a_steer(self):
        files.process(self.root, 700, 'irqbalance')
        self.steering.reason = 'irqbalance does not answer'
        snapshot = self.backend.observe()
        self.assertEqual('irqbalance does not answer', snapshot.irq_hands_off)
        self.assertRaises(errors.NotEnforceable, self.backend.steer_irq,
                          120, 'ens2f0', {4})

    def test_vhost_workers_pinned(self):
        self.backend.observe()
        self.backend.apply(backend.PinIoThreads(UPLINKED, 'test',
                                                cpus=frozenset({5})))
        self.assertEqual(('pin', UPLINKED, PID, (PID + 9,), frozenset({5})),
                         self.steering.calls[-1])

    def test_only_an_uplinks_interrupts(self):
        self.assertRaises(errors.NotEnforceable, self.backend.steer_irq,
                          120, 'eno1', {4})
        self.assertEqual([], [c for c in self.steering.calls
                              if c[0] == 'steer'])

    def test_without_the_daemon_nothing_is_steered(self):
        plain = self.steered(None)
        self.assertRaises(errors.NotEnforceable, plain.steer_irq, 120,
                          'ens2f0', {4})
        self.assertRaises(errors.NotEnforceable, plain.pin_io_threads,
                          UPLINKED, {4})

    def test_a_guest_without_a_process_is_not_pinned(self):
        self.assertRaises(errors.NotEnforceable, self.backend.pin_io_threads,
                          base.HOME_FROM_NOVA, {4})


class WiringTest(test_base.TestCase):
    """The options give the agent's backend the daemon and the record."""

    def agent(self, **options):
        tmp = self.useFixture(fixtures.TempDir()).path
        root = host_fixtures.two_sockets_nic_on_node1(
            os.path.join(tmp, 'root'))
        conf = self.useFixture(conf_fixture.ProjectConf()).conf
        # The agent hands its uplinks over at start: into the test's tree.
        conf.set_override('uplinks_file', os.path.join(tmp, 'uplinks.json'),
                          group='numa_policy')
        options.update(libvirt_uri='test://' + host_fixtures.write_host_xml(
            os.path.join(tmp, 'host.xml'), []), sysfs_root=root)
        for option, value in options.items():
            conf.set_override(option, value, group='numa_policy_agent')
        agent = cmd.build_agent(conf)
        self.addCleanup(agent.backend._connection.close)
        return agent

    def test_steering_on(self):
        agent = self.agent(io_path_steering=True, state_dir='/x/state')
        self.assertIn(backend.CAP_IRQ_STEERING,
                      agent.backend.capabilities())
        self.assertEqual('/x/state/irq-affinity.json',
                         agent.backend.guests.io_path.record.path)

    def test_steering_off_by_default(self):
        agent = self.agent()
        self.assertNotIn(backend.CAP_IRQ_STEERING,
                         agent.backend.capabilities())
        self.assertEqual('/var/lib/nova/numa-policy/irq-affinity.json',
                         agent.backend.guests.io_path.record.path)
