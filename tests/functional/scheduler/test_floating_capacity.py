"""Floating guests are judged on the CPUs they may use, in nova's scheduler.

nova's libvirt fixtures with real placement: every compute has two NUMA
nodes of four CPUs, and nova's ``[compute] cpu_shared_set`` and
``cpu_dedicated_set`` split them, so placement holds VCPU and PCPU
inventories as on a real host. Each host's report is the one its agent
would send: the topology from the host's libvirt capabilities, nova's
partition read from nova's options (``agent.service.cmd.cpu_partition``), node
loads from per-CPU busy time over a period (``agent.sensors.discovery``), built
by ``reporting.build_report`` and sent through a real oslo.messaging
notifier to the scheduler's own listener.

``OlderAgentTest`` sends the same reports pinned to version 1.5, which
says nothing of floating CPUs: the scheduler then judges every CPU of a
node, as before report 1.6, and chooses the other host in every
scenario. So each scenario tells the two apart.
"""


from oslo_config import cfg

from nova.tests.functional.libvirt import base as libvirt_base

from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import topology
from nova_numa_policy.decisions import reporting
from nova_numa_policy.objects import report as report_obj

from agent.sensors import discovery
from agent.service import cmd as agent_cmd
from tests.functional.scheduler import harness

CONF = cfg.CONF

OUR_FILTERS = ['NUMATopologyFilter'] + harness.OUR_FILTERS
PERIOD_JIFFIES = 1000
# fakelibvirt numbers node 0's CPUs 0-3 and node 1's 4-7.
NODE0, NODE1 = range(0, 4), range(4, 8)
# nova's [compute] options: node 0 shared and node 1 dedicated, or each
# node half shared (its first two CPUs) and half dedicated.
WHOLE_NODES = dict(cpu_shared_set='0-3', cpu_dedicated_set='4-7')
HALF_NODES = dict(cpu_shared_set='0,1,4,5', cpu_dedicated_set='2,3,6,7')
SHARED_HALVES, DEDICATED_HALVES = (0, 1, 4, 5), (2, 3, 6, 7)


def busy(*cpus_and_fractions):
    """{cpu: busy share of the period} from (CPUs, share) pairs."""
    return {cpu: fraction for cpus, fraction in cpus_and_fractions
            for cpu in cpus}


class _FloatingCapacityBase(harness.ReportsToTheScheduler,
                            libvirt_base.ServersTestBase):
    ADMIN_API = True
    microversion = 'latest'
    # The version the agents send; None: their own.
    REPORT_VERSION = None

    def _setup_scheduler_service(self):
        harness.enable_our_plugins(
            self, list(CONF.filter_scheduler.enabled_filters) + OUR_FILTERS)
        # Plain flavors weighed by headroom too: where both hosts pass
        # the filters, our weigher, not chance, picks between them.
        self.flags(weigh_plain_flavors=True, group='numa_policy_scheduler')
        return self.start_service('scheduler')

    def start_hosts(self, partition, *hosts):
        """Start computes with nova's CPU ``partition`` ([compute])."""
        self.flags(group='compute', **partition)
        for host in hosts:
            self.start_compute(hostname=host)

    def agent_report(self, host, busy_fractions):
        """What ``host``'s agent reports after a period of that load.

        ``busy_fractions``: {cpu: busy share of the period}; others idle.
        """
        caps = self.computes[host].driver._host.get_connection(
        ).getCapabilities()
        nodes = topology.nodes_from_capabilities(caps)
        cpus = [cpu for node in nodes for cpu in node.cpus]
        before = {cpu: (0, 0) for cpu in cpus}
        after = {cpu: (round(busy_fractions.get(cpu, 0.0) * PERIOD_JIFFIES),
                       PERIOD_JIFFIES) for cpu in cpus}
        floating = agent_cmd.cpu_partition(CONF).floating_by_node(nodes)
        usage = discovery.usage(
            nodes, discovery.node_loads(before, after, nodes), {}, floating,
            discovery.floating_loads(before, after, floating))
        snapshot = backend.HostSnapshot(
            topology=backend.HostTopology(nodes=tuple(nodes)), usage=usage,
            instances=(), taken_at=0.0)
        return reporting.build_report(
            snapshot, host, host, seq=1, period=60.0, capabilities=(),
            now=report_obj.utcnow())

    def report(self, **busy_by_host):
        """Send each host's report through the notifier; wait for all."""
        self.send_reports([self.agent_report(host, fractions)
                           for host, fractions in busy_by_host.items()],
                          target_version=self.REPORT_VERSION)

    def boot(self, vcpus, extra_specs=None, expected_state='ACTIVE'):
        flavor_id = self._create_flavor(vcpu=vcpus, memory_mb=512,
                                        extra_spec=extra_specs or {})
        server = self._create_server(flavor_id=flavor_id, networks='none',
                                     expected_state=expected_state)
        if expected_state == 'ERROR':
            self.assertIn('No valid host', server['fault']['message'])
        return server['OS-EXT-SRV-ATTR:host']


