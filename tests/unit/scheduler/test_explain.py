"""Why-not: the explanation tells the same story as the plugins."""

import collections
import datetime

from nova_numa_policy.scheduling import explain
from nova_numa_policy.scheduling import scoring
from tests import base as test_base
from tests.unit.scheduler import reports

NOW = 1_800_000_000.0
SETTINGS = scoring.Settings(ttl=180, strict=True, threshold=0.8)
Flavor = collections.namedtuple('Flavor', 'extra_specs vcpus memory_mb')
IO_HEAVY = Flavor({'hw:numa_policy': 'interleave',
                   'hw:numa_nic_locality': 'required'}, 2, 2048)


def summary(host, nodes):
    when = datetime.datetime.fromtimestamp(NOW - 5, datetime.timezone.utc)
    return reports.make_summary(host=host, nodes=nodes, generated_at=when)


class ExplainTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.snapshot = {
            ('good', 'good'): summary('good', ((8, 0.1, 32768),) * 2),
            ('busy', 'busy'): summary('busy', ((8, 0.9, 32768),) * 2),
        }
        rows = explain.explain(IO_HEAVY, self.snapshot, SETTINGS, NOW,
                               hosts=[('silent', 'silent')])
        self.rows = {row.host: row for row in rows}

    def test_every_host_is_explained_including_those_without_report(self):
        self.assertEqual({'good', 'busy', 'silent'}, set(self.rows))
        self.assertIsNone(self.rows['silent'].report_age)
        self.assertEqual(5, self.rows['good'].report_age)

    def test_a_passing_host_has_no_failures_and_a_weight(self):
        row = self.rows['good']
        self.assertTrue(row.passed)
        self.assertEqual({}, row.failures())
        self.assertGreater(row.weights['NumaNicLocalityWeigher'],
                           self.rows['busy'].weights['NumaNicLocalityWeigher'])

    def test_a_failing_host_names_the_filter_node_and_numbers(self):
        failures = self.rows['busy'].failures()
        # Its NIC-local node holds the guest; that node is busy.
        self.assertEqual({'NumaNodeLoadFilter'}, set(failures))
        load = failures['NumaNodeLoadFilter']
        self.assertEqual(0, load.node)
        self.assertEqual(0.9, load.numbers['load'])
        self.assertEqual(0.8, load.numbers['threshold'])

    def test_with_every_host_busy_load_is_set_aside_on_every_host(self):
        snapshot = {key: value for key, value in self.snapshot.items()
                    if key != ('good', 'good')}
        snapshot[('busy2', 'busy2')] = summary('busy2',
                                               ((8, 0.95, 32768),) * 2)
        rows = explain.explain(IO_HEAVY, snapshot, SETTINGS, NOW)
        for row in rows:
            load = row.verdicts['NumaNodeLoadFilter']
            self.assertEqual((True, 'no-quiet-host'), (load.passed, load.why))
            self.assertTrue(row.passed)
        # The weights still rank the quieter host first.
        weights = {row.host: row.weights['NumaNodeLoadWeigher']
                   for row in rows}
        self.assertGreater(weights['busy'], weights['busy2'])

    def test_a_host_refused_for_another_reason_keeps_its_load_verdict(self):
        snapshot = {('busy', 'busy'): self.snapshot[('busy', 'busy')]}
        rows = explain.explain(IO_HEAVY, snapshot, SETTINGS, NOW,
                               hosts=[('silent', 'silent')])
        by_host = {row.host: row for row in rows}
        self.assertEqual('no-quiet-host', by_host['busy'].verdicts[
            'NumaNodeLoadFilter'].why)
        self.assertFalse(by_host['silent'].passed)

    def test_a_host_without_report_fails_only_what_needs_proof(self):
        self.assertEqual({'NumaPolicyFilter', 'NumaNicLocalityFilter'},
                         set(self.rows['silent'].failures()))

    def test_weighers_that_do_not_apply_say_so(self):
        rows = explain.explain(Flavor({}, 1, 512), self.snapshot, SETTINGS,
                               NOW)
        for row in rows:
            self.assertEqual({'NumaNicLocalityWeigher': None,
                              'NumaNodeLoadWeigher': None}, row.weights)
