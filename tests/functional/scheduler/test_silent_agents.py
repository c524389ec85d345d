"""Agents silent cloud-wide: what a user and the operator are told.

With ``no_report_mode = strict`` (the default) a host without a fresh
report fails a flavor that asks what only a report answers. When that
leaves no host, the server's fault names the cause; with ``permissive``
the request is placed by nova's own judgement and the log says which
hosts were passed unheard. nova's own scheduler, fed through the
notifier, as in test_placement.
"""

import datetime

from tests.functional.scheduler import test_placement

SILENCE = 'No host has a NUMA report from its nova-numa-policy agent'
LONG_AGO = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(
    hours=1)


class _SilenceTestBase(test_placement._PluginsTestBase):

    def log(self):
        return self.stdlog.logger.output


class StrictSilenceTest(_SilenceTestBase):

    def test_no_report_anywhere_fails_policy_servers_naming_the_cause(self):
        # A plain flavor asks nothing of a report: placed, nothing said.
        self.assertIn(self.boot(), test_placement.HOSTS)
        self.assertNotIn('fresh NUMA report', self.log())
        fault = self.boot_fault({'hw:numa_policy': 'interleave'})
        self.assertIn('No valid host was found.', fault)
        self.assertIn(SILENCE, fault)
        self.assertIn('hw:numa_policy=interleave', fault)
        self.assertIn('no_report_mode = strict', fault)
        # The operator's line names every silent host and counts.
        self.assertIn('none of the 3 host(s) left has a fresh NUMA report',
                      self.log())
        self.assertIn('Check numa-policy-agent on: host1, host2, host3',
                      self.log())
        fault = self.boot_fault({'hw:numa_policy': 'home',
                                 'hw:numa_nic_locality': 'required'})
        self.assertIn('hw:numa_policy=home with '
                      'hw:numa_nic_locality=required', fault)
        counts = [int(line.split('refused, ')[1].split()[0])
                  for line in self.log().splitlines()
                  if 'such refusal(s) by this scheduler' in line]
        self.assertEqual(2, len(counts))
        self.assertEqual(counts[0] + 1, counts[1])

    def test_stale_reports_are_silence_a_fresh_one_takes_the_server(self):
        self.report(host1=dict(generated_at=LONG_AGO),
                    host3=dict(generated_at=LONG_AGO))
        self.assertIn(SILENCE, self.boot_fault({'hw:numa_policy': 'home'}))
        self.report(host2=dict())
        self.assertEqual('host2', self.boot({'hw:numa_policy': 'home'}))

    def test_hosts_refused_for_what_they_reported_keep_novas_message(self):
        # host3 is silent; host1 and host2 reported they cannot enforce
        # interleave: silence is not why no host is left.
        self.report(host1=dict(enforceable=('first-touch',)),
                    host2=dict(enforceable=('first-touch',)))
        fault = self.boot_fault({'hw:numa_policy': 'interleave'})
        self.assertIn('No valid host was found.', fault)
        self.assertNotIn(SILENCE, fault)


class CombinedStrictSilenceTest(_SilenceTestBase):
    """The same refusal through NumaFilter."""

    FILTERS = ['NumaFilter']
    WEIGHERS = 'placement_filters.combined_weighers'

    def test_no_report_anywhere_fails_the_server_naming_the_cause(self):
        fault = self.boot_fault({'hw:numa_policy': 'interleave'})
        self.assertIn(SILENCE, fault)
        self.assertIn('Check numa-policy-agent on: host1, host2, host3',
                      self.log())


class PermissiveSilenceTest(_SilenceTestBase):
    NO_REPORT_MODE = 'permissive'

    def test_unheard_hosts_take_the_server_and_the_log_names_them(self):
        self.report(host1=dict())
        self.assertIn(self.boot({'hw:numa_policy': 'interleave'}),
                      test_placement.HOSTS)
        self.assertIn('2 of 3 host(s) passed for hw:numa_policy=interleave '
                      'without a fresh NUMA report (no_report_mode '
                      'permissive)', self.log())
        self.assertIn('Silent: host2, host3', self.log())
