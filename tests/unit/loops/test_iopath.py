import dataclasses

from nova_numa_policy.contracts import backend
from nova_numa_policy.loops import iopath
from tests import base as test_base
from tests.unit.loops import snapshots as s

NODE0 = frozenset(range(4))
NODE1 = frozenset(range(4, 8))
EVERYWHERE = frozenset(range(8))


def _guest(uuid='net', cpus=(0, 1), io_rate=900.0, nics=('eth0',), **kw):
    return dataclasses.replace(
        s.instance(uuid, cpus, {0: 512}, io_rate=io_rate),
        nics=frozenset(nics), **kw)


def _irq(number, affinity=EVERYWHERE, found=None, nic='eth0'):
    return backend.IrqState(irq=number, nic=nic, affinity=affinity,
                            found=found)


def _snapshot(instances, irqs=(), reserved=frozenset(), hands_off=None,
              nic_node=0):
    topo = dataclasses.replace(s.topology(nodes=2, cpus=4, nic_node=nic_node),
                               reserved_cpus=frozenset(reserved))
    return dataclasses.replace(s.snapshot(instances, topo), irqs=tuple(irqs),
                               irq_hands_off=hands_off)


def _config(**kw):
    return dataclasses.replace(iopath.Config(), **kw)


def _decide(snapshot, config=None):
    actions, _ = iopath.IoPath().decide(snapshot, {}, config or _config())
    return actions


def _steers(actions):
    return {a.irq: a.cpus for a in actions
            if isinstance(a, backend.SteerIrq)}


def _of(kind, actions):
    return [a for a in actions if isinstance(a, kind)]


