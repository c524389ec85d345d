"""The sandbox summary's per-server account of what the loops did."""

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality
from numa_policy_lab.sandbox import summary
from tests import base as test_base
from tests.unit.loops import snapshots as s


def _measured(acc=None, mode=None, hands_off=None, cpus=(0, 1),
              cpu_wait=None):
    inst = backend.InstanceState(
        uuid='vm', requested_policy='auto', vcpu_cpus=cpus,
        accesses_per_node=acc, cpu_wait=cpu_wait,
        access_signal=locality.SIGNAL_HINTING_FAULTS if acc else None,
        memory_mode=mode, hands_off_reason=hands_off)
    return summary.measurement(inst, s.topology())


class HeldBackTest(test_base.TestCase):

    def test_a_server_the_loops_acted_on_needs_no_excuse(self):
        self.assertIsNone(summary.held_back({'carrefour': 2},
                                            _measured({0: 10, 1: 900})))

    def test_each_reason_to_hold_back(self):
        cases = [
            (_measured(hands_off='no hw:numa_policy'), 'left alone'),
            (_measured(mode='interleave'), 'never samples'),
            (_measured(), 'nothing measured for it yet'),
            (_measured({0: 950, 1: 50}), 'already local: 95%'),
            (_measured({0: 300, 1: 700}),
             "30% of its sampled accesses local, and no loop's threshold"),
        ]
        for measured, expected in cases:
            self.assertIn(expected, summary.held_back({}, measured))

    def test_on_bandwidth_accesses_are_counted_not_sampled(self):
        inst = backend.InstanceState(
            uuid='vm', requested_policy='auto', vcpu_cpus=(0, 1),
            accesses_per_node={0: 300, 1: 700},
            access_signal=locality.SIGNAL_BANDWIDTH)
        measured = summary.measurement(inst, s.topology())
        self.assertIn("30% of its accesses local",
                      summary.held_back({}, measured))

    def test_the_measurement_names_the_signal_and_the_local_share(self):
        measured = _measured({0: 250, 1: 750}, cpus=(4, 5))
        self.assertEqual(locality.SIGNAL_HINTING_FAULTS, measured['signal'])
        self.assertEqual(0.75, measured['local_share'])
        self.assertIsNone(summary.measurement(None, s.topology()))

    def test_the_text_gives_it_per_server(self):
        record = summary.server_record(
            {'name': 'auto-1', 'uuid': 'vm', 'flavor': 'np.auto',
             'extra_specs': (), 'profile': 'master-slave',
             'status': 'ACTIVE', 'host': 'compute1', 'hosts': {}},
            None, [0.5, 0.5], {}, None, _measured({0: 950, 1: 50}))
        self.assertEqual('already local: 95% of its sampled accesses on '
                         "its vCPUs' nodes", record['held_back'])
        self.assertEqual('hinting-faults, 95% local; loops held back: '
                         + record['held_back'],
                         summary._measured_text(record))

    def test_the_text_says_how_long_its_vcpus_waited_when_measured(self):
        record = summary.server_record(
            {'name': 'auto-1', 'uuid': 'vm', 'flavor': 'np.auto',
             'extra_specs': (), 'profile': 'master-slave',
             'status': 'ACTIVE', 'host': 'compute1', 'hosts': {}},
            None, [0.5, 0.5], {'carrefour': 1}, None,
            _measured({0: 950, 1: 50}, cpu_wait=0.25))
        self.assertEqual(0.25, record['cpu_wait'])
        self.assertEqual('hinting-faults, 95% local, vCPUs waiting for a '
                         'CPU 25%; loops acted',
                         summary._measured_text(record))
