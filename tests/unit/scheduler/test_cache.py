"""The report cache: what it keeps, what it drops, and that it never raises."""

import datetime
import logging

import fixtures

from nova_numa_policy.objects import signing
from nova_numa_policy.scheduling import scoring
from placement_filters import assessors
from placement_filters import cache as cache_mod
from tests import base as test_base
from tests.unit.scheduler import reports

NOW = 1_800_000_000.0
DATA = 'nova_numa_policy_object.data'


def at(seconds_ago):
    return datetime.datetime.fromtimestamp(NOW - seconds_ago,
                                           datetime.timezone.utc)


class ReportCacheTest(test_base.TestCase):

    def make_cache(self, **kwargs):
        values = dict(max_hosts=100, max_report_bytes=64 * 1024, io_rate=500,
                      ttl=180, clock=lambda: NOW)
        values.update(kwargs)
        return cache_mod.ReportCache(**values)

    def test_a_report_is_kept_under_its_compute_node(self):
        cache = self.make_cache()
        self.assertTrue(cache.ingest(reports.make_payload(
            host='c1', nodename='c1.example.org', generated_at=at(5))))
        summary = cache.get(('c1', 'c1.example.org'))
        self.assertEqual(2, len(summary.nodes))
        self.assertEqual(1, cache.accepted)

    def test_a_stored_report_is_assessed_for_the_shapes_in_use(self):
        self.useFixture(fixtures.MockPatchObject(assessors, '_recent', {}))
        self.useFixture(fixtures.MockPatchObject(assessors, '_last_used',
                                                 None))
        settings = scoring.Settings(ttl=180, strict=True, threshold=0.8,
                                    weigh_plain_flavors=True)
        assessor = assessors.assessor_for(scoring.make_request(
            {'hw:numa_nic_locality': 'required'}, vcpus=2, memory_mb=2048),
            settings)
        cache = self.make_cache()
        cache.ingest(reports.make_payload(generated_at=at(5)))
        summary = cache.get(('compute1', 'compute1'))
        self.assertEqual({assessor: assessor.compute(summary)},
                         summary.memo)

    def test_a_newer_report_replaces_an_older_one(self):
        cache = self.make_cache()
        cache.ingest(reports.make_payload(generated_at=at(60), seq=1))
        cache.ingest(reports.make_payload(generated_at=at(5), seq=2))
        self.assertEqual(2, cache.get(('compute1', 'compute1')).seq)

    def test_a_spoofed_report_from_the_future_hides_nothing(self):
        # Dated within the report lifetime but beyond the allowed skew:
        # once, it served false capacity and hid 35 genuine reports.
        cache = self.make_cache(max_skew=60)
        self.assertFalse(cache.ingest(reports.make_payload(
            generated_at=at(-120), seq=99, nodes=((64, 0.0, 10 ** 6),) * 2)))
        self.assertEqual(1, cache.dropped[cache_mod.DROP_FUTURE])
        for seq in range(1, 36):
            self.assertTrue(cache.ingest(reports.make_payload(
                generated_at=at(60 - seq), seq=seq)))
        self.assertEqual(35, cache.get(('compute1', 'compute1')).seq)

    def test_one_agent_boot_is_ordered_by_its_sequence(self):
        boot = '5e1d0c6a-3b7f-4c29-8d4e-0a1b2c3d4e5f'
        cache = self.make_cache()
        cache.ingest(reports.make_payload(generated_at=at(5), seq=1,
                                          boot_id=boot))
        # The agent's clock stepped back; its sequence did not.
        self.assertTrue(cache.ingest(reports.make_payload(
            generated_at=at(50), seq=2, boot_id=boot)))
        self.assertEqual(2, cache.get(('compute1', 'compute1')).seq)

    def test_with_secrets_only_signed_reports_are_kept(self):
        cache = self.make_cache(secrets=('k',))
        payload = reports.make_payload(generated_at=at(5))
        self.assertFalse(cache.ingest(payload))
        self.assertFalse(cache.ingest(signing.sign(payload, 'guess')))
        self.assertTrue(cache.ingest(signing.sign(payload, 'k')))
        self.assertEqual({cache_mod.DROP_UNSIGNED: 1,
                          cache_mod.DROP_BAD_SIGNATURE: 1},
                         dict(cache.dropped))

    def test_a_late_older_report_is_counted_and_ignored(self):
        cache = self.make_cache()
        cache.ingest(reports.make_payload(generated_at=at(5), seq=2))
        self.assertFalse(cache.ingest(
            reports.make_payload(generated_at=at(60), seq=1)))
        self.assertEqual(2, cache.get(('compute1', 'compute1')).seq)
        self.assertEqual(1, cache.dropped[cache_mod.DROP_OUTDATED])

    def test_malformed_payloads_are_counted_never_raised(self):
        cache = self.make_cache()
        bad_major = reports.make_payload()
        bad_major['nova_numa_policy_object.version'] = '2.0'
        for payload in (None, 'text', {}, {'a': 1}, bad_major):
            self.assertFalse(cache.ingest(payload))
        self.assertEqual(5, cache.dropped[cache_mod.DROP_MALFORMED])
        self.assertEqual(0, len(cache))

    def test_a_node_s_floating_cpus_out_of_bounds_are_counted(self):
        # Each would give the scheduler capacity the node does not have.
        cache = self.make_cache()
        spoiled = [
            # A CPU of node 1 said to float on node 0.
            {'floating_cpus': [0, 9]},
            {'floating_cpus': [0, 0, 1]},
            {'floating_load': 1.5},
            {'floating_load': None},
            {'floating_cpus': [], 'floating_load': 0.0},
        ]
        for change in spoiled:
            payload = reports.make_payload(
                generated_at=at(5), nodes=((8, 0.1, 32768, 4, 0.2),) * 2)
            payload[DATA]['numa_nodes'][0][DATA].update(change)
            self.assertFalse(cache.ingest(payload), change)
        self.assertEqual(len(spoiled), cache.dropped[cache_mod.DROP_MALFORMED])
        self.assertEqual(0, len(cache))
        self.assertTrue(cache.ingest(reports.make_payload(
            generated_at=at(5), nodes=((8, 0.1, 32768, 4, 0.2),) * 2)))

    def test_an_oversized_report_is_dropped_before_it_is_read(self):
        cache = self.make_cache(max_report_bytes=1024)
        self.assertFalse(cache.ingest(reports.make_payload()))
        self.assertEqual(1, cache.dropped[cache_mod.DROP_OVERSIZED])

    def test_a_report_from_the_future_is_dropped(self):
        cache = self.make_cache()
        self.assertFalse(cache.ingest(reports.make_payload(
            generated_at=at(-3600))))
        self.assertEqual(1, cache.dropped[cache_mod.DROP_FUTURE])

    def test_memory_is_bounded_by_evicting_the_oldest_received(self):
        cache = self.make_cache(max_hosts=3)
        for i in range(5):
            cache.ingest(reports.make_payload(host=f'c{i}',
                                              generated_at=at(5)))
        self.assertEqual(3, len(cache))
        self.assertIsNone(cache.get(('c0', 'c0')))
        self.assertIsNotNone(cache.get(('c4', 'c4')))

    def test_drop_warnings_are_rate_limited(self):
        clock = [NOW]
        cache = self.make_cache(clock=lambda: clock[0])
        logged = self.useFixture(fixtures.FakeLogger(
            name='placement_filters.cache', level=logging.WARNING))
        for _ in range(10):
            cache.ingest({})
        self.assertEqual(1, logged.output.count('Dropped a NUMA host report'))
        clock[0] += cache_mod.DROP_LOG_INTERVAL
        cache.ingest({})
        self.assertEqual(2, logged.output.count('Dropped a NUMA host report'))
        self.assertEqual(11, cache.dropped[cache_mod.DROP_MALFORMED])
