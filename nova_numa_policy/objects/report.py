"""The agent's versioned ``HostReport``: what a report says, and its order.

An agent builds one report per period and sends its primitive (a JSON-able
dict) as an oslo.messaging notification payload. Three modules share the
contract:

* this one, the schema: the versioned objects, the values their fields
  may take and the bounds beyond which a report is not believed, and
  which of two reports of a host is the newer (:func:`supersedes`);
* :mod:`.wire`, the wire format: dumping, reading and the version
  tolerance rolling upgrades need;
* :mod:`.validation`, the checks every value off the wire passes, shared
  with the REST API's own parameter checks.
"""

import datetime

from oslo_utils import versionutils
from oslo_versionedobjects import fields

from nova_numa_policy.conf import reports as reports_conf
from nova_numa_policy.contracts import backend
from nova_numa_policy.contracts import locality
from nova_numa_policy.contracts import policy
from nova_numa_policy.objects import base

# The notification event type agents send reports with; other events on
# the same topic (agent actions, for the collector) are not reports.
EVENT_TYPE = 'numa_policy.host.report'

MAX_NODES = 64
MAX_CPUS = 4096
MAX_NICS = 64
MAX_INSTANCES = 1024
MAX_NAME_LENGTH = 255
MAX_DISTANCE = 255
# Bounds of plausible values: far beyond any host, far below what breaks
# a consumer (a 64-bit database column, a float that is not finite).
MAX_NODE_ID = 1023
# A node's memory tier is its tier's rank among the host's tiers (0 the
# fastest). Each tier ranked holds at least one node, so there are no
# more ranks than node ids.
MAX_MEMORY_TIER = MAX_NODE_ID
MAX_CPU_ID = (1 << 16) - 1
MAX_MEMORY_MB = 1 << 32  # 4 PiB on one node
MAX_SPEED_MBPS = 10 ** 7
MAX_SEQ = (1 << 63) - 1
MAX_PERIOD = 86400.0
MAX_IO_RATE = 1e12
# Interrupt vectors of one NIC, and the largest vector number: far
# beyond any device (a NIC has one vector per queue, a few hundred at
# most) and any kernel's NR_IRQS.
MAX_NIC_IRQS = 4096
MAX_IRQ = (1 << 24) - 1
# A NIC's steering verdict: one line, the loop's own words.
MAX_VERDICT_LENGTH = 1024
# How far in the future a report's time may lie by the receiver's clock
# before it is dropped (configurable: [numa_policy_reports]
# max_clock_skew).
DEFAULT_MAX_CLOCK_SKEW = reports_conf.DEFAULT_MAX_CLOCK_SKEW

# What an instance's applied policy may say besides a concrete policy:
# nothing applied (yet), for instance while the agent has not seen it.
APPLIED_NONE = 'none'
APPLIED_POLICY_VALUES = tuple(
    value for value, spec in policy.POLICIES.items() if not spec.auto
) + (APPLIED_NONE,)
ACCESS_CLASSES = ('low', 'moderate', 'high')
LOCALITY_SIGNALS = locality.SIGNALS
# What a host may say it measures (HostReport.measurements).
MEASUREMENTS = LOCALITY_SIGNALS + (backend.MEASURE_CPU_WAIT,
                                   backend.MEASURE_INTERFACE_TRAFFIC)
# How an agent's plan for an instance ended (execution.ENDINGS).
ENFORCEMENT_ENDINGS = ('applied', 'rolled back', 'undo pending',
                       'roll back abandoned', 'gone', 'dry run')


