"""One agent period on the test driver, step by step and whole."""

import os
import subprocess
import sys
import threading
from unittest import mock

import fixtures
import libvirt

from nova_numa_policy.collector import actions as collector_actions
from nova_numa_policy.contracts import errors
from nova_numa_policy.contracts import exception
from nova_numa_policy.objects import signing
from nova_numa_policy.objects import wire as report_wire

from agent.service import cmd
from agent.service import manager
from agent.service import notifier
from tests import base as test_base
from tests import fixtures as host_fixtures
from tests.unit.agent import base


class RecordingNotifier:
    """Stands in for the broker: the real one is in tests/functional."""

    def __init__(self, fail=0):
        self.fail = fail
        self.sent = []

    def info(self, ctxt, event_type, payload):
        if self.fail:
            self.fail -= 1
            raise ConnectionError('broker unreachable')
        self.sent.append((event_type, payload))

    def of(self, event_type):
        return [payload for event, payload in self.sent
                if event == event_type]


DATA = 'nova_numa_policy_object.data'
VERSION = 'nova_numa_policy_object.version'


def _tiers(report):
    return ([node.memory_tier for node in report.numa_nodes],
            report.memory_demotion)


class AgentPeriodTest(base.TestDriverHostTest):

    def agent(self, dry_run=False, sender=None, clock=None, max_actions=64):
        return manager.Agent(self.backend, host='cn1', period=5.0,
                             sender=sender, dry_run=dry_run,
                             max_actions=max_actions,
                             **({'clock': clock} if clock else {}))

    def test_a_period_applies_home_and_reports_it(self):
        agent = self.agent()
        self.assertFalse(agent.run_once())
        instances = {i.uuid: i for i in agent.last_report.instances}
        home = instances[base.HOME_FROM_NOVA]
        self.assertEqual(('home', 'home'),
                         (home.requested_policy, home.applied_policy))
        self.assertEqual(
            ('interleave', 'interleave'),
            (instances[base.INTERLEAVED].requested_policy,
             instances[base.INTERLEAVED].applied_policy))
        self.assertEqual('none', instances[base.NOVA_TOPOLOGY].applied_policy)
        # Node 0 has the most free memory in the fixture tree.
        self.assertEqual('0', self.numa_parameters(base.HOME_FROM_NOVA)[
            'numa_nodeset'])
        self.assertEqual([frozenset({0, 1, 2, 3})] * 2,
                         self.vcpu_affinity(base.HOME_FROM_NOVA))
        report_wire.check_report(agent.last_report)

    def test_reports_carry_the_boot_and_how_each_plan_ended(self):
        agent = self.agent()
        agent.run_once()
        report = agent.last_report
        self.assertEqual(agent.boot_id, report.boot_id)
        self.assertNotEqual(agent.boot_id, self.agent().boot_id)
        endings = {i.uuid: i.enforcement for i in report.instances}
        self.assertEqual('applied', endings[base.HOME_FROM_NOVA])
        self.assertIsNone(endings[base.NO_POLICY])

    def test_with_a_secret_every_report_sent_is_signed(self):
        broker = RecordingNotifier()
        sender = notifier.ReportSender(broker)
        agent = manager.Agent(self.backend, host='cn1', period=5.0,
                              sender=sender, secret='s3cret')
        agent.run_once()
        sender.send_pending()
        (payload,) = broker.of(notifier.EVENT_TYPE)
        signing.verify(payload, ('s3cret',))
        self.assertRaises(exception.BadSignature, signing.verify, payload,
                          ('other',))
        self.assertEqual(agent.seq, report_wire.read_payload(
            payload, 1 << 20, ('s3cret',)).seq)

    def test_reports_say_the_kernels_memory_tiers_as_they_change(self):
        agent = self.agent(dry_run=True)
        agent.run_once()
        # The fixture's kernel has no tiers: nothing said.
        self.assertEqual(([None, None], None), _tiers(agent.last_report))
        # Node 1 brought online as a lower tier, demotion off, then on:
        # each read at the next period.
        host_fixtures.write_memory_tiers(self.root, {4: '0', 22: '1'},
                                         'false')
        agent.run_once()
        self.assertEqual(([0, 1], False), _tiers(agent.last_report))
        host_fixtures.write_memory_tiers(self.root, {4: '0', 22: '1'},
                                         'true')
        agent.run_once()
        self.assertEqual(([0, 1], True), _tiers(agent.last_report))
        report_wire.check_report(agent.last_report)

    def test_pinned_to_1_7_the_agent_sends_no_tiers(self):
        host_fixtures.write_memory_tiers(self.root, {4: '0', 22: '1'},
                                         'true')
        broker = RecordingNotifier()
        sender = notifier.ReportSender(broker)
        agent = manager.Agent(self.backend, host='cn1', period=5.0,
                              sender=sender, dry_run=True,
                              report_version='1.7')
        agent.run_once()
        sender.send_pending()
        (payload,) = broker.of(notifier.EVENT_TYPE)
        self.assertEqual('1.7', payload[VERSION])
        self.assertNotIn('memory_demotion', payload[DATA])
        self.assertEqual([False, False], [
            'memory_tier' in node[DATA]
            for node in payload[DATA]['numa_nodes']])
        self.assertEqual(([None, None], None),
                         _tiers(report_wire.load_report(payload)))
        # The agent's own report still says them.
        self.assertEqual(([0, 1], True), _tiers(agent.last_report))

    def test_a_second_period_changes_nothing(self):
        agent = self.agent()
        agent.run_once()
        snapshot = agent.observe()
        self.assertEqual([], agent.runner.admitted(snapshot))

    def test_dry_run_decides_but_changes_nothing(self):
        agent = self.agent(dry_run=True)
        agent.run_once()
        home = [i for i in agent.last_report.instances
                if i.uuid == base.HOME_FROM_NOVA][0]
        self.assertEqual('first-touch', home.applied_policy)
        self.assertEqual('', self.numa_parameters(base.HOME_FROM_NOVA)[
            'numa_nodeset'])

    def test_the_budget_defers_work_to_the_next_period(self):
        agent = self.agent(max_actions=2)
        self.assertTrue(agent.run_once())
        self.assertEqual(1, agent.runner.plans_deferred)
        self.assertEqual('', self.numa_parameters(base.HOME_FROM_NOVA)[
            'numa_nodeset'])

    def test_reports_survive_a_broker_outage(self):
        broker = RecordingNotifier(fail=2)
        sender = notifier.ReportSender(broker)
        now = [0.0]
        agent = self.agent(sender=sender, clock=lambda: now[0])
        agent.run_once()
        self.assertFalse(sender.send_pending())  # broker down
        now[0] += 5.0
        agent.run_once()                          # enforcement goes on
        self.assertFalse(sender.send_pending())
        self.assertTrue(sender.send_pending())    # broker back
        # Only the newest report is sent after the outage.
        (payload,) = broker.of(notifier.EVENT_TYPE)
        self.assertEqual(2, report_wire.load_report(payload).seq)

    def test_a_lost_connection_does_not_end_the_loop(self):
        agent = self.agent()
        self.connection.get().close()

        def refuse(uri):
            raise libvirt.libvirtError('libvirtd is down')

        self.connection._opener = refuse
        self.assertIsNone(agent.daemon_loop(once=True))

    def test_unchanged_reports_wait_for_the_period(self):
        broker = RecordingNotifier()
        sender = notifier.ReportSender(broker)
        agent = self.agent(sender=sender, clock=lambda: 0.0)
        agent.run_once()
        sender.send_pending()
        agent.run_once()
        sender.send_pending()
        self.assertEqual(1, len(broker.of(notifier.EVENT_TYPE)))
        self.dom(base.HOME_FROM_NOVA).destroy()  # a significant change
        agent.run_once()
        sender.send_pending()
        self.assertEqual(2, len(broker.of(notifier.EVENT_TYPE)))

    def test_each_action_carried_out_is_told_before_the_report(self):
        broker = RecordingNotifier()
        sender = notifier.ReportSender(broker)
        agent = self.agent(sender=sender)
        agent.run_once()
        self.assertTrue(sender.send_pending())
        events = [event for event, _ in broker.sent]
        self.assertEqual(notifier.EVENT_TYPE, events[-1])
        told = [collector_actions.load_action(p)
                for p in broker.of(notifier.ACTION_EVENT_TYPE)]
        # home for the guest nova defined without a placement: its
        # memory bound to node 0 and its vCPUs and emulator pinned there.
        self.assertEqual(
            ['set_nodeset', 'pin_vcpu', 'pin_vcpu', 'pin_emulator'],
            [a['kind'] for a in told])
        self.assertEqual({base.HOME_FROM_NOVA},
                         {a['instance_uuid'] for a in told})
        self.assertEqual({'applied'}, {a['outcome'] for a in told})
        self.assertEqual(list(range(1, len(told) + 1)),
                         [a['seq'] for a in told])
        self.assertEqual({'nodes': [0]}, told[0]['details'])
        self.assertTrue(told[0]['reason'].startswith('policy: home'),
                        told[0])
        self.assertEqual(len(told), sender.actions_sent)

    def test_a_dry_run_tells_what_it_would_do(self):
        broker = RecordingNotifier()
        sender = notifier.ReportSender(broker)
        agent = self.agent(sender=sender, dry_run=True)
        agent.run_once()
        sender.send_pending()
        told = broker.of(notifier.ACTION_EVENT_TYPE)
        self.assertTrue(told)
        self.assertEqual({'dry_run'}, {a['outcome'] for a in told})

    def test_actions_wait_for_the_broker_in_order(self):
        broker = RecordingNotifier(fail=1)
        sender = notifier.ReportSender(broker)
        agent = self.agent(sender=sender)
        agent.run_once()
        self.assertFalse(sender.send_pending())  # broker down
        self.assertTrue(sender.send_pending())
        told = broker.of(notifier.ACTION_EVENT_TYPE)
        self.assertEqual(list(range(1, agent.actions_told + 1)),
                         [a['seq'] for a in told])

    def test_actions_beyond_the_bound_drop_the_oldest(self):
        self.useFixture(fixtures.MockPatchObject(
            notifier, 'MAX_WAITING_ACTIONS', 2))
        broker = RecordingNotifier()
        sender = notifier.ReportSender(broker)
        for seq in (1, 2, 3):
            sender.submit_action({'seq': seq})
        sender.send_pending()
        self.assertEqual([{'seq': 2}, {'seq': 3}],
                         broker.of(notifier.ACTION_EVENT_TYPE))
        self.assertEqual(1, sender.actions_dropped)

    def test_stop_ends_the_loop_promptly(self):
        agent = self.agent()
        agent.period = 3600
        agent.stop()
        agent.daemon_loop()  # returns at once instead of waiting an hour


