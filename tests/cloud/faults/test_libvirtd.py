"""libvirtd restarted on a compute while its agent carries out a plan.

A ``home`` server's threads are moved off its home node, as an
operator's ``virsh vcpupin`` would; the agent's next period puts them
back in one plan of a step per thread. libvirtd is frozen the moment
the agent's log says the first step is done, and restarted as an
operator restarts it (``midplan.py``, inside the lab host). The plan
must end applied whole or with every change it made rolled back, as the
kernel shows the guest's threads at its end; the agent then enforces
the policy again, each action reaches the collector once, nova-compute
is back on libvirt and a new policy server boots on that host.
"""

import json
import time

from testtools import content

from tests.cloud import cloud as cloud_mod
from tests.cloud.faults import base
from tests.cloud.faults import midplan
from tests.cloud import resources
from tests.cloud import test_servers
from tests.labhost import kernel

HOME = {'hw:numa_policy': 'home'}
# Tries at freezing libvirtd between the plan's first and last step. The
# reader runs before the agent's next step (midplan.py), so one has been
# enough in every run; a try whose reader found the whole plan already
# logged still restarts libvirtd, and is not counted as mid-plan.
ATTEMPTS = 3
WATCH_TIMEOUT = 180


def threads_cpus(raw):
    """{(tid, name): the CPUs it may run on} of a kernel view's texts."""
    return {(t.tid, t.name): t.cpus_allowed
            for t in kernel.guest_view(raw).threads}


def common(before, after):
    """Both views' CPUs of the threads alive in both.

    QEMU's worker threads come and go with its I/O; the vCPU threads,
    the main thread and the I/O threads stay.
    """
    kept = before.keys() & after.keys()
    return ({k: before[k] for k in kept}, {k: after[k] for k in kept})


class LibvirtdRestartedTest(base.FaultTestBase):

    def test_libvirtd_restarted_mid_plan_leaves_it_whole_or_undone(self):
        server = self.boot('numa-faults-libvirtd', HOME)
        host = server['OS-EXT-SRV-ATTR:host']
        uuid = server['id']
        self.applied(uuid)
        compute = self.CLOUD.computes[host]
        domain = compute.lab.call('tests.cloud.inlab:domain',
                                  server['OS-EXT-SRV-ATTR:instance_name'])
        tune = test_servers.domain_tune(domain['xml'])
        (home,) = tune.nodes
        home_cpus = frozenset(tune.cpus)
        away = frozenset(compute.topology.node_cpus(
            min(n for n in range(compute.topology.nodes) if n != home)))
        seen = {a['id'] for a in self.actions(uuid)}

        for attempt in range(1, ATTEMPTS + 1):
            plan = self.restart_mid_plan(compute, server, domain, away)
            self.addDetail(f'plan-{attempt}', content.text_content(
                json.dumps({k: v for k, v in plan.items()
                            if k not in ('view', 'before', 'cpusets')},
                           indent=1)))
            self.assertTrue(plan['libvirtd_back'], 'libvirtd not restarted')
            # Two would both act on the guest (a scenario before this one
            # that started an agent twice, say).
            self.assertEqual(1, plan['agents'], 'agents on the host')
            if plan['struck_after'] is not None:
                break
            self.assertEqual('applied', plan['ending'], plan['lines'])
        else:
            self.fail(f'the plan ended before libvirtd was frozen in '
                      f'{ATTEMPTS} tries')
        plan_ended = time.monotonic()
        self.note('attempts to freeze libvirtd mid-plan', attempt)
        self.note(f'steps logged of {plan["steps"]} when libvirtd froze',
                  plan['struck_after'])
        self.note('the plan ended', plan['ending'])
        self.note('seconds from its first step logged to its end logged',
                  round(midplan.logged_seconds(plan['lines']), 1))

        # As the plan ended, as the kernel shows: every thread where the
        # plan put them, or every thread where it found them (read from
        # the kernel before it began); never some of each.
        self.addDetail('cpusets-at-the-end', content.text_content(
            json.dumps(plan['cpusets'], indent=1, sort_keys=True)))
        self.assertIn(plan['ending'], ('applied', 'rolled back'),
                      plan['lines'])
        ended = threads_cpus(plan['view'])
        self.addDetail('threads-at-the-end', content.text_content(
            repr(ended)))
        if plan['ending'] == 'applied':
            self.assertEqual({home_cpus}, set(ended.values()),
                             'applied, yet not every thread at home')
        else:
            before, after = common(threads_cpus(plan['before']), ended)
            self.assertGreater(len(after), test_servers.VCPUS, after)
            self.assertEqual(before, after,
                             'rolled back, yet not as before the plan')

        # The policy holds again, as the kernel shows.
        state = resources.wait_for(
            lambda: self.guest_state(server),
            lambda s: s['vcpu_cpus'] == [sorted(home_cpus)]
            * test_servers.VCPUS and s['ram_nodes'] == [home],
            'the guest home again', base.BACK_TIMEOUT, interval=3)
        self.addDetail('guest-after', content.text_content(repr(state)))
        self.note("seconds from the plan's end to the policy held again",
                  round(time.monotonic() - plan_ended))
        self.assert_told_once(uuid, seen, plan)

        # nova-compute back on libvirtd; the host takes policy servers.
        self.wait_compute_up(host)
        began = time.monotonic()
        self.boot('numa-faults-after-libvirtd', HOME, host=host)
        self.note('seconds from nova-compute enabled to a policy server '
                  'ACTIVE on that host', round(time.monotonic() - began))

    def restart_mid_plan(self, compute, server, domain, away):
        return compute.lab.call(
            'tests.cloud.faults.midplan:restart_libvirtd_mid_plan',
            server['OS-EXT-SRV-ATTR:instance_name'], server['id'],
            sorted(away), cloud_mod.AGENT_LOG, cloud_mod.AGENT_BINARY,
            domain['pid'],
            ram_bytes=test_servers.MEMORY_MB * 1024 * 1024,
            watch_timeout=WATCH_TIMEOUT, timeout=WATCH_TIMEOUT + 120)

    def assert_told_once(self, uuid, seen, plan):
        """The collector holds each new action once, and its outcome.

        Applied whole: one applied action a step. Rolled back: the step
        that failed, then the plan applied again in a later period.
        """
        steps = plan['steps']
        rolled_back = plan['ending'] == 'rolled back'

        def new():
            return [a for a in self.actions(uuid) if a['id'] not in seen]

        def count(listed, outcome):
            return sum(a['outcome'] == outcome for a in listed)

        told = resources.wait_for(
            new, lambda listed: count(listed, 'applied') == steps
            and bool(count(listed, 'failed')) == rolled_back,
            f'the collector told {steps} applied, failed {rolled_back}',
            base.BACK_TIMEOUT, interval=3)
        self.note('failed steps told', count(told, 'failed'))
        self.addDetail('actions-told', content.text_content(
            json.dumps(told, indent=1, sort_keys=True)))
        keys = [(a['host'], a['seq']) for a in told]
        self.assertEqual(len(keys), len(set(keys)), 'an action told twice')
