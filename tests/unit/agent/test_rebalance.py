"""The rebalancing loops inside the agent, and the policy it reports."""

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import errors
from nova_numa_policy.decisions import execution
from nova_numa_policy.decisions import reporting
from numa_policy_lab.sim import backend as sim_backend
from numa_policy_lab.sim import topology as sim_topology

from agent.service import manager
from agent.service import rebalance
from tests import base as test_base
from tests import topology_factory
from tests.unit.agent import base
from tests.unit.sim import fixtures as sim_fixtures

TOPOLOGY = topology_factory.host_topology(cpus=2, memory_mb=4096)
ALL = frozenset({0, 1})
# memory mode, nodes -> the placement they realize on TOPOLOGY.
FIRST_TOUCH = (None, ALL)
INTERLEAVED = (backend.MODE_INTERLEAVE, ALL)
HOME = (backend.MODE_STRICT, frozenset({1}))
CARREFOUR = ('carrefour',)
AUTO = ('auto',)
BOTH = ('carrefour', 'auto')
UUID = '4d0ec3c8-5d4c-4f0e-9b5e-1f0c2a7e8b01'


def _instance(requested, binding, hands_off=None):
    return backend.InstanceState(
        uuid='i', requested_policy=requested, hands_off_reason=hands_off,
        memory_mode=binding[0], memory_nodes=binding[1])


class AppliedPolicyTest(test_base.TestCase):

    # requested, binding, active loops, auto's choice, reported.
    CASES = [
        (None, FIRST_TOUCH, BOTH, None, 'none'),
        ('first-touch', FIRST_TOUCH, BOTH, None, 'first-touch'),
        ('interleave', INTERLEAVED, BOTH, None, 'interleave'),
        ('home', HOME, BOTH, None, 'home'),
        ('first-touch+carrefour', FIRST_TOUCH, CARREFOUR, None,
         'first-touch+carrefour'),
        ('interleave+carrefour', INTERLEAVED, CARREFOUR, None,
         'interleave+carrefour'),
        # The loop not running (not enabled, not started, dry run): the
        # placement alone is in force.
        ('first-touch+carrefour', FIRST_TOUCH, (), None, 'first-touch'),
        ('interleave+carrefour', INTERLEAVED, AUTO, None, 'interleave'),
        # Booted without the driver extension: first-touch, and Carrefour.
        ('interleave+carrefour', FIRST_TOUCH, CARREFOUR, None,
         'first-touch+carrefour'),
        # Carrefour on a home binding has no name: the binding is reported.
        ('first-touch+carrefour', HOME, CARREFOUR, None, 'home'),
        ('auto', FIRST_TOUCH, AUTO, 'interleave+carrefour',
         'interleave+carrefour'),
        ('auto', FIRST_TOUCH, AUTO, 'first-touch', 'first-touch'),
        ('auto', FIRST_TOUCH, AUTO, None, 'first-touch'),
        ('auto', FIRST_TOUCH, CARREFOUR, 'first-touch+carrefour',
         'first-touch'),
        ('unknown-value', FIRST_TOUCH, BOTH, None, 'first-touch'),
    ]

    def test_cases(self):
        for requested, binding, loops, choice, expected in self.CASES:
            got = reporting.applied_policy(_instance(requested, binding),
                                           TOPOLOGY, loops, choice)
            self.assertEqual(expected, got,
                             (requested, binding, loops, choice))

    def test_hands_off_is_none_whatever_runs(self):
        for requested in ('first-touch+carrefour', 'auto'):
            got = reporting.applied_policy(
                _instance(requested, FIRST_TOUCH, 'hw:numa_nodes set'),
                TOPOLOGY, BOTH, 'first-touch+carrefour')
            self.assertEqual('none', got)


def _remote_memory_host(requested='first-touch+carrefour', **kwargs):
    """A memory-bound guest whose vCPUs run on node 0, memory on node 1."""
    host = sim_topology.xeon2()
    vm = sim_fixtures.vm_at(host, 'private-stream', [0, 1, 2, 3] * 2, 1,
                            memory_mb=2048, uuid=UUID)
    vm.requested_policy = requested
    return sim_backend.SimulatedBackend(host, [vm], hostname='cn1', **kwargs)


def _agent(sim, agent_dry_run=False, **overrides):
    """An agent on ``sim``; ``overrides`` are [numa_policy_loops] options."""
    # The test guest is smaller than the memory-bound jobs the published
    # threshold was set for.
    overrides.setdefault('carrefour_min_accesses_per_us', 10.0)
    runner = rebalance.build_runner(sim, base.loops_group(**overrides), 5.0,
                                    dry_run=agent_dry_run)
    return manager.Agent(sim, host='cn1', period=5.0, runner=runner,
                         clock=lambda: sim.now)