@base.NumaPolicyObjectRegistry.register
class NumaNodeReport(base.NumaPolicyObject):
    """One host NUMA node, as measured by the agent."""

    # Version 1.0: initial version
    # Version 1.1: floating_cpus, floating_load
    # Version 1.2: memory_tier
    # Version 1.3: demotable_mb
    VERSION = '1.3'

    fields = {
        'id': fields.IntegerField(),
        'cpus': fields.ListOfIntegersField(),
        'memory_total_mb': fields.IntegerField(),
        'memory_free_mb': fields.IntegerField(),
        # Busy fraction of the node's CPUs over the last period, 0.0 to 1.0.
        'cpu_load': fields.FloatField(),
        # This node's row of the SLIT distance matrix, in node-list order.
        'distances': fields.ListOfIntegersField(),
        # The node's CPUs that guests without dedicated CPUs may use, as
        # nova's CPU options on the host give them: a subset of cpus,
        # empty where all are dedicated to pinned guests. None: not said
        # (a sender before 1.1), which means all of them
        # (floating_capacity()).
        'floating_cpus': fields.ListOfIntegersField(nullable=True),
        # Busy fraction of those CPUs over the last period, 0.0 to 1.0;
        # None where there are none, or floating_cpus is None.
        'floating_load': fields.FloatField(nullable=True),
        # The rank of the kernel's memory tier holding the node's memory
        # among the host's tiers: 0 the fastest, 1 the next, and so on.
        # None: not said (a sender before 1.2, a kernel without memory
        # tiers, a node in no tier), which means the top tier, 0
        # (memory_tier()).
        'memory_tier': fields.IntegerField(nullable=True),
        # Of the node's memory in use, the MB the agent's tiering loop
        # would move to a lower tier if the node ran short: ``tiered``
        # guests' pages above their top-tier share that were not written
        # over the last period (decisions/tiering.py, demotable_mb).
        # None: not said (a sender before 1.3, a node of a lower tier, a
        # host whose tiering loop does not act), which means 0
        # (demotable_mb()).
        'demotable_mb': fields.IntegerField(nullable=True),
    }

    DEFAULTS = {'floating_cpus': None, 'floating_load': None,
                'memory_tier': None, 'demotable_mb': None}
    ADDED_IN = {'floating_cpus': '1.1', 'floating_load': '1.1',
                'memory_tier': '1.2', 'demotable_mb': '1.3'}


@base.NumaPolicyObjectRegistry.register
class NumaNicReport(base.NumaPolicyObject):
    """A network uplink and the NUMA node its PCI device sits on."""

    # Version 1.0: initial version
    # Version 1.1: irqs, irq_cpus, irq_steering
    VERSION = '1.1'

    fields = {
        'name': fields.StringField(),
        'numa_node': fields.IntegerField(nullable=True),
        'speed_mbps': fields.IntegerField(nullable=True),
        'physnet': fields.StringField(nullable=True),
        'bridge': fields.StringField(nullable=True),
        # The NIC's interrupt vectors, by number; empty when the host
        # does not say (or cannot steer them).
        'irqs': fields.ListOfIntegersField(),
        # The host CPUs they are delivered to now: the kernel's effective
        # affinity where it says, else the affinity asked for; sorted.
        'irq_cpus': fields.ListOfIntegersField(),
        # Why they are there, in the iopath loop's words (steered to the
        # node of its I/O-intensive guests, restored as found, left
        # alone and why); None while that loop does not act.
        'irq_steering': fields.StringField(nullable=True),
    }

    DEFAULTS = {'numa_node': None, 'speed_mbps': None, 'physnet': None,
                'bridge': None, 'irqs': [], 'irq_cpus': [],
                'irq_steering': None}
    ADDED_IN = {'irqs': '1.1', 'irq_cpus': '1.1', 'irq_steering': '1.1'}


