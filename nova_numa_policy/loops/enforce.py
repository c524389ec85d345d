"""The guest's requested policy, enforced: the first strategy of a period.

What ``hw:numa_policy`` asks of a running guest
(:func:`nova_numa_policy.decisions.enforcement.enforce`) decided as a strategy,
so it goes through the runner like every loop: hands-off guests, the
do-no-harm guard, the period's budget, one dry run, one executor with
rollback. Unlike a loop's, its actions for one guest are one atomic plan
(``atomic_plans``): the runner admits all of them or none, as a guest
half bound to its home nodes is worse than one not bound yet.

A ``home`` guest that arrived by live migration on the node its source
chose blind to this host's load has its home decided again here, once
(:mod:`nova_numa_policy.decisions.arrival`), instead of being kept where
it arrived; the period after it is first seen, so that its own vCPUs'
load can be told from its node's.
"""

import dataclasses

from oslo_log import log as logging

from nova_numa_policy.decisions import arrival
from nova_numa_policy.decisions import enforcement
from nova_numa_policy.loops import base

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Config:
    # Whether the host can change a running guest's nodeset
    # (backend.CAP_LIVE_NODESET); the runner sets it from the backend.
    live_nodeset: bool = True
    # Whether the host moves pages (backend.CAP_PAGE_MIGRATION): an
    # arrival's re-homing then moves what the kernel left behind.
    page_migration: bool = False


class PolicyEnforcement(base.Strategy):
    name = 'policy'
    inputs = ('memory_mode', 'memory_nodes', 'vcpu_affinity',
              'emulator_affinity', 'requested_policy')
    atomic_plans = True
    Config = Config

    def initial_state(self, seed=0):
        # samples: {uuid: (taken_at, vcpu_time_ns)} of arrivals not yet
        # decided; arrivals: {uuid: Arrival} decided this period.
        return {'samples': {}, 'arrivals': {}}

    def decide(self, snapshot, state, config):
        actions = []
        samples = {}
        arrivals = {}
        for instance in snapshot.instances:
            if arrival.needs_rehoming(instance):
                sample = (snapshot.taken_at, instance.vcpu_time_ns)
                decided = arrival.rehome(
                    instance, snapshot.topology, snapshot.usage,
                    snapshot.instances,
                    arrival.vcpu_busy(state.get('samples', {}).get(
                        instance.uuid), sample),
                    config.live_nodeset, config.page_migration)
                if decided.decided:
                    arrivals[instance.uuid] = decided
                    actions.extend(decided.actions)
                    continue
                samples[instance.uuid] = sample
            plan = enforcement.enforce(instance, snapshot.topology,
                                       snapshot.usage, config.live_nodeset)
            if plan.blocked:
                LOG.debug('Instance %s: %s not enforced now: %s',
                          instance.uuid, instance.requested_policy,
                          plan.blocked)
            actions.extend(plan.actions)
        return actions, {'samples': samples, 'arrivals': arrivals}
