"""The guest's requested policy, enforced: the first strategy of a period.

What ``hw:numa_policy`` asks of a running guest
(:func:`nova_numa_policy.decisions.enforcement.enforce`) decided as a strategy,
so it goes through the runner like every loop: hands-off guests, the
do-no-harm guard, the period's budget, one dry run, one executor with
rollback. Unlike a loop's, its actions for one guest are one atomic plan
(``atomic_plans``): the runner admits all of them or none, as a guest
half bound to its home nodes is worse than one not bound yet.
"""

import dataclasses
import logging

from nova_numa_policy.decisions import enforcement
from nova_numa_policy.loops import base

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Config:
    # Whether the host can change a running guest's nodeset
    # (backend.CAP_LIVE_NODESET); the runner sets it from the backend.
    live_nodeset: bool = True


class PolicyEnforcement(base.Strategy):
    name = 'policy'
    inputs = ('memory_mode', 'memory_nodes', 'vcpu_affinity',
              'emulator_affinity', 'requested_policy')
    atomic_plans = True
    Config = Config

    def decide(self, snapshot, state, config):
        actions = []
        for instance in snapshot.instances:
            plan = enforcement.enforce(instance, snapshot.topology,
                                       snapshot.usage, config.live_nodeset)
            if plan.blocked:
                LOG.debug('Instance %s: %s not enforced now: %s',
                          instance.uuid, instance.requested_policy,
                          plan.blocked)
            actions.extend(plan.actions)
        return actions, state
