"""The lab host benchmarks' side inside the lab host (LabHost.call).

Runs as root in the lab host: the page mover's privileged calls are made
in-process (privsep's client mode off) in both benchmarks, so neither
measures the privsep daemon's socket round trip; the daemon's checks of
its caller's arguments (agent.privsep.trust) run and are measured.
"""

import glob
import os
import time

import libvirt

from agent.backend import observation
from agent import privsep
from agent.sensors import numamaps
from agent.service import cmd
from nova_numa_policy import conf as npconf
from tests.bench import pagemove

CONFIG = """\
[DEFAULT]
log_file = /tmp/bench-agent.log
[numa_policy_agent]
host = lab-bench
libvirt_uri = qemu:///system
physnet_interfaces = physnet1:eth0
page_migration = true
[numa_policy_privileged]
# In-process as root, on purpose (the daemon refuses root otherwise).
user = root
"""


NUMA_BALANCING = '/proc/sys/kernel/numa_balancing'


def pagemoves(size_mb, batch, rounds, passes):
    """Cross-node page moves of one process: C loop and Python path.

    With the kernel's NUMA balancing off while they run: its scanner
    marks the pages being moved (the page mover rightly leaves a marked
    page alone), and how many it marks in a pass depends on timing, not
    on either path.
    """
    previous = _read(NUMA_BALANCING)
    with open(NUMA_BALANCING, 'wb') as f:
        f.write(b'0')
    try:
        pages, c_times, py_times, passes = pagemove.measure(
            size_mb, batch, rounds, passes, route=(1, 0))
    finally:
        with open(NUMA_BALANCING, 'wb') as f:
            f.write(previous)
    return {'pages': pages, 'c': c_times, 'python': py_times,
            'passes': passes}


def _read(path):
    with open(path, 'rb') as f:
        return f.read()


def bare_reads(conn):
    """What one agent period reads, read with nothing around it.

    libvirt: the domain list, each domain's XML, vCPU placement and
    emulator pinning; the kernel: each guest's pidfile, command line and
    numa_maps, /proc/stat and each node's meminfo.
    """
    for dom in conn.listAllDomains(libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
        dom.UUIDString()
        dom.XMLDesc(0)
        dom.vcpus()
        dom.emulatorPinInfo(libvirt.VIR_DOMAIN_AFFECT_LIVE)
        pid = int(_read(f'/run/libvirt/qemu/{dom.name()}.pid'))
        _read(f'/proc/{pid}/cmdline')
        _read(f'/proc/{pid}/numa_maps')
    _read('/proc/stat')
    for meminfo in glob.glob('/sys/devices/system/node/node*/meminfo'):
        _read(meminfo)
    conn.getHostname()


def _agent():
    """The agent as numa-policy-agent builds it, privsep in-process."""
    path = '/tmp/bench-agent.conf'
    with open(path, 'w') as f:
        f.write(CONFIG)
    cmd.parse_args(['--config-file', path])
    privsep.pages.set_client_mode(False)
    return cmd.build_agent(npconf.CONF)


def agent_periods(rounds):
    """CPU seconds of the agent's period and of its bare reads, by round.

    The agent is built as numa-policy-agent builds it, loops included,
    and has run one period first (policies applied, caches filled): the
    rounds measure the steady state, where a period changes nothing.
    """
    agent = _agent()
    agent.run_once()
    conn = libvirt.open('qemu:///system')
    agent_times, floor_times = [], []
    try:
        for _ in range(rounds):
            start = time.process_time()
            bare_reads(conn)
            floor_times.append(time.process_time() - start)
            start = time.process_time()
            agent.run_once()
            agent_times.append(time.process_time() - start)
    finally:
        conn.close()
    memory_mb = sum(sum(i.memory_mb_per_node.values())
                    for i in agent.last_report.instances)
    return {'agent': agent_times, 'floor': floor_times,
            'instances': len(agent.last_report.instances),
            'memory_mb': memory_mb, 'pid': os.getpid()}


def set_thp(mode):
    """The lab kernel's transparent huge pages: 'never' or 'madvise'."""
    with open('/sys/kernel/mm/transparent_hugepage/enabled', 'w') as f:
        f.write(mode)


def _huge_share(pid):
    """Share of the process's resident anonymous memory in THP."""
    fields = {}
    with open(f'/proc/{pid}/smaps_rollup') as f:
        for line in f:
            name, _, rest = line.partition(':')
            if rest.strip().endswith('kB'):
                fields[name] = int(rest.split()[0])
    return fields.get('AnonHugePages', 0) / max(fields.get('Anonymous', 0), 1)


def observation_cost(rounds):
    """The agent's period with the numa_maps bound on and off, by round.

    Round by round in the same process: the bare reads, the agent's
    period with its bound (agent/backend/observation.py, its defaults),
    the same agent without it (every guest read every period), and the guests'
    numa_maps reads alone. CPU seconds (process time: the agent reads
    numa_maps in-process here). Also how many guests the bounded periods
    read, and the share of the guests' memory in huge pages.
    """
    agent = _agent()
    bounded = observation.NumaMapsBound()
    unbounded = observation.NumaMapsBound.unbounded()
    agent.backend.numa_maps_bound = bounded
    agent.run_once()
    agent.backend.numa_maps_bound = unbounded
    agent.run_once()
    conn = libvirt.open('qemu:///system')
    times = {'floor': [], 'bound': [], 'unbounded': [], 'numa_maps': []}
    reads = []
    pids = []
    try:
        for dom in conn.listAllDomains(
                libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
            pids.append(int(_read(f'/run/libvirt/qemu/{dom.name()}.pid')))
        for _ in range(rounds):
            start = time.process_time()
            bare_reads(conn)
            times['floor'].append(time.process_time() - start)
            agent.backend.numa_maps_bound = bounded
            start = time.process_time()
            agent.run_once()
            times['bound'].append(time.process_time() - start)
            reads.append(sum(1 for i in agent.last_report.instances
                             if bounded.age(i.uuid) == 0))
            agent.backend.numa_maps_bound = unbounded
            start = time.process_time()
            agent.run_once()
            times['unbounded'].append(time.process_time() - start)
            start = time.process_time()
            for pid in pids:
                numamaps.memory_mb_from_text(numamaps.read('/', pid))
            times['numa_maps'].append(time.process_time() - start)
    finally:
        conn.close()
    memory_mb = sum(sum(i.memory_mb_per_node.values())
                    for i in agent.last_report.instances)
    return {**times, 'reads': reads,
            'instances': len(agent.last_report.instances),
            'memory_mb': memory_mb,
            'huge': [_huge_share(pid) for pid in pids],
            'budget': bounded.budget, 'max_age': bounded.max_age}