class FloatingCapacityTest(_FloatingCapacityBase):
    """The reports say which CPUs floating guests may use (1.6)."""

    # Where a floating guest lands in each scenario.
    IDLE_DEDICATED_NODE = 'host2'
    IDLE_DEDICATED_CPUS = 'host2'
    BUSY_SHARED_SET = 'host2'
    BUSY_SHARED_NODE = 'host2'

    def test_an_idle_dedicated_node_does_not_attract_a_floating_guest(self):
        self.start_hosts(WHOLE_NODES, 'host1', 'host2')
        # host1: its shared node at 0.75 (0.8 - (0.75 + 2 vCPUs * 0.25 /
        # 4 CPUs): no headroom left), its dedicated node idle. host2: its
        # shared node at 0.2 (headroom 0.475), pinned guests keep its
        # dedicated node busy. Were every CPU of a node counted, host1's
        # idle node 1 would have the most headroom of all.
        self.report(host1=busy((NODE0, 0.75)),
                    host2=busy((NODE0, 0.2), (NODE1, 1.0)))
        self.assertEqual(self.IDLE_DEDICATED_NODE, self.boot(vcpus=2))

    def test_idle_dedicated_cpus_are_no_headroom_for_a_floating_guest(self):
        self.start_hosts(WHOLE_NODES, 'host1', 'host2')
        # Both hosts' shared nodes hold a 1-vCPU guest; host2's have more
        # room (0.1 busy against 0.4). host1's idle dedicated node would
        # have more still, were it counted: the weigher decides.
        self.report(host1=busy((NODE0, 0.4)),
                    host2=busy((NODE0, 0.1), (NODE1, 1.0)))
        self.assertEqual(self.IDLE_DEDICATED_CPUS, self.boot(vcpus=1))

    def test_a_busy_shared_set_is_busy_beside_idle_dedicated_cpus(self):
        self.start_hosts(HALF_NODES, 'host1', 'host2')
        # host1: its shared CPUs 90 % busy (over 0.8), its dedicated
        # ones idle: 45 % over all of a node's CPUs. host2: its shared
        # CPUs 20 % busy, its dedicated ones full: 60 % over all of a
        # node's.
        self.report(host1=busy((SHARED_HALVES, 0.9)),
                    host2=busy((SHARED_HALVES, 0.2), (DEDICATED_HALVES, 1.0)))
        self.assertEqual(self.BUSY_SHARED_SET, self.boot(vcpus=1))

    def test_a_host_refused_to_floating_guests_still_takes_pinned_ones(self):
        self.start_hosts(WHOLE_NODES, 'host1', 'host2')
        # host1's shared node is busy (0.95 > 0.8), its dedicated one
        # idle; host2's shared node is quiet (0.5), its dedicated one
        # full. A policy flavor floats: the load filter refuses host1.
        self.report(host1=busy((NODE0, 0.95)),
                    host2=busy((NODE0, 0.5), (NODE1, 1.0)))
        floating = self.boot(
            vcpus=2, extra_specs={'hw:numa_policy': 'interleave'})
        self.assertEqual(self.BUSY_SHARED_NODE, floating)
        # Idle dedicated CPUs are for guests like this one, which nova's
        # NUMATopologyFilter places: our filters leave both hosts to it,
        # and nova's weighers spread it to the other host.
        pinned = self.boot(vcpus=2,
                           extra_specs={'hw:cpu_policy': 'dedicated'})
        self.assertEqual({'host1', 'host2'}, {floating, pinned})


class OlderAgentTest(FloatingCapacityTest):
    """The same hosts, their agents pinned to report 1.5."""

    REPORT_VERSION = '1.5'
    IDLE_DEDICATED_NODE = 'host1'
    IDLE_DEDICATED_CPUS = 'host1'
    BUSY_SHARED_SET = 'host1'
    BUSY_SHARED_NODE = 'host1'
