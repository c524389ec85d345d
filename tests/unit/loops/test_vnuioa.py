import testtools

from nova_numa_policy import backend
from nova_numa_policy.loops import vnuioa
from tests.unit.loops import snapshots as s


def _decide(instances, nodes=2, config=None):
    topo = s.topology(nodes=nodes, cpus=5)
    actions, _ = vnuioa.Vnuioa().decide(s.snapshot(instances, topo), {},
                                        config or vnuioa.Config())
    return actions


def _pins(actions):
    return {a.instance_uuid: min(a.cpus) // 5 for a in actions
            if isinstance(a, backend.PinVcpu)}


class VnuioaTest(testtools.TestCase):

    def test_io_intensive_goes_near_the_nic(self):
        actions = _decide([s.instance('net', (5,), {1: 1024}, io_rate=600)])
        self.assertEqual({'net': 0}, _pins(actions))

    def test_below_500_req_s_follows_its_memory(self):
        actions = _decide([s.instance('db', (0,), {1: 1024}, io_rate=499)])
        self.assertEqual({'db': 1}, _pins(actions))

    def test_80_percent_load_sends_the_next_guest_further(self):
        # Five CPUs per node: four vCPUs is 80 %, a fifth would be 100 %.
        guests = [s.instance(f'net{k}', (5 + k,), {1: 64},
                             io_rate=1000 - k) for k in range(5)]
        pins = _pins(_decide(guests))
        self.assertEqual(4, list(pins.values()).count(0))
        self.assertEqual(1, list(pins.values()).count(1))

    def test_memory_moves_only_beyond_twice_the_local_accesses(self):
        for remote, local, moves in ((300, 100, True), (200, 100, False)):
            inst = s.instance('net', (0,), {0: 512, 1: 512},
                              acc={0: local, 1: remote}, io_rate=900,
                              affinity=(frozenset(range(5)),))
            actions = _decide([inst])
            moved = [a for a in actions if isinstance(a, backend.MovePages)]
            self.assertEqual(moves, bool(moved), (remote, local))
            self.assertEqual({}, _pins(actions))

    def test_hands_off_guests_are_left_alone(self):
        actions = _decide([s.instance('net', (5,), {1: 1024}, io_rate=900,
                                      hands_off='dedicated CPUs')])
        self.assertEqual([], actions)