class ConsoleScriptTest(test_base.TestCase):

    def once_dry_run(self, config):
        """numa-policy-agent --once --dry-run with ``config``, as a child."""
        conf = self.useFixture(fixtures.TempDir()).join('a.conf')
        with open(conf, 'w') as f:
            f.write(config)
        return subprocess.run(
            [sys.executable, '-m', 'agent.service.cmd', '--once', '--dry-run',
             '--config-file', conf],
            capture_output=True, text=True, timeout=60,
            cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                os.path.dirname(os.path.abspath(__file__))))))

    def test_once_dry_run_prints_a_valid_report(self):
        result = self.once_dry_run('[numa_policy_agent]\nlibvirt_uri = '
                                   'test:///default\nhost = cn-test\n')
        self.assertEqual(0, result.returncode, result.stderr)
        report = report_wire.report_from_json(result.stdout, 1024 * 1024)
        self.assertEqual('cn-test', report.host)
        self.assertEqual([0, 1], report.node_ids())
        self.assertEqual(['6695eb01-f6a4-8304-79aa-97f2502e193f'],
                         [i.uuid for i in report.instances])

    def test_no_libvirt_is_one_line_saying_what_is_missing(self):
        result = self.once_dry_run(
            '[numa_policy_agent]\nlibvirt_uri = '
            'qemu+unix:///system?socket=/nonexistent/libvirt-sock\n')
        self.assertEqual(1, result.returncode)
        self.assertEqual('', result.stdout)
        self.assertNotIn('Traceback', result.stderr)
        errors = [line for line in result.stderr.splitlines()
                  if ' ERROR ' in line or line.startswith('libvirt:')]
        self.assertEqual(1, len(errors), result.stderr)
        self.assertIn('No libvirt at qemu+unix:///system?socket=/nonexistent'
                      '/libvirt-sock: Failed to connect socket', errors[0])
        self.assertIn('Start libvirtd', errors[0])


