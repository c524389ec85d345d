"""Agents killed: one while its guests run, then every one of them.

One agent killed (SIGKILL) and started again: its guests are left as
they were while it is down, the scheduler stops heeding its host once
the last report is older than the TTL and says so, and the agent comes
back from its state without acting again on what it already did.

Every agent down: with ``no_report_mode = strict`` (the default) a
policy server fails with a fault naming the cause; with ``permissive``
nova places it and the driver's boot-time placement holds on the
kernel; the host's agent takes it over when it reports again.
"""

import re
import time

from testtools import content

from tests.cloud.faults import base

HOME = {'hw:numa_policy': 'home'}
INTERLEAVE = {'hw:numa_policy': 'interleave'}
POLICY_FILTER = 'NumaPolicyFilter'
# Periods the agent is given after its return to act again, if it would.
QUIET_PERIODS = 4


class AgentKilledTest(base.FaultTestBase):

    def test_a_killed_agent_leaves_its_guests_and_resumes_from_its_state(
            self):
        server = self.boot('numa-faults-home', HOME)
        host = server['OS-EXT-SRV-ATTR:host']
        uuid = server['id']
        self.applied(uuid)
        before = self.guest_state(server)
        acted = self.actions(uuid)
        self.addDetail('actions-before', content.text_content(
            repr(acted)))
        self.addCleanup(self.agent_back, host)

        self.CLOUD.stop_agent(host, 'KILL')
        stale_after = self.wait_freshness(host, False, base.STALE_TIMEOUT)
        self.note('seconds from SIGKILL to the host not heeded',
                  round(stale_after))
        # The scheduler's rule, as our API applies it: a host without a
        # fresh report fails a policy flavor in strict mode, and says so.
        verdict = base.verdict(self.explain(HOME)[host], POLICY_FILTER)
        self.assertEqual((False, 'no fresh report; strict mode'),
                         (verdict['passed'], verdict['reason']))
        self.assertEqual(before, self.guest_state(server),
                         'the guest changed while its agent was down')

        began = time.monotonic()
        self.CLOUD.start_agent(host)
        self.wait_freshness(host, True, base.BACK_TIMEOUT)
        self.note('seconds from the agent started to the host heeded',
                  round(time.monotonic() - began))
        self.assertTrue(base.verdict(self.explain(HOME)[host],
                                     POLICY_FILTER)['passed'])
        time.sleep(QUIET_PERIODS * base.AGENT_PERIOD)
        self.assertEqual(before, self.guest_state(server),
                         'the agent moved the guest after its return')
        self.assertEqual(acted, self.actions(uuid),
                         'the agent acted again after its return')


class EveryAgentDownTest(base.FaultTestBase):
    """Every agent killed; the scheduler strict, then permissive."""

    def setUp(self):
        super().setUp()
        self.hosts = sorted(self.CLOUD.computes)
        self.addCleanup(self._all_back)
        for host in self.hosts:
            self.CLOUD.stop_agent(host, 'KILL')
        for host in self.hosts:
            self.wait_freshness(host, False, base.STALE_TIMEOUT)

    def _all_back(self):
        self.CLOUD.control.restart_service('nova-scheduler')
        # One agent a host: the test started the permissive server's
        # own again already (two would both act on every guest).
        for host in self.hosts:
            self.agent_back(host)

    def scheduler_log(self):
        with open(self.CLOUD.control.layout.log('nova-scheduler'),
                  errors='replace') as f:
            return f.read()

    def test_strict_refuses_saying_why_permissive_places_and_hands_over(
            self):
        # Strict, the default: a fault the user reads, a line for the
        # operator naming the silent hosts.
        refused = self.settled(self.create('numa-faults-strict', INTERLEAVE))
        self.assertEqual('ERROR', refused['status'])
        fault = refused['fault']['message']
        self.assertIn('No host has a NUMA report from its nova-numa-policy '
                      'agent', fault)
        self.assertIn('hw:numa_policy=interleave', fault)
        self.assertRegex(
            self.scheduler_log(),
            r'none of the 2 host\(s\) left has a fresh NUMA report.*'
            r'Check numa-policy-agent on: ' + re.escape(', '.join(
                self.hosts)))

        # Permissive: nova places it, the driver's placement holds.
        self.CLOUD.control.restart_service('nova-scheduler', {
            'numa_policy_scheduler': {'no_report_mode': 'permissive'}})
        placed = self.boot('numa-faults-permissive', INTERLEAVE)
        host = placed['OS-EXT-SRV-ATTR:host']
        self.assertIn('without a fresh NUMA report (no_report_mode '
                      'permissive)', self.scheduler_log())
        unheard = self.guest_state(placed)
        self.assertIn("mode='interleave'", unheard['tune'])
        # A tiny guest's few pages, spread: on two nodes or more.
        self.assertGreaterEqual(len(unheard['ram_nodes']), 2, unheard)

        # The host's agent takes it over when it reports again.
        began = time.monotonic()
        self.CLOUD.start_agent(host)
        self.applied(placed['id'])
        self.note('seconds from the agent started to the unheard '
                  "server's policy confirmed",
                  round(time.monotonic() - began))
