"""The guest's requested policy, enforced: the first strategy of a period.

What ``hw:numa_policy`` asks of a running guest
(:func:`nova_numa_policy.decisions.enforcement.enforce`) decided as a strategy,
so it goes through the runner like every loop: hands-off guests, the
do-no-harm guard, the period's budget, one dry run, one executor with
rollback. Unlike a loop's, its actions for one guest are one atomic plan
(``atomic_plans``): the runner admits all of them or none, as a guest
half bound to its home nodes is worse than one not bound yet.

A ``top`` guest (``hw:numa_memory_tiers``) has its memory kept off the
host's lower memory tiers each period
(:func:`nova_numa_policy.decisions.toptier.enforce_top_tier`): its
nodeset loses a lower-tier node, and what the kernel demoted moves back.

A ``home`` guest that arrived by live migration on the node its source
chose blind to this host's load has its home decided again here, once
(:mod:`nova_numa_policy.decisions.arrival`), instead of being kept where
it arrived; the period after it is first seen, so that its own vCPUs'
load can be told from its node's. While the nodes' load alone keeps it
where it arrived, it is judged again for :data:`SETTLE_PERIODS`.
"""

import dataclasses

from oslo_log import log as logging

from nova_numa_policy.decisions import arrival
from nova_numa_policy.decisions import enforcement
from nova_numa_policy.loops import base

LOG = logging.getLogger(__name__)

# Periods an arrival is judged again while the nodes' load keeps it where
# it arrived. The migration's own work on the destination (the incoming
# QEMU, nova's steps after the move, the port's binding) loads the
# host's other nodes in the periods just after it; one reading then
# would keep the guest on a busy node for good. It moves in the first of
# them where a move is clearly better, and stays for good after them.
SETTLE_PERIODS = 6


@dataclasses.dataclass(frozen=True)
class Config:
    # Whether the host can change a running guest's nodeset
    # (backend.CAP_LIVE_NODESET); the runner sets it from the backend.
    live_nodeset: bool = True
    # Whether the host moves pages (backend.CAP_PAGE_MIGRATION): an
    # arrival's re-homing then moves what the kernel left behind, and a
    # ``top`` guest's memory found on a lower tier moves back.
    page_migration: bool = False


class PolicyEnforcement(base.Strategy):
    name = 'policy'
    inputs = ('memory_mode', 'memory_nodes', 'vcpu_affinity',
              'emulator_affinity', 'requested_policy', 'requested_tiers',
              'memory_mb_per_node')
    atomic_plans = True
    Config = Config

    def initial_state(self, seed=0):
        # samples: {uuid: (taken_at, vcpu_time_ns)} of arrivals not yet
        # decided; judged: {uuid: periods} an arrival stayed by load;
        # arrivals: {uuid: Arrival} decided this period.
        return {'samples': {}, 'judged': {}, 'arrivals': {}}

    def decide(self, snapshot, state, config):
        actions = []
        samples = {}
        judged = {}
        arrivals = {}
        for instance in snapshot.instances:
            if arrival.needs_rehoming(instance):
                uuid = instance.uuid
                sample = (snapshot.taken_at, instance.vcpu_time_ns)
                decided = arrival.rehome(
                    instance, snapshot.topology, snapshot.usage,
                    snapshot.instances,
                    arrival.vcpu_busy(state.get('samples', {}).get(uuid),
                                      sample),
                    config.live_nodeset, config.page_migration)
                periods = (state.get('judged', {}).get(uuid, 0)
                           + decided.by_load)
                if decided.decided and not (
                        decided.by_load and periods < SETTLE_PERIODS):
                    arrivals[uuid] = decided
                    actions.extend(decided.actions)
                    continue
                if decided.by_load:
                    judged[uuid] = periods
                    LOG.debug('Instance %s, arrived: %s, for now (%d of %d '
                              'periods)', uuid, decided.reason, periods,
                              SETTLE_PERIODS)
                samples[uuid] = sample
            plan = enforcement.enforce(instance, snapshot.topology,
                                       snapshot.usage, config.live_nodeset,
                                       config.page_migration)
            if plan.blocked:
                LOG.debug('Instance %s: %s not enforced now: %s',
                          instance.uuid, instance.requested_policy,
                          plan.blocked)
            actions.extend(plan.actions)
        return actions, {'samples': samples, 'judged': judged,
                         'arrivals': arrivals}
