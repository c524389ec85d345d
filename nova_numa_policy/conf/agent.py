"""Options of the ``[numa_policy_agent]`` group: the compute agent."""

import socket

from oslo_config import cfg

from nova_numa_policy.conf import base

GROUP = cfg.OptGroup(
    'numa_policy_agent',
    title='NUMA policy agent',
    help='The numa-policy-agent on each compute node: what it watches, how '
         'often, and what it may change.')

OPTS = [
    cfg.StrOpt(
        'host',
        default=socket.gethostname(),
        sample_default='<current_hostname>',
        help='''
Name of this compute host in reports; must match nova-compute's ``host``.

Possible values:

* The value of ``[DEFAULT] host`` in this host's nova.conf.
'''),
    cfg.FloatOpt(
        'period',
        default=5.0,
        min=0.5,
        help='''
Seconds between two agent periods (observe, decide, act, report).

Libvirt lifecycle events (started, resumed, migrated in, rebooted) start a
period at once, so a new guest does not wait for the next one.

Possible values:

* A number of seconds, at least 0.5.

Related options:

* ``[numa_policy_reports] topic``: where each period's report goes.
'''),
    cfg.StrOpt(
        'libvirt_uri',
        default='qemu:///system',
        help='''
libvirt connection URI the agent observes and acts through.

Possible values:

* ``qemu:///system`` on a KVM compute node; ``test:///path/host.xml`` or
  ``test:///default`` for libvirt's test driver.

Related options:

* nova's ``[libvirt] connection_uri`` should name the same hypervisor.
'''),
    cfg.StrOpt(
        'sysfs_root',
        default='/',
        help='''
Directory under which ``sys/`` and ``proc/`` are read.

Possible values:

* ``/`` in production; a fixture tree in tests.
'''),
    cfg.DictOpt(
        'physnet_interfaces',
        default={},
        help='''
Uplink interface of each physical network, ``physnet:interface``.

The agent reports each uplink's NUMA node, speed and physnet so that
NIC-aware scheduling knows where a network's traffic enters the host.

Possible values:

* A comma-separated list such as ``physnet1:ens1f0,physnet2:ens2f0``.

Related options:

* nova's ``[pci] device_spec`` entries with a ``physical_network``, in
  any form nova accepts (``vendor_id``/``product_id``, an address with
  wildcards or regular expressions, a ``devname``), are matched against
  the host's PCI functions: the physical functions they name, or whose
  VFs they name, add their interfaces, for physnets and interfaces not
  listed here.
* nova's ``[neutron_physnet_<name>] numa_nodes`` is read too when set,
  for physnets whose uplink is still unknown.
* ``bridge_interfaces``.
* ``[numa_policy] uplinks_file``: where the uplinks found go for the
  libvirt driver extension.
'''),
    cfg.DictOpt(
        'bridge_interfaces',
        default={},
        help='''
Uplink interface of each bridge, ``bridge:interface``.

Possible values:

* A comma-separated list such as ``br-ex:ens1f1``.

Related options:

* ``physnet_interfaces``.
'''),
    cfg.StrOpt(
        'ovs_db',
        default='tcp:127.0.0.1:6640',
        help='''
The Open vSwitch database the agent asks which interfaces carry each
physnet.

The default is the loopback remote that neutron's ML2/OVS agent connects
to (its own ``[ovs] ovsdb_connection`` default) and makes OVSDB listen
on. The unix socket, ``unix:/run/openvswitch/db.sock``, is root's alone
on Open vSwitch's packages: the agent, running as nova, cannot read it
unless its group is given access.

Read only (``ovs-vsctl`` queries), each time the agent reads the host's
topology: OVN's ``ovn-bridge-mappings`` (in this database) and, when
neutron's ML2/OVS agent configuration is on the command line, its
``[ovs] bridge_mappings`` name the bridge of each physnet; the bridge's
physical interfaces are its uplinks. Without ``ovs-vsctl`` or access to
the database the agent says so once per read and goes on without.

Possible values:

* An OVSDB remote such as ``unix:/run/openvswitch/db.sock`` or
  ``tcp:127.0.0.1:6640``; empty: do not ask.

Related options:

* ``physnet_interfaces`` wins for the physnets it names.
'''),
    cfg.BoolOpt(
        'dry_run',
        default=False,
        help='''
Decide and log every action with its reason, but change nothing.

Reports are still sent; instances show the policy actually in force.

Possible values:

* False (act) or True (only log what would be done).

Related options:

* The ``--dry-run`` command line flag sets this option.
'''),
    cfg.BoolOpt(
        'manage_guests_without_policy',
        default=False,
        help='''
Let the rebalancing loops move the vCPUs and pages of nova instances
that asked for no ``hw:numa_policy`` (and that ``[numa_policy]
default_policy`` did not cover when they booted).

Off, such guests keep nova's own behaviour and the agent only counts
their load; the report says why each is left alone.

Possible values:

* False (leave them alone) or True.

Related options:

* ``manage_foreign_domains``, ``manage_passthrough_guests``.
'''),
    cfg.BoolOpt(
        'manage_foreign_domains',
        default=False,
        help='''
Let the rebalancing loops move domains nova did not define (no nova
instance metadata and no ``hw:numa_policy`` record in their XML).

Possible values:

* False (leave them alone) or True.

Related options:

* ``manage_guests_without_policy``.
'''),
    cfg.BoolOpt(
        'manage_passthrough_guests',
        default=False,
        help='''
Manage guests with a passthrough device (PCI ``<hostdev>``, an SR-IOV
VF as ``<interface type='hostdev'>``, vDPA) like any other.

Off, they are left where nova placed them: the device's NUMA node is
fixed by the hardware, and nova's PCI NUMA affinity chose the guest's
CPUs for it.

Possible values:

* False (leave them alone) or True.
'''),
    cfg.IntOpt(
        'max_actions_per_period',
        default=64,
        min=0,
        help='''
Most changes the agent makes in one period: vCPU, emulator and nodeset
changes and page moves, of the policy's enforcement and of the
rebalancing loops together.

A budget against disturbing many guests at once after a restart; the rest
is done in the next periods. A guest's policy is enforced as one plan,
all of it in one period or none of it.

Possible values:

* 0 (observe and report only) or more.

Related options:

* ``[numa_policy_loops] pages_per_second`` and ``vcpu_moves_per_period``
  bound the loops' moves further.
'''),
    cfg.FloatOpt(
        'numa_maps_core_share',
        default=0.01,
        min=0.001,
        max=1.0,
        help='''
Share of one CPU core the agent may spend reading guests' ``numa_maps``.

The kernel writes a guest's ``numa_maps`` by walking the page tables of
its resident memory: milliseconds per GB with 4 KiB pages. Within this
budget per period (0.01 at a 5 s period: 50 ms), the stalest guests are
read first; a guest is read again at least every 12 periods, or, where
reading every guest once costs more than 12 budgets, as often as the
budget allows. A new guest, one whose definition changed or whose pages
the agent moved is read at once. A guest not read keeps its last
reading.

Possible values:

* A fraction of one core, from 0.001 to 1.0 (every guest read every
  period on any host whose reads take less than a period).
'''),
    cfg.FloatOpt(
        'max_reconnect_interval',
        default=60.0,
        min=1.0,
        help='''
Longest wait, in seconds, between two attempts to reconnect to libvirt.

The wait doubles from one second after each failed attempt up to this.

Possible values:

* A number of seconds, at least 1.
'''),
    cfg.BoolOpt(
        'manage_traits',
        default=False,
        help='''
Put traits saying what this host can enforce on its compute node
resource provider in placement.

The agent adds its ``CUSTOM_NUMA_POLICY_*`` traits and removes its own
stale ones; every other trait of the provider (nova's, an operator's) is
kept.

Possible values:

* True needs a ``[placement]`` section with keystoneauth credentials,
  the same options as nova.conf's ``[placement]`` (``auth_type``,
  ``auth_url``, ``username``, ``password``, ``region_name``...).
'''),
    cfg.BoolOpt(
        'page_migration',
        default=False,
        help='''
Move guests' pages between NUMA nodes (move_pages(2)) and read their
per-node memory through a privsep daemon with CAP_SYS_NICE.

Offered to the rebalancing loops only when the kernel has move_pages.
Without it the agent reads ``/proc/<pid>/numa_maps`` itself, which needs
the agent to run as qemu's user.

Possible values:

* False (no page migration) or True: needs ``privsep-helper`` allowed
  through sudo or rootwrap, and ``[numa_policy_privileged] user`` and
  ``group`` set to qemu's user and group.

Related options:

* ``qemu_pid_dir``.
'''),
    cfg.BoolOpt(
        'bandwidth_monitoring',
        default=False,
        help='''
Measure each guest's memory bandwidth per node with resctrl (Intel MBM,
AMD's bandwidth monitoring): the agent puts the guest's vCPU threads in
a monitoring group of its own, through a privsep daemon that runs as
root with no capabilities.

Used as the host's locality signal only while the kernel's NUMA
balancing is off (``kernel.numa_balancing``): with it on, its hinting
faults are the signal and the kernel moves pages itself. Needs resctrl
mounted at ``/sys/fs/resctrl`` on a CPU that counts ``mbm_total_bytes``
and ``mbm_local_bytes``, and one L3 cache domain per node at most (not
sub-NUMA clustering). Threads libvirt or an operator already placed in
a resctrl group are left where they are, unmeasured.

Possible values:

* False (do not monitor) or True: needs ``privsep-helper`` allowed
  through sudo or rootwrap for the ``agent.privsep.monitor`` context.

Related options:

* ``page_migration``: the loops' page moves, which the bandwidth guides.
'''),
    cfg.BoolOpt(
        'access_monitoring',
        default=False,
        help='''
Tell the pages a ``tiered`` guest reads from its cold ones with DAMON,
the kernel's data access monitor: one kdamond per tiered guest, run
through a privsep daemon as root with no capabilities. Without it the
tiering loop knows only what a guest wrote over the last period
(soft-dirty bits), and a page it only reads looks cold and may go to a
lower tier.

Needs DAMON's virtual address monitoring and sysfs interface
(``CONFIG_DAMON_VADDR``, ``CONFIG_DAMON_SYSFS``: Debian's 6.12 has them,
its 6.1 does not); where they are missing, or another user runs DAMON's
kdamonds, the agent says so once and goes on with the written pages
alone.

Possible values:

* False (written pages only) or True: needs ``privsep-helper`` allowed
  through sudo or rootwrap for the ``agent.privsep.access`` context.

Related options:

* ``page_migration``: the tiering loop moves pages through it.
'''),
    cfg.BoolOpt(
        'hardware_sampling',
        default=False,
        help='''
Sample the memory accesses of the guests' vCPUs with the CPU's
instruction sampling (AMD IBS op): each sample memory served names, by
its physical address, the node that served it. One sampling event per
online CPU is held by a privsep daemon that runs as QEMU's account with
``CAP_PERFMON`` alone and hands the agent counts per vCPU thread and
node.

Used as the host's locality signal only while the kernel's NUMA
balancing is off (``kernel.numa_balancing``), and before memory
bandwidth where both are on. Needs an AMD CPU with IBS (the ``ibs_op``
PMU in ``/sys/bus/event_source/devices``), Linux 5.8 or later
(``CAP_PERFMON``) and memory blocks per node in sysfs. Intel's PEBS
cannot sample a guest from the host: there the agent says so and uses
another signal.

Possible values:

* False (do not sample) or True: needs ``privsep-helper`` allowed
  through sudo or rootwrap for the ``agent.privsep.sampler`` context.

Related options:

* ``hardware_sample_period``: how often the CPU samples.
* ``page_migration``: the loops' page moves, which the samples guide.
'''),
    cfg.BoolOpt(
        'io_path_steering',
        default=False,
        help='''
Steer the uplinks' interrupts and the guests' vhost workers (the guests'
I/O path) through a privsep daemon that runs as root with
``CAP_SYS_NICE`` alone.

Offers the loops the ``irq-steering`` and ``io-thread-pinning``
capabilities. Where irqbalance runs, each interrupt the agent steers is
put in irqbalance's banned list through its socket first, and taken out
again once the agent writes back the affinity it found; where irqbalance
runs and its socket does not answer, the uplinks' interrupts are left
alone. Without it the agent still reports each guest's uplinks.

Possible values:

* False (do not steer) or True: needs ``privsep-helper`` allowed
  through sudo or rootwrap for the ``agent.privsep.steering`` context.

Related options:

* ``state_dir``: where the affinity each interrupt had before the agent
  first steered it is kept.
* ``physnet_interfaces``, ``bridge_interfaces``: the uplinks.
'''),
    cfg.StrOpt(
        'state_dir',
        default='/var/lib/nova/numa-policy',
        help='''
Directory where the agent keeps what must outlive it: the affinity of
each NIC interrupt it steered, as it found it (``irq-affinity.json``),
so that a restarted agent can still give it back, and the live-migrated
guests whose arrival it has handled (``arrivals.json``), so that it
re-homes each arrival once. An acting agent also holds a lock there
(``agent.lock``, with its pid): a second agent started on the same host
exits with an error instead of carrying out every plan twice.

Not taken under ``sysfs_root``: it is the agent's own state, written by
the agent's user.

Possible values:

* A directory the agent's user may write; made if missing.

Related options:

* ``io_path_steering``.
'''),
    cfg.IntOpt(
        'hardware_sample_period',
        default=1000000,
        min=4096,
        max=1 << 27,
        help='''
Ops each CPU runs between two samples, with ``hardware_sampling``.

A smaller period samples more, costs more (an interrupt per sample) and
fills the per-CPU buffers sooner: each holds 16384 samples a period, and
the kernel drops and counts those beyond. It also measures small guests
more finely: the do-no-harm guard reads a guest's progress from its
samples, good to about one over the square root of their number per
period. The kernel rounds it down to
a multiple of 16 and refuses more than the CPU's counter holds
(1,048,560 ops without IBS's extended counter).

Possible values:

* 4096 to 134217728.
'''),
    cfg.StrOpt(
        'qemu_pid_dir',
        default='/run/libvirt/qemu',
        help='''
Directory where libvirt writes each running guest's ``<name>.pid``.

Taken under ``sysfs_root``. A pid is used only if that process's command
line carries the guest's uuid.

Possible values:

* ``/run/libvirt/qemu`` for ``qemu:///system``;
  ``$XDG_RUNTIME_DIR/libvirt/qemu/run`` for ``qemu:///session``.
'''),
]


register_opts, list_opts = base.group_functions(GROUP, OPTS)
