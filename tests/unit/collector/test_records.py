import datetime

from oslo_serialization import jsonutils

from nova_numa_policy.collector import actions
from nova_numa_policy.collector import records
from nova_numa_policy.contracts import exception
from tests import base as test_base
from tests.unit.collector import fakes


class ParsePayloadTest(test_base.TestCase):

    def test_a_report_payload_is_read_whatever_its_event_type(self):
        for event_type in ('numa_policy.report', 'numa_policy.host_report'):
            kind, report = records.parse_payload(
                event_type, fakes.make_payload(seq=3), 1024 * 1024)
            self.assertEqual(records.KIND_REPORT, kind)
            self.assertEqual(3, report.seq)

    def test_a_report_sent_as_json_text_is_read(self):
        kind, report = records.parse_payload(
            'numa_policy.report', jsonutils.dumps(fakes.make_payload()),
            1024 * 1024)
        self.assertEqual('compute-1', report.host)

    def test_an_action_event_is_read_as_an_action(self):
        kind, action = records.parse_payload(
            actions.ACTION_EVENT_TYPE, fakes.make_action_payload(), 1024)
        self.assertEqual(records.KIND_ACTION, kind)
        self.assertEqual('move_pages', action['kind'])

    def test_an_oversized_report_is_malformed(self):
        exc = self.assertRaises(
            exception.MalformedReport, records.parse_payload,
            'numa_policy.report', fakes.make_payload(), 1024)
        self.assertIn('exceeds the limit of 1024', str(exc))

    def test_a_payload_of_garbage_is_malformed(self):
        for payload in ({'x': 1}, 'not json', 42, None):
            with self.subTest(repr(payload)):
                self.assertRaises(exception.MalformedReport,
                                  records.parse_payload, 'numa_policy.report',
                                  payload, 1024 * 1024)


class RowsTest(test_base.TestCase):

    def test_host_row_carries_nodes_nics_and_naive_utc_times(self):
        report = fakes.make_report(seq=5)
        received = fakes.at(6).astimezone(
            datetime.timezone(datetime.timedelta(hours=2)))
        row = records.host_row(report, received)
        self.assertEqual(fakes.at(5).replace(tzinfo=None),
                         row['generated_at'])
        self.assertEqual(fakes.at(6).replace(tzinfo=None), row['received_at'])
        self.assertEqual([0, 1], [n['id'] for n in row['numa_nodes']])
        self.assertEqual(0.5, row['numa_nodes'][1]['cpu_load'])
        self.assertEqual('eth0', row['nics'][0]['name'])
        self.assertEqual(1, row['instance_count'])

    def test_host_row_keeps_what_nova_gives_floating_guests(self):
        report = fakes.make_report(floating={0: ([0, 1, 2, 3], 0.5),
                                             1: ([], None)})
        row = records.host_row(report, fakes.at(6))
        self.assertEqual([([0, 1, 2, 3], 0.5), ([], None)],
                         [(n['floating_cpus'], n['floating_load'])
                          for n in row['numa_nodes']])

    def test_host_row_of_an_agent_that_does_not_say_keeps_none(self):
        # Readers take every CPU then (report.floating_capacity).
        row = records.host_row(fakes.make_report(), fakes.at(6))
        self.assertEqual([(None, None)] * 2,
                         [(n['floating_cpus'], n['floating_load'])
                          for n in row['numa_nodes']])

    def test_host_row_keeps_each_nodes_tier_and_the_hosts_demotion(self):
        report = fakes.make_report(tiers={0: 0, 1: 1}, demotion=True)
        row = records.host_row(report, fakes.at(6))
        self.assertEqual([0, 1], [n['memory_tier']
                                  for n in row['numa_nodes']])
        self.assertIs(True, row['memory_demotion'])
        row = records.host_row(fakes.make_report(demotion=False),
                               fakes.at(6))
        self.assertIs(False, row['memory_demotion'])

    def test_an_agent_that_does_not_say_its_tiers_keeps_none(self):
        # Before report 1.8, or a kernel without memory tiers.
        row = records.host_row(fakes.make_report(), fakes.at(6))
        self.assertEqual([None, None], [n['memory_tier']
                                        for n in row['numa_nodes']])
        self.assertIsNone(row['memory_demotion'])
        report = fakes.make_report(tiers={1: 1}, demotion=None)
        row = records.host_row(report, fakes.at(6))
        self.assertEqual([None, 1], [n['memory_tier']
                                     for n in row['numa_nodes']])
        self.assertIsNone(row['memory_demotion'])

    def test_host_row_keeps_each_nics_vectors_and_verdict(self):
        report = fakes.make_report()
        nic = report.nics[0]
        nic.irqs, nic.irq_cpus = [40, 41], [8, 9]
        nic.irq_steering = 'steered to node 1'
        (row,) = records.host_row(report, fakes.at(6))['nics']
        self.assertEqual(([40, 41], [8, 9], 'steered to node 1'),
                         (row['irqs'], row['irq_cpus'], row['irq_steering']))

    def test_a_nic_of_an_agent_that_does_not_say_has_no_vectors(self):
        # fakes' NIC sets none of the fields 1.1 added.
        (row,) = records.host_row(fakes.make_report(), fakes.at(6))['nics']
        self.assertEqual(([], [], None),
                         (row['irqs'], row['irq_cpus'], row['irq_steering']))

    def test_instance_rows_are_keyed_by_uuid(self):
        report = fakes.make_report(instances=[
            fakes.make_instance(fakes.UUID_A),
            fakes.make_instance(fakes.UUID_B, requested=None,
                                applied='none', memory={})])
        rows = records.instance_rows(report)
        self.assertEqual({fakes.UUID_A, fakes.UUID_B}, set(rows))
        self.assertIsNone(rows[fakes.UUID_B]['requested_policy'])
        self.assertEqual({'0': 512, '1': 512},
                         rows[fakes.UUID_A]['memory_mb_per_node'])

    def test_newer_means_later_time_then_higher_seq(self):
        row = records.host_row(fakes.make_report(seq=2), fakes.at(9))

        class Stored:
            generated_at = row['generated_at']
            seq = 2
            boot_id = None

        self.assertTrue(records.is_newer(row, None))
        self.assertFalse(records.is_newer(row, Stored))
        Stored.seq = 1
        self.assertTrue(records.is_newer(row, Stored))
        Stored.seq = 9
        Stored.generated_at = row['generated_at'] - datetime.timedelta(
            microseconds=1)
        self.assertTrue(records.is_newer(row, Stored))

    def test_within_one_agent_boot_the_sequence_decides(self):
        report = fakes.make_report(seq=3)
        report.boot_id = '5e1d0c6a-3b7f-4c29-8d4e-0a1b2c3d4e5f'
        row = records.host_row(report, fakes.at(9))

        class Stored:
            # Dated later (the clock went back since), earlier in the boot.
            generated_at = row['generated_at'] + datetime.timedelta(hours=1)
            seq = 2
            boot_id = report.boot_id

        self.assertTrue(records.is_newer(row, Stored))
        Stored.boot_id = 'another boot'
        self.assertFalse(records.is_newer(row, Stored))