def _node0_mb(sim):
    return sim.observe().instances[0].memory_mb_per_node.get(0, 0)


class AgentRebalanceTest(test_base.TestCase):

    def test_a_period_runs_carrefour_and_reports_it_in_force(self):
        sim = _remote_memory_host()
        agent = _agent(sim, enabled_loops=['carrefour'])
        self.assertEqual(0, _node0_mb(sim))
        agent.run_once()
        self.assertGreater(_node0_mb(sim), 0)
        self.assertTrue(agent.last_loop_actions)
        for loop, action in agent.last_loop_actions:
            self.assertEqual('carrefour', loop)
            self.assertEqual((1, 0), (action.source_node, action.target_node))
        (reported,) = agent.last_report.instances
        self.assertEqual('first-touch+carrefour', reported.applied_policy)
        # The report was built after the move: it shows memory on node 0.
        self.assertGreater(reported.memory_mb_per_node.get('0', 0), 0)

    def test_dry_run_moves_nothing_and_reports_the_placement(self):
        sim = _remote_memory_host()
        agent = _agent(sim, agent_dry_run=True,
                       enabled_loops=['carrefour'])
        agent.run_once()
        self.assertEqual(0, _node0_mb(sim))
        self.assertTrue(agent.last_loop_actions)  # decided and logged
        self.assertEqual('first-touch',
                         agent.last_report.instances[0].applied_policy)

    def test_loops_dry_run_option_is_honoured(self):
        sim = _remote_memory_host()
        agent = _agent(sim, enabled_loops=['carrefour'], dry_run=True)
        agent.run_once()
        self.assertEqual(0, _node0_mb(sim))
        self.assertEqual('first-touch',
                         agent.last_report.instances[0].applied_policy)

    def test_a_loop_the_backend_cannot_serve_is_not_started(self):
        sim = _remote_memory_host(signal=None)
        agent = _agent(sim, enabled_loops=['carrefour', 'brm'])
        self.assertEqual(('brm',), rebalance.active_loops(agent.runner))
        self.assertEqual(['carrefour'], agent.runner.skipped)
        agent.run_once()
        self.assertEqual(0, _node0_mb(sim))
        self.assertEqual('first-touch',
                         agent.last_report.instances[0].applied_policy)

    def test_no_loop_enabled_still_enforces_the_policy(self):
        sim = _remote_memory_host()
        runner = _agent(sim, enabled_loops=[]).runner
        self.assertEqual((), runner.loops)
        self.assertEqual(['policy'], [s.name for s in runner.strategies])

    def test_auto_reports_its_concrete_choice(self):
        sim = _remote_memory_host(requested='auto')
        agent = _agent(sim, enabled_loops=['auto'])
        agent.run_once()
        choice = agent.runner.auto_choices()[UUID]
        self.assertIn(choice, ('first-touch', 'first-touch+carrefour',
                               'interleave+carrefour'))
        self.assertEqual(choice,
                         agent.last_report.instances[0].applied_policy)


class _FailingMove(sim_backend.SimulatedBackend):
    """Fails the second page move of a plan, as a vanished range would."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.moves = []

    def move_pages(self, instance_uuid, source_node, target_node, pages):
        self.moves.append((source_node, target_node, pages))
        if len(self.moves) == 2:
            raise errors.NotEnforceable('move_pages: EFAULT')
        return super().move_pages(instance_uuid, source_node, target_node,
                                  pages)


class LoopRollbackTest(test_base.TestCase):

    def test_a_failed_step_moves_the_pages_back(self):
        host = sim_topology.xeon2()
        vm = sim_fixtures.vm_at(host, 'private-stream', [0, 1], 1,
                                memory_mb=1024, uuid='g')
        sim = _FailingMove(host, [vm])
        snapshot = sim.observe()
        (instance,) = snapshot.instances
        plan = [backend.MovePages('g', 'carrefour: test', source_node=1,
                                  target_node=0, pages=2560)] * 2
        outcome = execution.apply_plan(sim, instance, snapshot.topology, plan)
        self.assertIsNotNone(outcome.failed)
        self.assertEqual([(1, 0, 2560), (1, 0, 2560), (0, 1, 2560)],
                         sim.moves)
        self.assertEqual(0, _node0_mb(sim))
