"""Two nova-scheduler processes, each with its own report cache.

A second nova-scheduler is started beside the first, both logging at
debug level (nova's "Starting to schedule for instances" line names the
servers each one scheduled). Each listens for the agents' reports in a
pool of its own, so each hears every report. One compute is kept busy
by spinners on every CPU of its lab host; the other runs as it is.
Policy servers are then booted one at a time, each deleted once ACTIVE,
until both schedulers have scheduled at least one: in strict mode a
scheduler that had not heard the agents would refuse, and one that
heard only some could choose the busy compute. Every server goes to the
quiet compute, whichever scheduler chose.
"""

import re

from tests.cloud.faults import base
from tests.cloud import resources
from tests.host import base as host_base

INTERLEAVE = {'hw:numa_policy': 'interleave'}
LOAD_FILTER = 'NumaNodeLoadFilter'
SCHEDULERS = ('nova-scheduler', 'nova-scheduler-2')
DEBUG = {'DEFAULT': {'debug': 'True'}}
LISTENING = 'Listening for NUMA host reports in pool'
# Boots until both schedulers have scheduled one: RabbitMQ hands the
# scheduler topic's calls to its consumers in turn.
MAX_BOOTS = 6
SCHEDULED = re.compile(r'Starting to schedule for instances: \[(.*?)\]')


class TwoSchedulersTest(base.FaultTestBase):

    def setUp(self):
        super().setUp()
        control = self.CLOUD.control
        first, second = SCHEDULERS
        # Cleanups run last first: the second stopped, then the first as
        # it was.
        self.addCleanup(control.restart_service, first)
        control.restart_service(first, DEBUG)
        self.addCleanup(control.stop_service, second)
        control.start_service(control.service_spec(first, DEBUG,
                                                   as_name=second))
        for name in SCHEDULERS:
            resources.wait_for(
                lambda name=name: control.service_log(name),
                lambda text: LISTENING in text,
                f'{name} listening for reports', base.BACK_TIMEOUT,
                interval=1)
        self.busy, self.quiet = sorted(self.CLOUD.computes)
        lab = self.CLOUD.computes[self.busy].lab
        host_base.keep_busy(
            lab, range(self.CLOUD.computes[self.busy].topology.cpus))
        self.addCleanup(lab.run, host_base.STOP_BUSY)

    def scheduled_by(self, server_id):
        """The schedulers whose log names ``server_id`` as scheduled."""
        return {name for name in SCHEDULERS
                if any(server_id in found for found in SCHEDULED.findall(
                    self.CLOUD.control.service_log(name)))}

    def boot_and_delete(self, number):
        """(host, schedulers) of a new policy server, deleted once ACTIVE."""
        server = self.nova.create_server(
            f'numa-faults-two-schedulers-{number}',
            self.flavor(INTERLEAVE)['id'], self.image['id'], 'none')
        try:
            placed = self.settled(server)
            self.CLOUD.assert_active(self, placed)
        finally:
            self.nova.delete_and_wait(server['id'], base.DELETE_TIMEOUT)
        return placed['OS-EXT-SRV-ATTR:host'], self.scheduled_by(
            server['id'])

    def test_both_hear_every_agent_and_choose_the_quiet_compute(self):
        resources.wait_for(
            lambda: self.explain(INTERLEAVE),
            lambda hosts: (
                not base.verdict(hosts[self.busy], LOAD_FILTER)['passed']
                and base.verdict(hosts[self.quiet], LOAD_FILTER)['passed']),
            f'{self.busy} refused for its load, {self.quiet} passed',
            base.BACK_TIMEOUT, interval=5)
        chosen, served = [], {name: 0 for name in SCHEDULERS}
        while len(chosen) < MAX_BOOTS and not all(served.values()):
            host, schedulers = self.boot_and_delete(len(chosen))
            self.assertEqual(1, len(schedulers), schedulers)
            chosen.append(host)
            served[schedulers.pop()] += 1
        self.note('servers scheduled by each scheduler', served)
        self.assertTrue(all(served.values()), served)
        self.assertEqual([self.quiet] * len(chosen), chosen)
