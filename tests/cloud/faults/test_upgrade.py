"""A rolling upgrade's middle: one agent a report version behind.

One compute's agent is started again pinned to the previous report
version (``[numa_policy_reports] report_version = 1.6``, as an operator
pins agents that are upgraded before the schedulers and the collector
that read them: doc/source/upgrade.rst), beside the other compute's
current agent. What it sends lacks what 1.7 added, the interrupts of
each NIC, so our API shows its NIC without them. The scheduler and the
collector, current, read it all the same: its host passes our filters,
a policy server asked onto it (through the filters) boots there, and
the pinned agent applies the policy, as the kernel shows.
"""

import time

from tests.cloud.faults import base
from tests.cloud import resources

HOME = {'hw:numa_policy': 'home'}
PREVIOUS_VERSION = '1.6'
PINNED = {'numa_policy_reports': {'report_version': PREVIOUS_VERSION}}
OUR_FILTERS = ('NumaPolicyFilter', 'NumaNicLocalityFilter',
               'NumaNodeLoadFilter')


class PreviousReportVersionTest(base.FaultTestBase):

    def nic_irqs(self, host):
        """Each NIC's interrupts, by name, as our API last heard them."""
        return {nic['name']: nic['irqs']
                for nic in self.api(f'/v1/hosts/{host}')['host']['nics']}

    def wait_nic_irqs(self, host, present, what):
        began = time.monotonic()
        resources.wait_for(
            lambda: self.nic_irqs(host),
            lambda nics: nics and all(bool(irqs) is present
                                      for irqs in nics.values()),
            what, base.BACK_TIMEOUT, interval=2)
        return time.monotonic() - began

    def restart_agent(self, host, extra_config=None):
        self.CLOUD.stop_agent(host, 'TERM')
        self.CLOUD.start_agent(host, extra_config)

    def test_a_previous_agent_is_heeded_and_applies_a_policy(self):
        pinned, current = sorted(self.CLOUD.computes)
        # Current agents report their NICs' interrupts (1.7): the mark
        # whose absence shows the pinned agent's reports are read.
        self.assertTrue(all(self.nic_irqs(pinned).values()),
                        self.nic_irqs(pinned))
        self.addCleanup(self._current_again, pinned)

        began = time.monotonic()
        self.restart_agent(pinned, PINNED)
        self.wait_nic_irqs(pinned, False,
                           f'{pinned} heard at {PREVIOUS_VERSION}')
        self.note('seconds from the pinned agent restarted to its '
                  'report read', round(time.monotonic() - began))
        self.assertIn(f'reports at version {PREVIOUS_VERSION}',
                      self.CLOUD.agent_log(self.CLOUD.computes[pinned]))
        self.assertTrue(self.report_fresh(pinned))
        self.assertTrue(all(self.nic_irqs(current).values()),
                        'the current agent beside it reports as before')

        hosts = self.explain(HOME)
        for host in (pinned, current):
            verdicts = {f['name']: f for f in hosts[host]['filters']
                        if f['name'] in OUR_FILTERS}
            self.assertEqual(set(OUR_FILTERS), set(verdicts))
            for verdict in verdicts.values():
                self.assertTrue(verdict['passed'], (host, verdict))

        server = self.boot('numa-faults-pinned', HOME, host=pinned)
        self.assertEqual(pinned, server['OS-EXT-SRV-ATTR:host'])
        applied = self.applied(server['id'])
        self.assertEqual(('home', pinned),
                         (applied['applied_policy'], applied['host']))
        state = self.guest_state(server)
        self.assertEqual(1, len(state['ram_nodes']), state)

    def _current_again(self, host):
        """Cleanup: the agent at its own version, heard, for later tests."""
        self.restart_agent(host)
        self.wait_nic_irqs(host, True, f'{host} heard at its own version')