class SteeringTest(test_base.TestCase):
    """Two nodes of four CPUs, eth0 on node 0."""

    def test_vectors_spread_one_cpu_each_over_the_nics_node(self):
        irqs = [_irq(n) for n in (42, 40, 41, 43, 44)]
        actions = _decide(_snapshot([_guest()], irqs))
        self.assertEqual({40: {0}, 41: {1}, 42: {2}, 43: {3}, 44: {0}},
                         _steers(actions))
        steer = _of(backend.SteerIrq, actions)[0]
        self.assertEqual(backend.nic_subject('eth0'), steer.instance_uuid)
        self.assertEqual(('eth0', EVERYWHERE), (steer.nic, steer.previous))
        self.assertIn('1 I/O-intensive guest(s) on node 0', steer.reason)
        self.assertIn('to CPU 0', steer.reason)

    def test_reserved_cpus_never_receive_a_vector(self):
        irqs = [_irq(n) for n in range(4)]
        actions = _decide(_snapshot([_guest()], irqs, reserved={0, 2}))
        self.assertEqual({0: {1}, 1: {3}, 2: {1}, 3: {3}}, _steers(actions))

    def test_a_vector_already_in_place_is_not_steered_again(self):
        irqs = [_irq(0, frozenset({0}), found=EVERYWHERE),
                _irq(1, frozenset({5}), found=EVERYWHERE)]
        self.assertEqual({1: {1}},
                         _steers(_decide(_snapshot([_guest()], irqs))))

    def test_a_vector_in_place_by_chance_is_claimed_once(self):
        # Where the host (irqbalance) happened to put it: the agent takes
        # it over too, or the balancer could move it away from the guest.
        irqs = [_irq(0, frozenset({0})), _irq(1, frozenset({1}),
                                              found=frozenset({6}))]
        (claim,) = _of(backend.SteerIrq,
                       _decide(_snapshot([_guest()], irqs)))
        self.assertEqual((0, frozenset({0}), frozenset({0})),
                         (claim.irq, claim.cpus, claim.previous))
        self.assertIn('kept on CPU 0', claim.reason)

    def test_a_node_wholly_reserved_gets_nothing_and_says_why(self):
        snap = _snapshot([_guest()], [_irq(0, found=EVERYWHERE,
                                           affinity=frozenset({4}))],
                         reserved=NODE0)
        self.assertEqual([], _of(backend.SteerIrq, _decide(snap)))
        self.assertIn('every CPU of node 0 is reserved',
                      iopath.verdicts(snap, _config())['eth0'])

    # (what the NIC's I/O-intensive guests are, why it is not homed)
    NOT_HOMED = [
        ('nobody', [], 'no I/O-intensive guest uses it'),
        ('a quiet guest', [_guest(io_rate=10)],
         'no I/O-intensive guest uses it'),
        ('a guest of another NIC', [_guest(nics=('eth1',))],
         'no I/O-intensive guest uses it'),
        ('a guest on the other node', [_guest(cpus=(4, 5))],
         'run on node 1'),
        ('a guest over both nodes', [_guest(cpus=(0, 4))], 'several nodes'),
        ('one guest home, one away',
         [_guest('a'), _guest('b', cpus=(5,))], 'several nodes'),
        ('hands-off guests only',
         [_guest(hands_off_reason='dedicated CPUs')], 'left to nova'),
    ]

    def test_a_nic_not_homed_gets_back_what_the_host_found(self):
        for name, guests, why in self.NOT_HOMED:
            irqs = [_irq(0, frozenset({1}), found=EVERYWHERE),
                    _irq(1, EVERYWHERE, found=EVERYWHERE),
                    _irq(2, frozenset({2}))]
            snap = _snapshot(guests, irqs)
            steers = _of(backend.SteerIrq, _decide(snap))
            # Vector 1 is already as found, and is given back all the
            # same (a balancer may take it again); 2 was never steered.
            self.assertEqual({0: EVERYWHERE, 1: EVERYWHERE}, _steers(steers),
                             name)
            self.assertEqual(frozenset({1}), steers[0].previous, name)
            self.assertIn(why, steers[0].reason, name)
            verdict = iopath.verdicts(snap, _config())['eth0']
            self.assertIn('restored 2 vector(s) as found', verdict, name)
            self.assertIn(why, verdict, name)

    def test_a_hands_off_guest_on_the_node_beside_a_managed_one_homes(self):
        guests = [_guest('a'), _guest('b', hands_off_reason='pinned')]
        self.assertEqual({0: {0}}, _steers(_decide(_snapshot(
            guests, [_irq(0)]))))

    def test_the_flavors_word_holds_whatever_the_rate(self):
        quiet_high = _guest(io_rate=0.0, io_intensity='high')
        busy_low = _guest(io_rate=1e6, io_intensity='low')
        self.assertEqual({0: {0}}, _steers(_decide(_snapshot(
            [quiet_high], [_irq(0)]))))
        self.assertEqual({}, _steers(_decide(_snapshot(
            [busy_low], [_irq(0)]))))

    def test_vnuiaos_threshold_is_the_one_threshold(self):
        snap = _snapshot([_guest(io_rate=300)], [_irq(0)])
        self.assertEqual({}, _steers(_decide(snap)))
        self.assertEqual({0: {0}}, _steers(_decide(
            snap, _config(io_threshold_rps=200))))

    def test_irqs_left_to_a_balancer_are_never_written_not_even_back(self):
        irqs = [_irq(0), _irq(1, frozenset({3}), found=EVERYWHERE)]
        for guests in ([_guest()], []):
            snap = _snapshot(guests, irqs, hands_off='irqbalance runs')
            self.assertEqual([], _of(backend.SteerIrq, _decide(snap)))
            self.assertEqual('left alone: irqbalance runs',
                             iopath.verdicts(snap, _config())['eth0'])

    def test_a_nic_of_unknown_node_is_left_alone(self):
        snap = _snapshot([_guest()], [_irq(0, found=frozenset({1}))])
        snap = dataclasses.replace(snap, topology=dataclasses.replace(
            snap.topology, nics=(backend.NicInfo('eth0', None),)))
        self.assertEqual([], _of(backend.SteerIrq, _decide(snap)))
        self.assertIn('node is unknown',
                      iopath.verdicts(snap, _config())['eth0'])

    def test_verdicts_name_every_nic(self):
        snap = _snapshot([_guest()], [_irq(0), _irq(1)])
        self.assertEqual(
            {'eth0': 'steered to node 0 (CPUs 0,1) for 1 I/O-intensive '
                     'guest(s) there'},
            iopath.verdicts(snap, _config()))
        self.assertEqual({'eth0': 'left alone: no interrupt vector seen'},
                         iopath.verdicts(_snapshot([_guest()]), _config()))


