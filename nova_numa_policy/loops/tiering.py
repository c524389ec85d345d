"""The tiering loop: ``tiered`` guests' pages between the memory tiers.

Each period, for each guest that asked ``hw:numa_memory_tiers=tiered`` on
a host with a lower memory tier, the moves
:func:`nova_numa_policy.decisions.tiering.tier_guest` decides: back up to
the flavor's top-tier share, cold pages down from a top-tier node short of
memory, pages it writes back up where there is room; and only what the
kernel's own tiering leaves to the agent. Through the runner like every
loop: hands-off guests untouched, the do-no-harm guard, the period's page
budget (a move larger than what is left is trimmed, the rest waits for the
next period), one executor with rollback.
"""

import dataclasses

from oslo_log import log as logging

from nova_numa_policy.conf import loops as loops_conf
from nova_numa_policy.contracts import backend
from nova_numa_policy.decisions import tiering
from nova_numa_policy.decisions import toptier
from nova_numa_policy.loops import base

LOG = logging.getLogger(__name__)

# Its options in [numa_policy_loops], defined with every loop's in
# nova_numa_policy.conf.loops.
OPTS = loops_conf.TIERING_OPTS

Config = base.config_class(
    __name__, OPTS,
    {'low_free': 'tiering_low_free', 'high_free': 'tiering_high_free'},
    # Whether the host can change a running guest's nodeset
    # (backend.CAP_LIVE_NODESET): cold pages may move only to a node the
    # guest's nodeset holds. The runner sets it (for_capabilities).
    live_nodeset=False)


class Tiering(base.Strategy):
    name = 'tiering'
    inputs = ('memory_mb_per_node', 'written_mb_per_node', 'requested_tiers',
              'memory_mode', 'memory_nodes')
    required_capabilities = frozenset({backend.CAP_PAGE_MIGRATION})
    Config = Config
    OPTS = OPTS

    @classmethod
    def config_from(cls, group, period_s):
        config = super().config_from(group, period_s)
        # Refused at the agent's start rather than in every period.
        tiering.Marks(config.low_free, config.high_free)
        return config

    @classmethod
    def for_capabilities(cls, config, capabilities):
        return dataclasses.replace(
            config, live_nodeset=backend.CAP_LIVE_NODESET in capabilities)

    @classmethod
    def judge_nodes(cls, snapshot, config):
        """Each top-tier node's ``demotable_mb``, on a host with a lower tier.

        What this loop would move down off the node if it ran short
        (:func:`~nova_numa_policy.decisions.tiering.demotable_mb`), 0
        where nothing would: said of every top-tier node while the loop
        acts, so that the scheduler may count it as room.
        """
        topology = snapshot.topology
        if not toptier.has_lower_tier(topology):
            return {}
        demotable = tiering.demotable_mb(
            base.managed(snapshot), topology, snapshot.memory_tiers,
            config.live_nodeset)
        return {node: {'demotable_mb': demotable.get(node, 0)}
                for node in toptier.top_tier_nodes(topology)}

    def decide(self, snapshot, state, config):
        actions = []
        for instance in base.managed(snapshot):
            decided = tiering.tier_guest(
                instance, snapshot.topology, snapshot.usage,
                snapshot.memory_tiers, config.live_nodeset,
                tiering.Marks(config.low_free, config.high_free))
            if decided.seen:
                LOG.debug('Instance %s, tiered: %s', instance.uuid,
                          decided.seen)
            if decided.blocked:
                LOG.info('Instance %s: %s', instance.uuid, decided.blocked)
            actions.extend(decided.actions)
        return actions, state
