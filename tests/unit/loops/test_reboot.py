"""A rebooted guest is a new placement: no loop acts on what it was."""

from nova_numa_policy.contracts import backend
from nova_numa_policy.loops import auto
from nova_numa_policy.loops import base
from nova_numa_policy.loops import brm
from nova_numa_policy.loops import vnuioa
from tests import base as test_base
from tests.unit.loops import snapshots as s

BEFORE_S = 100  # vCPU time of each guest in the first period
REBOOTED_S = 5  # lower: the guest was rebooted in between
RUNNING_S = 105  # higher: the same guest, still running


class RestartsTest(test_base.TestCase):

    CASES = [
        ('vCPU time went backwards: rebooted', {'g': 10}, 5, {'g'}),
        ('vCPU time grew: still running', {'g': 10}, 15, set()),
        ('vCPU time unchanged: still running', {'g': 10}, 10, set()),
        ('first time seen: nothing to compare with', {}, 5, set()),
    ]

    def test_restarts(self):
        for name, seen, now_s, expected in self.CASES:
            snap = s.snapshot([s.instance('g', cputime_s=now_s)])
            rebooted, new = base.restarts(
                snap, {u: int(t * 1e9) for u, t in seen.items()})
            self.assertEqual(expected, rebooted, name)
            self.assertEqual({'g': int(now_s * 1e9)}, new, name)


def _after(strategy, before, now, state, config):
    """``strategy``'s period on ``now``, run as the runner does.

    What it remembers of guests rebooted since ``before`` is forgotten
    first.
    """
    _, seen = base.restarts(before, {})
    rebooted, _ = base.restarts(now, seen)
    return strategy.decide(now, strategy.forget(state, rebooted), config)


def _pinned_nodes(actions, cpus_per_node=4):
    return {min(a.cpus) // cpus_per_node for a in actions
            if isinstance(a, backend.PinVcpu)}


class ForgetsRebootedGuestTest(test_base.TestCase):
    """What each loop remembers of a guest is dropped when it reboots.

    Each case runs one period on the guest as it was, then one on the
    guest as it is now; with the vCPU time lower (rebooted) the loop must
    act on the new placement, with it higher (the same guest moved by
    someone else) its memory still holds, which shows the case can fail.
    """

    def _vnuioa(self, later_s):
        # Pinned near its memory on node 1; after the reboot the host put
        # it and its memory on node 0. Its old pin count would pull it
        # back to node 1 for two more periods.
        strategy = vnuioa.Vnuioa()
        config = vnuioa.Config()
        first = s.snapshot([s.instance('db', (5,), {1: 1024}, io_rate=100,
                                       cputime_s=BEFORE_S)])
        _, state = strategy.decide(first, {}, config)
        now = s.snapshot([s.instance('db', (1,), {0: 1024}, io_rate=100,
                                     cputime_s=later_s)])
        actions, _ = _after(strategy, first, now, state, config)
        return _pinned_nodes(actions)

    def _brm(self, later_s):
        # Periods the vCPU has been watched on the placement it runs on.
        strategy = brm.Brm()
        before, now = (s.snapshot([s.instance(
            'vm', (0, 4), {0: 1024}, penalty=(0.5, 0.5),
            cputime_s=cputime_s)]) for cputime_s in (BEFORE_S, later_s))
        _, state = strategy.decide(before, strategy.initial_state(1),
                                   brm.Config())
        _, state = _after(strategy, before, now, state, brm.Config())
        return state['vcpus'][('vm', 0)].seen

    def _auto(self, later_s):
        # Interleaved over four nodes before (its accesses, all to one
        # node, put it in the top class); the reboot put all its memory
        # back on one node: interleaving must start again.
        strategy = auto.Auto()
        state = strategy.initial_state()
        config = auto.Config()
        topo = s.topology(nodes=4)
        hot = {0: 10 ** 9}
        spread = s.snapshot([s.instance(
            'vm', (0, 4, 8, 12), {n: 256 for n in range(4)}, acc=hot,
            cputime_s=BEFORE_S)], topo)
        _, state = strategy.decide(spread, state, config)
        self.assertIn('vm', state['interleaved'])
        piled = s.snapshot([s.instance(
            'vm', (0, 4, 8, 12), {0: 1024}, acc=hot, cputime_s=later_s)],
            topo)
        actions, _ = _after(strategy, spread, piled, state, config)
        # Carrefour acts on it either way; only interleaving says so.
        return any('interleaving memory' in a.reason for a in actions)

    CASES = [
        ('vnuioa: a rebooted guest is pinned where it landed, next to '
         'its memory', '_vnuioa', REBOOTED_S, {0}),
        ('vnuioa: a running guest keeps its pin count', '_vnuioa',
         RUNNING_S, {1}),
        ('brm: a rebooted vCPU is watched afresh', '_brm', REBOOTED_S, 1),
        ('brm: a running vCPU keeps its history', '_brm', RUNNING_S, 2),
        ('auto: a rebooted guest is interleaved again', '_auto',
         REBOOTED_S, True),
        ('auto: a running guest is interleaved once', '_auto', RUNNING_S,
         False),
    ]

    def test_forgets_rebooted_guest(self):
        for name, run, later_s, expected in self.CASES:
            self.assertEqual(expected, getattr(self, run)(later_s), name)
