"""A rolling upgrade's middle: one agent a report version behind.

One compute's agent is started again pinned to the previous report
version (``[numa_policy_reports] report_version = 1.6``, as an operator
pins agents that are upgraded before the schedulers and the collector
that read them: doc/source/upgrade.rst), beside the other compute's
current agent; its start line says the version it sends. The scheduler
and the collector, current, read its reports: its host is heeded and
passes our filters, a policy server asked onto it (through the filters)
boots there, and the pinned agent applies the policy, as the kernel
shows.
"""

import time

from tests.cloud.faults import base

HOME = {'hw:numa_policy': 'home'}
PREVIOUS_VERSION = '1.6'
PINNED = {'numa_policy_reports': {'report_version': PREVIOUS_VERSION}}
OUR_FILTERS = ('NumaPolicyFilter', 'NumaNicLocalityFilter',
               'NumaNodeLoadFilter')


class PreviousReportVersionTest(base.FaultTestBase):

    def restart_agent(self, host, extra_config=None):
        self.CLOUD.stop_agent(host, 'TERM')
        self.CLOUD.start_agent(host, extra_config)

    def test_a_previous_agent_is_heeded_and_applies_a_policy(self):
        pinned, current = sorted(self.CLOUD.computes)
        self.addCleanup(self._current_again, pinned)

        began = time.monotonic()
        self.restart_agent(pinned, PINNED)
        seconds = self.wait_report_since(
            pinned, began, f'a report of {pinned} at {PREVIOUS_VERSION}')
        self.note('seconds from the pinned agent restarted to its '
                  'report read', round(seconds))
        # What it sends: the start line of the agent now running.
        self.assertIn(f'reports at version {PREVIOUS_VERSION}',
                      self.CLOUD.agent_log(self.CLOUD.computes[pinned]))
        self.assertTrue(self.report_fresh(pinned))
        self.assertTrue(self.report_fresh(current))

        hosts = self.explain(HOME)
        for host in (pinned, current):
            for name in OUR_FILTERS:
                found = base.verdict(hosts[host], name)
                self.assertTrue(found['passed'], (host, found))

        server = self.boot('numa-faults-pinned', HOME, host=pinned)
        self.assertEqual(pinned, server['OS-EXT-SRV-ATTR:host'])
        applied = self.applied(server['id'])
        self.assertEqual(('home', pinned),
                         (applied['applied_policy'], applied['host']))
        state = self.guest_state(server)
        self.assertEqual(1, len(state['ram_nodes']), state)

    def _current_again(self, host):
        """Cleanup: the agent at its own version, heard, for later tests."""
        began = time.monotonic()
        self.restart_agent(host)
        self.wait_report_since(host, began,
                               f'{host} heard at its own version')