@base.NumaPolicyObjectRegistry.register
class NumaInstanceReport(base.NumaPolicyObject):
    """One instance on the host: what it asked for and what it got."""

    # Version 1.0: initial version
    # Version 1.1: enforcement
    # Version 1.2: cpu_wait
    VERSION = '1.2'

    fields = {
        'uuid': fields.UUIDField(),
        'requested_policy': fields.StringField(nullable=True),
        'applied_policy': fields.StringField(),
        # Resident memory per host node; keys are node ids as strings.
        'memory_mb_per_node': fields.DictOfIntegersField(),
        # The host CPU each vCPU last ran on, in vCPU order; -1 if unknown.
        'vcpu_cpus': fields.ListOfIntegersField(),
        # Network requests (or packets) per second over the last period.
        'io_rate': fields.FloatField(),
        'io_intensive': fields.BooleanField(),
        # Seed 000 Table 1 access-imbalance class, when it was measured.
        'access_class': fields.StringField(nullable=True),
        # How the agent's last plan for the instance ended (one of
        # ENFORCEMENT_ENDINGS), None while it had none to carry out.
        'enforcement': fields.StringField(nullable=True),
        # The share of its vCPUs' time over the last period spent waiting
        # for a host CPU (run-queue delay), None when not measured.
        'cpu_wait': fields.FloatField(nullable=True),
    }

    DEFAULTS = {'requested_policy': None, 'applied_policy': APPLIED_NONE,
                'memory_mb_per_node': {}, 'vcpu_cpus': [], 'io_rate': 0.0,
                'io_intensive': False, 'access_class': None,
                'enforcement': None, 'cpu_wait': None}
    ADDED_IN = {'enforcement': '1.1', 'cpu_wait': '1.2'}


@base.NumaPolicyObjectRegistry.register
class NumaHostReport(base.NumaPolicyObject):
    """Everything one agent says about its compute node in one period."""

    # Version 1.0: initial version
    # Version 1.1: boot_id; NumaInstanceReport 1.1
    # Version 1.2: locality_signal
    # Version 1.3: measurements; NumaInstanceReport 1.2
    # Version 1.4: locality_signal and measurements may say
    #              memory-bandwidth
    # Version 1.5: locality_signal and measurements may say
    #              hardware-samples
    # Version 1.6: NumaNodeReport 1.1 (floating_cpus, floating_load)
    # Version 1.7: NumaNicReport 1.1 (irqs, irq_cpus, irq_steering)
    # Version 1.8: NumaNodeReport 1.2 (memory_tier); memory_demotion
    # Version 1.9: NumaNodeReport 1.3 (demotable_mb)
    VERSION = '1.9'

    fields = {
        'host': fields.StringField(),
        'hypervisor_hostname': fields.StringField(),
        'agent_version': fields.StringField(),
        # Increases with every report of one agent process (one boot);
        # with boot_id it orders reports and makes redelivery idempotent.
        'seq': fields.IntegerField(),
        # Made afresh by each agent process: reports of one boot are
        # ordered by seq, whatever the clocks say (see supersedes()).
        'boot_id': fields.UUIDField(nullable=True),
        'generated_at': fields.DateTimeField(),
        'period': fields.FloatField(),
        'numa_nodes': fields.ListOfObjectsField('NumaNodeReport'),
        'nics': fields.ListOfObjectsField('NumaNicReport'),
        'instances': fields.ListOfObjectsField('NumaInstanceReport'),
        # hw:numa_policy values this host's agent can make true.
        'enforceable_policies': fields.ListOfStringsField(),
        # The memory-locality signal the host measures (one of
        # LOCALITY_SIGNALS), None when it measures none.
        'locality_signal': fields.StringField(nullable=True),
        # Everything the host measures of its guests (MEASUREMENTS
        # values): its locality signal, run-queue delay, traffic.
        'measurements': fields.ListOfStringsField(),
        # Whether the kernel demotes pages from a node's memory tier to a
        # lower one during reclaim (/sys/kernel/mm/numa/demotion_enabled);
        # None when it does not say (before Linux 6.1, a sender before
        # 1.8).
        'memory_demotion': fields.BooleanField(nullable=True),
    }

    # The version of each child class that a given report version carries.
    obj_relationships = {
        'numa_nodes': [('1.0', '1.0'), ('1.6', '1.1'), ('1.8', '1.2'),
                       ('1.9', '1.3')],
        'nics': [('1.0', '1.0'), ('1.7', '1.1')],
        'instances': [('1.0', '1.0'), ('1.1', '1.1'), ('1.3', '1.2')],
    }

    # Signals a version added, and what a consumer of an older version
    # is told instead: the older signal whose numbers mean the same to it
    # (memory bandwidth, like counters, counts accesses; rates hold; so
    # do hardware samples, scaled by their sampling period).
    SIGNAL_ADDED_IN = {locality.SIGNAL_BANDWIDTH:
                       ('1.4', locality.SIGNAL_COUNTERS),
                       locality.SIGNAL_SAMPLES:
                       ('1.5', locality.SIGNAL_COUNTERS)}

    DEFAULTS = {'nics': [], 'instances': [], 'enforceable_policies': [],
                'boot_id': None, 'locality_signal': None,
                'measurements': [], 'memory_demotion': None}
    ADDED_IN = {'boot_id': '1.1', 'locality_signal': '1.2',
                'measurements': '1.3', 'memory_demotion': '1.8'}

    CHILDREN = {'numa_nodes': NumaNodeReport, 'nics': NumaNicReport,
                'instances': NumaInstanceReport}

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        for signal, (added, older) in self.SIGNAL_ADDED_IN.items():
            if target >= versionutils.convert_version_to_tuple(added):
                continue
            if primitive.get('locality_signal') == signal:
                primitive['locality_signal'] = older
            if 'measurements' in primitive:
                primitive['measurements'] = sorted(
                    {older if m == signal else m
                     for m in primitive['measurements']})

    def node_ids(self):
        return [node.id for node in self.numa_nodes]

    def is_fresh(self, now, ttl):
        """Whether the report is younger than ``ttl`` seconds at ``now``."""
        age = (now - self.generated_at).total_seconds()
        return age <= ttl


