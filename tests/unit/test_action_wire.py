"""The action notification an agent builds, read back by the collector."""

import datetime

from nova_numa_policy.collector import actions as collector_actions
from nova_numa_policy.contracts import backend
from nova_numa_policy.objects import action as action_wire
from tests import base as test_base

UUID = 'a6f1c1de-7d1e-4a53-9d36-5b0f5b1c0001'
AT = datetime.datetime(2026, 11, 27, 12, 0, tzinfo=datetime.timezone.utc)


class NotificationTest(test_base.TestCase):

    def read_back(self, action, outcome=action_wire.APPLIED, error=None):
        return collector_actions.load_action(action_wire.notification(
            'cn1', 7, AT, action, outcome, error))

    def test_a_guest_action_reads_back_whole(self):
        told = self.read_back(backend.PinVcpu(
            UUID, 'home: keep vCPUs on nodes [1]', vcpu=1,
            cpus=frozenset({3, 2})))
        self.assertEqual(
            ('cn1', 7, AT, UUID, 'pin_vcpu', 'applied',
             'home: keep vCPUs on nodes [1]', {'vcpu': 1, 'cpus': [2, 3]}),
            (told['host'], told['seq'], told['generated_at'],
             told['instance_uuid'], told['kind'], told['outcome'],
             told['reason'], told['details']))

    def test_every_action_kind_is_a_known_kind(self):
        actions = (backend.PinVcpu(UUID, 'r'), backend.PinEmulator(UUID, 'r'),
                   backend.SetNodeset(UUID, 'r'),
                   backend.MovePages(UUID, 'r'),
                   backend.PinIoThreads(UUID, 'r'),
                   backend.SteerIrq(backend.nic_subject('eth0'), 'r',
                                    irq=40, nic='eth0'))
        self.assertEqual(list(collector_actions.KNOWN_KINDS),
                         [action_wire.kind_of(a) for a in actions])

    def test_a_nics_action_names_no_instance(self):
        told = self.read_back(backend.SteerIrq(
            backend.nic_subject('eth0'), 'iopath: to node 1', irq=40,
            nic='eth0', cpus=frozenset({2}), previous=frozenset({0})))
        self.assertIsNone(told['instance_uuid'])
        self.assertEqual({'irq': 40, 'nic': 'eth0', 'cpus': [2],
                          'previous': [0]}, told['details'])

    def test_a_failed_action_says_why_after_its_reason(self):
        told = self.read_back(
            backend.SetNodeset(UUID, 'home: bind memory to nodes [1]',
                               nodes=frozenset({1})),
            action_wire.FAILED, 'EPERM')
        self.assertEqual(('failed', 'home: bind memory to nodes [1] '
                                    '(failed: EPERM)'),
                         (told['outcome'], told['reason']))

    def test_a_long_reason_is_cut_to_the_bound(self):
        told = self.read_back(backend.PinEmulator(UUID, 'x' * 5000))
        self.assertEqual(action_wire.MAX_REASON_LENGTH, len(told['reason']))
