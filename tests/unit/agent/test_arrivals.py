"""A guest live-migrated here on its source's blind placement, as seen here."""

import json
import os

import fixtures

from nova_numa_policy.contracts import policy
from nova_numa_policy.loops import enforce
from nova_numa_policy.virt import metadata

from agent.backend import arrivals
from agent.backend import libvirt_backend
from agent.backend import settings
from agent.sensors import discovery
from agent.service import manager
from tests import fixtures as host_fixtures
from tests.unit.agent import base

ARRIVED = '66666666-6666-4666-8666-666666666666'
BOOTED = '77777777-7777-4777-8777-777777777777'


def home_record(chosen_by_source, mode):
    return metadata.render(metadata.PolicyRecord(
        policy.resolve({policy.POLICY_KEY: 'home'}), mode,
        frozenset({0}), frozenset(), chosen_by_source=chosen_by_source))


class ArrivalBackendTest(base.TestDriverHostTest):

    def setUp(self):
        super().setUp()
        self.state_dir = self.useFixture(fixtures.TempDir()).path
        self.backend = self.new_backend()

    def new_backend(self):
        return libvirt_backend.LibvirtBackend(
            self.connection,
            paths=settings.HostPaths(root=self.root,
                                     state_dir=self.state_dir),
            timing=settings.Timing(sleep=lambda seconds: None),
            share=settings.HostShare(
                uplinks=discovery.Uplinks({'physnet1': 'ens2f0'})))

    def domains(self):
        return [host_fixtures.domain_xml(
            1, ARRIVED, policy=home_record(True, 'restrictive'),
            numatune=('restrictive', '0')),
            host_fixtures.domain_xml(
            2, BOOTED, policy=home_record(False, 'strict'),
            numatune=('strict', '0'))]

    def blind(self, host_backend=None):
        snapshot = (host_backend or self.backend).observe()
        return {i.uuid: i.blind_arrival for i in snapshot.instances}

    def test_the_sources_mark_is_an_arrival_to_handle(self):
        self.assertEqual({ARRIVED: True, BOOTED: False}, self.blind())
        (inst,) = [i for i in self.backend.observe().instances
                   if i.uuid == ARRIVED]
        self.assertEqual('none', inst.nic_locality)

    def test_handled_it_is_not_an_arrival_any_more_even_after_a_restart(self):
        self.blind()
        self.backend.arrival_handled(ARRIVED)
        self.assertEqual({ARRIVED: False, BOOTED: False}, self.blind())
        self.assertEqual({ARRIVED: False, BOOTED: False},
                         self.blind(self.new_backend()))
        with open(os.path.join(self.state_dir, arrivals.RECORD_NAME)) as f:
            self.assertEqual([ARRIVED], list(json.load(f)['handled']))

    def test_the_same_definition_started_again_is_another_arrival(self):
        record = arrivals.ArrivalRecord(self.state_dir)
        record.keep(ARRIVED, 7, running={ARRIVED})
        self.assertTrue(record.handled(ARRIVED, 7))
        self.assertFalse(record.handled(ARRIVED, 8))

    def test_an_unreadable_record_is_empty(self):
        with open(os.path.join(self.state_dir, arrivals.RECORD_NAME),
                  'w') as f:
            f.write('{not json')
        self.assertEqual({ARRIVED: True, BOOTED: False}, self.blind())

    def periods_until_decided(self, agent):
        """The agent's periods until the arrival is decided; how many.

        Its own load is measured in the first; then, while the nodes'
        load keeps it where it is, it is judged again
        (enforce.SETTLE_PERIODS), and stays an arrival meanwhile.
        """
        for period in range(1, enforce.SETTLE_PERIODS + 2):
            agent.run_once()
            if ARRIVED in agent.runner.arrivals:
                return period
            self.assertTrue(self.blind()[ARRIVED])
        self.fail('never decided')

    def test_an_agent_keeps_it_handled_after_deciding(self):
        agent = manager.Agent(self.backend, host='cn1', period=5.0)
        self.periods_until_decided(agent)
        self.assertFalse(self.blind()[ARRIVED])

    def test_a_dry_run_keeps_nothing(self):
        agent = manager.Agent(self.backend, host='cn1', period=5.0,
                              dry_run=True)
        self.periods_until_decided(agent)
        self.assertTrue(self.blind()[ARRIVED])
        self.assertFalse(os.path.exists(
            os.path.join(self.state_dir, arrivals.RECORD_NAME)))