class ThreadsTest(test_base.TestCase):

    def test_emulator_goes_to_the_vcpus_node_minus_reserved(self):
        guest = _guest(cpus=(4, 5), emulator_affinity=EVERYWHERE)
        (pin,) = _of(backend.PinEmulator, _decide(_snapshot(
            [guest], reserved={7})))
        self.assertEqual(('net', frozenset({4, 5, 6})),
                         (pin.instance_uuid, pin.cpus))

    def test_only_the_cpus_nova_allows(self):
        guest = _guest(emulator_affinity=EVERYWHERE,
                       allowed_cpus=frozenset({0, 1, 5}))
        (pin,) = _of(backend.PinEmulator, _decide(_snapshot([guest])))
        self.assertEqual(frozenset({0, 1}), pin.cpus)

    def test_vhost_workers_follow_once_the_emulator_is_there(self):
        can = _config(io_thread_pinning=True)
        first = _guest(emulator_affinity=EVERYWHERE,
                       io_thread_cpus=EVERYWHERE)
        actions = _decide(_snapshot([first]), can)
        self.assertEqual(1, len(_of(backend.PinEmulator, actions)))
        self.assertEqual([], _of(backend.PinIoThreads, actions))
        then = dataclasses.replace(first, emulator_affinity=NODE0)
        (pin,) = _of(backend.PinIoThreads, _decide(_snapshot([then]), can))
        self.assertEqual(NODE0, pin.cpus)
        there = dataclasses.replace(then, io_thread_cpus=frozenset({2}))
        self.assertEqual([], _decide(_snapshot([there]), can))

    def test_no_vhost_pinning_where_the_backend_cannot(self):
        guest = _guest(emulator_affinity=NODE0, io_thread_cpus=EVERYWHERE)
        self.assertEqual([], _decide(_snapshot([guest])))
        caps = frozenset({backend.CAP_IO_THREAD_PINNING})
        config = iopath.IoPath.for_capabilities(iopath.Config(), caps)
        self.assertTrue(config.io_thread_pinning)
        self.assertEqual(1, len(_decide(_snapshot([guest]), config)))

    def test_no_vhost_worker_nothing_to_pin(self):
        guest = _guest(emulator_affinity=NODE0)
        self.assertEqual([], _decide(_snapshot([guest]),
                                     _config(io_thread_pinning=True)))

    # (guest, why its threads are not the loop's to place)
    LEFT_ALONE = [
        ('hands off', _guest(hands_off_reason='nova pins it',
                             emulator_affinity=EVERYWHERE,
                             io_thread_cpus=EVERYWHERE)),
        ('not I/O-intensive', _guest(io_rate=1.0,
                                     emulator_affinity=EVERYWHERE)),
        ('vCPUs over two nodes', _guest(cpus=(0, 4),
                                        emulator_affinity=EVERYWHERE)),
        ('its policy places it', dataclasses.replace(
            _guest(emulator_affinity=EVERYWHERE), requested_policy='home')),
    ]

    def test_guests_whose_threads_are_not_the_loops(self):
        for name, guest in self.LEFT_ALONE:
            actions = _decide(_snapshot([guest]),
                              _config(io_thread_pinning=True))
            self.assertEqual(
                [], _of(backend.PinEmulator, actions)
                + _of(backend.PinIoThreads, actions), name)

    def test_thread_pinning_can_be_turned_off(self):
        guest = _guest(emulator_affinity=EVERYWHERE)
        self.assertEqual([], _decide(_snapshot([guest]),
                                     _config(pin_threads=False)))