def floating_capacity(node):
    """(CPU ids, load) of a node that guests without dedicated CPUs may use.

    ``node`` is a checked node's data (a dict, as
    :func:`.wire.load_report_data` gives it, or a row stored from one).
    A node report before 1.1 does not say: then every CPU of the node
    and its load, which is what consumers used before it did. The load
    is None where the node has no such CPU.
    """
    cpus = node.get('floating_cpus')
    if cpus is None:
        return node['cpus'], node['cpu_load']
    return cpus, node.get('floating_load')


def memory_tier(node):
    """The rank of a node's memory tier, 0 the fastest.

    ``node`` is a checked node's data (a dict, as
    :func:`.wire.load_report_data` gives it, or a row stored from one).
    A node that does not say (a sender before node report 1.2, a kernel
    without memory tiers) is in the top tier: every node was, to every
    consumer, before tiers were reported.
    """
    tier = node.get('memory_tier')
    return 0 if tier is None else tier


def demotable_mb(node):
    """The MB of a node's memory a lower tier may take off it, 0 if unsaid.

    ``node`` is a checked node's data (a dict, as
    :func:`.wire.load_report_data` gives it, or a row stored from one).
    A node that does not say (a sender before node report 1.3, a host
    whose tiering loop does not act) has nothing that will go down: its
    used memory is all in use, as every consumer read it before.
    """
    mb = node.get('demotable_mb')
    return 0 if mb is None else mb


def supersedes(new, old):
    """Whether report ``new`` replaces ``old`` as a host's latest: pure.

    Each is a (boot_id, seq, generated_at) triple. Within one agent boot
    the sequence decides, whatever the clocks did meanwhile. Across boots
    (or from agents that send no boot id) the later time decides, then
    the sequence; a report from the future never gets that far
    (check_time).
    """
    new_boot, new_seq, new_time = new
    old_boot, old_seq, old_time = old
    if new_boot is not None and new_boot == old_boot:
        return new_seq > old_seq
    return (new_time, new_seq) > (old_time, old_seq)


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)
