"""Memory tiers in nova's scheduler: a ``top`` flavor's memory on the top tier.

nova's libvirt fixtures with real placement, and our filters and
weighers on (``test_floating_capacity``'s base). Each host's agent
reports the same three nodes and the same free memory: nodes 0 and 1
with four CPUs and 400 MB free each, and node 2, a memory-only node (a
CXL expander) with 900 MB free. The hosts differ only in their kernel's
memory tiers: on ``tiers`` node 2 is in the tier below the other two,
as dax/kmem puts such memory; on ``flat`` the kernel ranks no tier, so
every node is in the top tier, as before tiers were reported.

A 1024 MB ``hw:numa_memory_tiers=top`` flavor then has 800 MB of top
tier on ``tiers`` and 1700 on ``flat``. Before the scheduler counted
memory per tier, both hosts passed it alike and nova's weighers
alternated between them; a plain flavor still does.

Where the agent's tiering loop acts, the report adds what it would move
down off each top-tier node (report 1.9's ``demotable_mb``): a ``tiered``
guest's pages above its floor that it did not write, which the
scheduler counts as top-tier room.
"""

import uuid as uuid_mod

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import tiers
from nova_numa_policy.decisions import reporting
from nova_numa_policy.loops import runner
from nova_numa_policy.objects import report as report_obj

from agent.sensors import discovery
from tests.functional.scheduler import test_floating_capacity as base

TOP = {'hw:numa_memory_tiers': 'top'}
MEMORY_MB = 1024
# What each host's agent reports of its nodes: (total, free) MB.
NODE_MB = {0: (800, 400), 1: (800, 400), 2: (900, 900)}
DISTANCES = {0: (10, 21, 30), 1: (21, 10, 30), 2: (30, 30, 10)}
# The kernel's tier ranks: node 2 below nodes 0 and 1; None: no tiers.
RANKS = {'tiers': {0: 0, 1: 0, 2: 1}, 'flat': None}


def tiered_guest(per_node, written):
    """A running 600 MB ``tiered`` 50 % guest: MB per node, MB written."""
    return backend.InstanceState(
        uuid=str(uuid_mod.uuid4()), requested_policy='first-touch',
        requested_tiers=tiers.MemoryTiers(tiers.TierMode.TIERED, 50),
        memory_mb=600, memory_mode='restrictive',
        memory_nodes=frozenset({0, 1, 2}), memory_mb_per_node=per_node,
        written_mb_per_node=written)


class MemoryTierTest(base._FloatingCapacityBase):

    # {host: guests its agent's tiering loop acts on}; none: the loop
    # says nothing, as an agent without it.
    TIERING = {}

    def agent_report(self, host, ranks):
        """``host``'s agent report, its kernel's tiers ranked ``ranks``.

        The CPUs are the host's own (libvirt's capabilities); the nodes'
        memory and the memory-only node 2 are the agent's view above;
        the guests of ``TIERING`` its own.
        """
        caps = self.computes[host].driver._host.get_connection(
        ).getCapabilities()
        cpus = {node.id: node.cpus
                for node in base.topology.nodes_from_capabilities(caps)}
        nodes = tuple(
            backend.NodeInfo(id=node_id, cpus=tuple(cpus.get(node_id, ())),
                             memory_total_mb=total,
                             distances=DISTANCES[node_id],
                             memory_tier=(ranks or {}).get(node_id, 0))
            for node_id, (total, _) in NODE_MB.items())
        # Every CPU floats (nova dedicates none), idle.
        usage = discovery.usage(
            nodes, {}, {node_id: free
                        for node_id, (_, free) in NODE_MB.items()},
            {node.id: node.cpus for node in nodes},
            {node.id: 0.0 for node in nodes})
        guests = self.TIERING.get(host, ())
        snapshot = backend.HostSnapshot(
            topology=backend.HostTopology(nodes=nodes), usage=usage,
            instances=tuple(guests), taken_at=0.0,
            memory_tiers=backend.MemoryTiers(ranks=ranks, demotion=True))
        return reporting.build_report(
            snapshot, host, host, seq=1, period=60.0, capabilities=(),
            now=report_obj.utcnow(),
            active_loops={'tiering'} if guests else (),
            judges=runner.judges())

    def start_and_report(self, *hosts):
        for host in hosts:
            self.start_compute(hostname=host)
        self.report(**{host: RANKS[host] for host in hosts})

    def boot_flavor(self, extra_specs, expected_state='ACTIVE'):
        flavor_id = self._create_flavor(vcpu=2, memory_mb=MEMORY_MB,
                                        extra_spec=extra_specs)
        server = self._create_server(flavor_id=flavor_id, networks='none',
                                     expected_state=expected_state)
        return server

    def test_a_top_flavor_lands_where_the_top_tier_has_room(self):
        self.start_and_report('tiers', 'flat')
        # Twice: after the first, nova's own weighers prefer the emptier
        # host, tiers; our filters keep it off (the policy filter, for
        # 800 MB of top tier, and the load filter, which finds no room
        # for the guest on the top-tier nodes).
        for _ in range(2):
            server = self.boot_flavor(TOP)
            self.assertEqual('flat', server['OS-EXT-SRV-ATTR:host'])
        # A plain flavor is never refused for tiers: nova's weighers put
        # it on the emptier host, whose top tier is the short one.
        server = self.boot_flavor({})
        self.assertEqual('tiers', server['OS-EXT-SRV-ATTR:host'])

    def test_with_no_top_tier_room_the_fault_says_why(self):
        self.start_and_report('tiers')
        server = self.boot_flavor(TOP, expected_state='ERROR')
        self.assertEqual(
            'No valid host was found. No host has 1024 MB free on its top '
            "memory tier, where hw:numa_memory_tiers=top keeps all of the "
            "instance's memory.", server['fault']['message'])
        # Nothing about tiers refuses a plain flavor there.
        server = self.boot_flavor({})
        self.assertEqual('tiers', server['OS-EXT-SRV-ATTR:host'])

    def test_cold_pages_above_a_tiered_guests_floor_make_room_for_top(self):
        # A tiered guest with 300 MB on each top-tier node, its floor
        # 300: node 0's 300 MB, unwritten, would go down. Top tier: 800
        # MB free and 300 demotable, which the lower tier's 900 holds.
        self.TIERING = {'tiers': [tiered_guest({0: 300, 1: 300},
                                               {0: 0, 1: 100})]}
        self.start_and_report('tiers')
        server = self.boot_flavor(TOP)
        self.assertEqual('tiers', server['OS-EXT-SRV-ATTR:host'])

    def test_written_pages_above_the_floor_make_no_room(self):
        self.TIERING = {'tiers': [tiered_guest({0: 300, 1: 300},
                                               {0: 300, 1: 300})]}
        self.start_and_report('tiers')
        server = self.boot_flavor(TOP, expected_state='ERROR')
        self.assertIn('No host has 1024 MB free on its top memory tier',
                      server['fault']['message'])