class WaitForLibvirtTest(test_base.TestCase):
    """The service waits for libvirtd; a one-shot run gives up at once."""

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger())
        self.attempts = 0
        self.conf = mock.Mock()
        self.conf.numa_policy_agent.libvirt_uri = 'qemu:///system'

    def build(self, conf, sender=None):
        self.attempts += 1
        if self.attempts < 3:
            raise errors.ConnectionLost('lost', reason='no socket',
                                        retry_in=0.0)
        return 'agent'

    def test_the_service_retries_until_libvirt_answers(self):
        stopped = mock.Mock(is_set=mock.Mock(return_value=False))
        with mock.patch.object(cmd, 'build_agent', self.build):
            agent = cmd.build_when_connected(self.conf, None, False, stopped)
        self.assertEqual(('agent', 3), (agent, self.attempts))
        self.assertEqual(2, self.log.output.count(
            'No libvirt at qemu:///system: no socket.'))
        self.assertEqual(2, stopped.wait.call_count)

    def test_a_one_shot_run_gives_up_after_one_attempt(self):
        with mock.patch.object(cmd, 'build_agent', self.build):
            agent = cmd.build_when_connected(self.conf, None, True,
                                             threading.Event())
        self.assertEqual((None, 1), (agent, self.attempts))

    def test_a_stop_ends_the_wait(self):
        stopped = threading.Event()
        stopped.set()
        with mock.patch.object(cmd, 'build_agent', self.build):
            self.assertIsNone(cmd.build_when_connected(
                self.conf, None, False, stopped))
        self.assertEqual(0, self.attempts)
