"""What the host tier runs inside a lab host, through ``LabHost.call``.

Each function runs in a child of the lab host's request server (as root
unless the call names a user) and returns JSON values. Readers return
the kernel's raw texts; parsing them is the host side's
(:mod:`tests.labhost.kernel`).
"""

import glob
import os
import shutil
import time

import libvirt

SYSTEM_URI = 'qemu:///system'
CGROUP_ROOT = '/sys/fs/cgroup'
PID_DIR = '/run/libvirt/qemu'


def read_file(path):
    """A file's text; None when it, or the process it is of, is gone."""
    try:
        with open(path) as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None


def cgroup_dir(pid):
    """The domain's cgroup directory: the parent of its emulator's."""
    for line in (read_file(f'/proc/{pid}/cgroup') or '').splitlines():
        if line.startswith('0::'):
            path = line[3:].strip()
            if os.path.basename(path) == 'emulator':
                path = os.path.dirname(path)
            return path
    return None


def kernel_view(pid, ram_bytes=None):
    """numa_maps, each thread's texts, the cgroups' cpuset.mems.

    A thread's texts are its name, status and sched (its NUMA hinting
    faults). ``ram_bytes``: the guest's memory; the start address of
    each mapping of exactly that size is returned too, so that the
    guest's RAM is told from QEMU's other memory by what it is, not by
    how much of it was touched.
    """
    threads = {}
    for task in glob.glob(f'/proc/{pid}/task/*'):
        comm, status = read_file(f'{task}/comm'), read_file(f'{task}/status')
        if comm is not None and status is not None:
            threads[os.path.basename(task)] = {
                'comm': comm, 'status': status,
                'sched': read_file(f'{task}/sched') or ''}
    mems, effective = {}, {}
    group = cgroup_dir(pid)
    if group is not None:
        base = CGROUP_ROOT + group
        for directory in [base] + sorted(glob.glob(f'{base}/*/')):
            name = os.path.relpath(directory, CGROUP_ROOT).rstrip('/')
            value = read_file(os.path.join(directory, 'cpuset.mems'))
            if value is not None:
                mems[name] = value
                effective[name] = read_file(
                    os.path.join(directory, 'cpuset.mems.effective')) or ''
    ram_starts = []
    if ram_bytes:
        for line in (read_file(f'/proc/{pid}/maps') or '').splitlines():
            start, _, end = line.split(' ', 1)[0].partition('-')
            if int(end, 16) - int(start, 16) == ram_bytes:
                ram_starts.append(int(start, 16))
    return {'pid': pid, 'numa_maps': read_file(f'/proc/{pid}/numa_maps') or '',
            'threads': threads, 'cpuset_mems': mems,
            'cpuset_mems_effective': effective, 'ram_starts': ram_starts}


def vmstat():
    """/proc/vmstat as {name: value}."""
    return {name: int(value) for name, value in
            (line.split() for line in read_file('/proc/vmstat').splitlines())}


def write_file(path, data_hex):
    """Write bytes (in hex) to a file anyone may use in the lab host."""
    with open(path, 'wb') as f:
        f.write(bytes.fromhex(data_hex))
    os.chmod(path, 0o666)


def capabilities():
    conn = libvirt.open(SYSTEM_URI)
    try:
        return conn.getCapabilities()
    finally:
        conn.close()


def start_domain(xml, paused=False):
    """Define and start a domain; its name, uuid and QEMU pid."""
    conn = libvirt.open(SYSTEM_URI)
    try:
        dom = conn.defineXML(xml)
        dom.createWithFlags(libvirt.VIR_DOMAIN_START_PAUSED if paused else 0)
        with open(f'{PID_DIR}/{dom.name()}.pid') as f:
            pid = int(f.read())
        return {'name': dom.name(), 'uuid': dom.UUIDString(), 'pid': pid}
    finally:
        conn.close()


def set_nodeset(name, nodeset):
    """A running domain's memory nodeset, as ``virsh numatune --live``.

    Through libvirt's API from this forked child: a virsh process costs
    seconds to start under emulation.
    """
    conn = libvirt.open(SYSTEM_URI)
    try:
        conn.lookupByName(name).setNumaParameters(
            {libvirt.VIR_DOMAIN_NUMA_NODESET: nodeset},
            libvirt.VIR_DOMAIN_AFFECT_LIVE)
    finally:
        conn.close()


def pin_vcpu(name, vcpu, cpu):
    """Pin a running domain's vCPU to one CPU, as ``virsh vcpupin --live``."""
    conn = libvirt.open(SYSTEM_URI)
    try:
        cpumap = tuple(index == cpu for index in range(conn.getCPUMap()[0]))
        conn.lookupByName(name).pinVcpuFlags(
            vcpu, cpumap, libvirt.VIR_DOMAIN_AFFECT_LIVE)
    finally:
        conn.close()


def domain_xml(name, live=True):
    conn = libvirt.open(SYSTEM_URI)
    try:
        flags = 0 if live else libvirt.VIR_DOMAIN_XML_INACTIVE
        return conn.lookupByName(name).XMLDesc(flags)
    finally:
        conn.close()


def remove_domains():
    """Destroy and undefine every domain; the names removed."""
    conn = libvirt.open(SYSTEM_URI)
    removed = []
    try:
        for dom in conn.listAllDomains():
            if dom.isActive():
                dom.destroy()
            dom.undefine()
            removed.append(dom.name())
    finally:
        conn.close()
    return removed


# -- the state a test leaves (tests/labhost/fixture.py) --------------------

# Processes the host tier starts in a lab host, by a word of their
# command line: none may outlive the test that started it.
TEST_PROCESSES = ('lab-busy', 'lab-hog', 'tests.labhost.sharer',
                  'privsep-helper', 'numa-policy-agent', 'sleep 600',
                  'irqbalance')
# What the agent leaves on a host; removed after each test.
AGENT_FILES = ('/etc/nova/nova.conf', '/etc/nova/numa-policy-agent.conf',
               '/tmp/numa-policy-uplinks.json',
               '/tmp/numa-policy-node-loads.json')
AGENT_LOGS = '/tmp/lab-agent-*.log'
# Directories the agent makes for its state.
AGENT_DIRS = ('/tmp/numa-policy-state',)
# Kernel settings tests change and must put back.
SETTINGS = ('/proc/sys/kernel/numa_balancing',
            '/sys/kernel/mm/numa/demotion_enabled')
# /tmp entries that come and go on their own: the request server's work
# directory and the privsep daemons' socket directories (tmp*).
SCRATCH_ENTRIES = ('lab-requests', 'root')


MEMORY_TIERS = '/sys/devices/virtual/memory_tiering'
NODES = '/sys/devices/system/node'


def memory_tiers():
    """What the kernel says of its memory tiers and nodes: raw texts.

    Each tier's nodelist by its directory's name (``memory_tier4``), the
    node masks with CPUs and with memory, each node's SLIT row and
    meminfo, and whether demotion to a lower tier is on.
    """
    tiers = {os.path.basename(path): read_file(os.path.join(path, 'nodelist'))
             for path in glob.glob(os.path.join(MEMORY_TIERS, 'memory_tier*'))}
    nodes = {os.path.basename(path)[len('node'):]: {
        'distance': read_file(os.path.join(path, 'distance')),
        'meminfo': read_file(os.path.join(path, 'meminfo'))}
        for path in glob.glob(os.path.join(NODES, 'node[0-9]*'))}
    return {'tiers': tiers, 'nodes': nodes,
            'has_cpu': read_file(os.path.join(NODES, 'has_cpu')),
            'has_memory': read_file(os.path.join(NODES, 'has_memory')),
            'demotion_enabled': read_file(
                '/sys/kernel/mm/numa/demotion_enabled')}


def settled_state():
    """What a test may not change for good: settings, links, /tmp."""
    return {'settings': {path: (read_file(path) or '').strip()
                         for path in SETTINGS},
            'links': sorted(os.listdir('/sys/class/net')),
            'tmp': sorted(_own_tmp_entries())}


def _own_tmp_entries():
    return {name for name in os.listdir('/tmp')
            if name not in SCRATCH_ENTRIES and not name.startswith('tmp')}


def _test_processes():
    """'pid: command line' of every test process still running."""
    found = []
    for path in glob.glob('/proc/[0-9]*/cmdline'):
        line = (read_file(path) or '').replace('\0', ' ').strip()
        if any(word in line for word in TEST_PROCESSES):
            found.append(f'{path.split("/")[2]}: {line[:120]}')
    return sorted(found)


def leftovers(expected, grace=10.0):
    """What the last test left behind, against ``expected``; [] if clean.

    ``expected`` is :func:`settled_state` read after boot. Processes get
    ``grace`` seconds to finish exiting (a privsep daemon ends once its
    agent has gone).
    """
    deadline = time.monotonic() + grace
    while _test_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    found = [f'process {p}' for p in _test_processes()]
    try:
        conn = libvirt.open(SYSTEM_URI)
    except libvirt.libvirtError as exc:
        found.append(f'libvirtd not answering: {exc}')
    else:
        try:
            found += [f'domain {d.name()}' for d in conn.listAllDomains()]
        finally:
            conn.close()
    found += [f'agent file {path}' for path in AGENT_FILES
              if os.path.exists(path)]
    now = settled_state()
    for path, value in expected['settings'].items():
        if now['settings'][path] != value:
            found.append(f'{path} is {now["settings"][path]!r}, not '
                         f'{value!r}')
    found += [f'network link {name}' for name in
              sorted(set(now['links']) - set(expected['links']))]
    found += [f'/tmp/{name}' for name in
              sorted(set(now['tmp']) - set(expected['tmp']))]
    return found


def tidy():
    """Remove every domain and the agent's files, as after a test."""
    removed = remove_domains()
    for path in (*AGENT_FILES, *glob.glob(AGENT_LOGS)):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    for directory in AGENT_DIRS:
        shutil.rmtree(directory, ignore_errors=True)
    return removed


def _agent(config_files):
    """(agent, log file): built as numa-policy-agent builds it."""
    from agent.service import cmd
    from nova_numa_policy import conf as npconf

    log_file = f'/tmp/lab-agent-{os.getpid()}.log'
    args = ['--log-file', log_file]
    for path in config_files:
        args += ['--config-file', path]
    cmd.parse_args(args)
    return cmd.build_agent(npconf.CONF), log_file


def run_agent(config_files, periods=1, pause=0.0):
    """The agent, built as numa-policy-agent builds it, for ``periods``.

    It reads ``config_files``, as the systemd unit has it read them.
    Returns each period's report (as the wire primitive), the loops'
    actions of each period and the agent's log.
    """
    from nova_numa_policy.objects import wire as report_wire

    agent, log_file = _agent(config_files)
    reports, actions = [], []
    for period in range(periods):
        if period:
            time.sleep(pause)
        report = agent.daemon_loop(once=True)
        reports.append(None if report is None
                       else report_wire.dump_report(report))
        actions.append([[loop, type(action).__name__, action.instance_uuid,
                         action.reason] for loop, action in
                        agent.last_loop_actions])
    # As the agent does when it stops: what it started (DAMON's kdamonds)
    # goes with it.
    agent.close()
    return {'reports': reports, 'loop_actions': actions,
            'log': read_file(log_file) or ''}


def silent_client_connection(seconds):
    """A libvirt connection after ``seconds`` of not reading its socket.

    The client registers libvirt's event loop, as nova-compute does, and
    never runs it: libvirtd's keepalive requests, if it sends any, go
    unanswered, as nova-compute's do while its event thread runs a
    lifecycle handler. ``{'open': whether a call still works, 'error':
    libvirt's message if not}``.
    """
    libvirt.virEventRegisterDefaultImpl()
    conn = libvirt.open(SYSTEM_URI)
    try:
        time.sleep(seconds)
        try:
            conn.getLibVersion()
            return {'open': True, 'error': None}
        except libvirt.libvirtError as exc:
            return {'open': False, 'error': str(exc)}
    finally:
        try:
            conn.close()
        except libvirt.libvirtError:
            pass


def _stop_libvirtd():
    import subprocess
    subprocess.run(['pkill', '-x', 'libvirtd'], check=False)
    while subprocess.run(['pidof', 'libvirtd'],
                         stdout=subprocess.DEVNULL).returncode == 0:
        time.sleep(0.1)


def _start_libvirtd():
    import subprocess
    subprocess.run(['sh', os.path.join(os.path.dirname(__file__),
                                       'libvirt-up.sh')], check=True)


def _restart_libvirtd():
    _stop_libvirtd()
    _start_libvirtd()


def _destroy(uuid):
    conn = libvirt.open(SYSTEM_URI)
    try:
        conn.lookupByUUIDString(uuid).destroy()
    finally:
        conn.close()


# What strikes before the plan's second step, and what (if anything) puts
# things right once the plan has ended.
FAULTS = {
    'none': (lambda uuid: None, None),
    # Back before the step: the agent reconnects at once.
    'libvirtd-restarted': (lambda uuid: _restart_libvirtd(), None),
    # Away until the plan is over: its undo waits for the next period.
    'libvirtd-stopped': (lambda uuid: _stop_libvirtd(), _start_libvirtd),
    'domain-destroyed': (_destroy, None),
}


def plan_with_fault(config_files, uuid, actions, fault, periods_after=1):
    """Carry out a plan of ``actions`` with ``fault`` before step 2.

    ``actions`` are (kind, fields) pairs of
    nova_numa_policy.contracts.backend
    actions. The plan goes through the agent's executor (its carry_out
    step, as strategy 'lab'), then the agent runs ``periods_after``
    periods (which finish what the plan left). Returns how the plan
    ended, what the agent says of the guest after its periods, and the
    agent's log.
    """
    from nova_numa_policy.contracts import backend

    agent, log_file = _agent(config_files)
    snapshot = agent.observe()
    steps = tuple(getattr(backend, kind)(instance_uuid=uuid,
                                         reason='lab plan', **fields)
                  for kind, fields in actions)
    strike, mend = FAULTS[fault]
    real_apply = agent.backend.apply
    calls = []

    def apply(action):
        calls.append(action)
        if len(calls) == 2:
            strike(uuid)
        return real_apply(action)

    agent.backend.apply = apply
    try:
        agent.carry_out(snapshot, [('lab', step) for step in steps])
    finally:
        agent.backend.apply = real_apply
    ending = agent.endings.get(uuid)
    pending = len(agent.pending_undo)
    if mend is not None:
        mend()
    after = []
    for _ in range(periods_after):
        # The connection's back-off after the failure, as the daemon waits.
        time.sleep(agent.backend._connection.retry_in)
        agent.daemon_loop(once=True)
        after.append(agent.endings.get(uuid))
    return {'ending': ending, 'pending': pending, 'after': after,
            'calls': len(calls), 'log': read_file(log_file) or ''}


# The privsep context of each module's entry points.
CONTEXTS = {'pagemover': 'pages', 'monitorgroups': 'monitor',
            'hwsampling': 'sampler'}


def privsep_probes(config_files, probes, helper_command=None,
                   module='pagemover'):
    """Call a privileged daemon's entry points with ``probes``.

    The daemon starts as the agent starts it: through sudo and the
    deployed rule, or through ``helper_command`` (as oslo.rootwrap would
    let any privsep-helper line through). ``module``: ``pagemover`` (the
    page daemon), ``monitorgroups`` (the monitoring daemon) or
    ``hwsampling`` (the sampling daemon).
    ``probes`` are (entry point name, args) pairs; returns, for each,
    'served' and what it returned, or the exception's class name and
    message.
    """
    import importlib

    from oslo_config import cfg

    from agent import privsep
    from agent.service import cmd

    entry_points = importlib.import_module(f'agent.privsep.{module}')
    context = CONTEXTS[module]
    args = []
    for path in config_files:
        args += ['--config-file', path]
    cmd.parse_args(args)
    if helper_command:
        cfg.CONF.set_override(
            'helper_command', helper_command,
            group=getattr(privsep, context).cfg_section)
    answers = []
    for name, call_args in probes:
        try:
            returned = getattr(entry_points, name)(*call_args)
        except Exception as exc:
            answers.append([type(exc).__name__, str(exc)])
        else:
            answers.append(['served', repr(returned)])
    return {'answers': answers, 'daemons': _privsep_daemons(context)}


def _privsep_daemons(context='pages'):
    """The status text of each running daemon of an agent's context."""
    found = []
    for cmdline in glob.glob('/proc/[0-9]*/cmdline'):
        text = read_file(cmdline) or ''
        if f'privsep_context\0agent.privsep.{context}' in text:
            status = read_file(os.path.join(os.path.dirname(cmdline),
                                            'status'))
            if status:
                found.append(status)
    return found


def _counts_text(counts):
    """{tid: {node: samples}} with text keys, as JSON carries it."""
    return {str(tid): {str(node): n for node, n in per_node.items()}
            for tid, per_node in counts.items()}


# A process that writes one word of its own page, a thousand times a
# second, after printing the word's address.
_PAGE_WRITER = """
import ctypes, mmap, time
page = mmap.mmap(-1, mmap.PAGESIZE)
word = ctypes.c_long.from_buffer(page)
print(ctypes.addressof(word), flush=True)
while True:
    word.value += 1
    time.sleep(0.001)
"""


def sample_writes(pid, tid, address, seconds):
    """A thread's writes to one address, sampled by a real perf event.

    A hardware breakpoint (write, 8 bytes) on thread ``tid`` of process
    ``pid``, every write sampled with its physical address, read through
    the agent's ring buffer and counted per node by the agent's sampling
    (:class:`agent.privsep.hwsampling.HostSampling`). Also the kernel's own
    answer for the page's node: move_pages(2) asked, moving nothing.
    """
    import array

    from agent.privsep import hwsampling
    from agent.privsep import pagemover
    from agent.sensors import perfevents
    from agent.sensors import perfsamples

    sample_type = (perfsamples.SAMPLE_TID | perfsamples.SAMPLE_ADDR
                   | perfsamples.SAMPLE_PHYS_ADDR)
    event = perfevents.attr(
        perfevents.TYPE_BREAKPOINT, sample_period=1,
        sample_type=sample_type, bp_type=2, bp_addr=address, bp_len=8)
    ring = perfevents.Ring(perfevents.open_event(event, pid=tid), 8)
    sampling = hwsampling.HostSampling([ring], hwsampling.node_ranges('/'),
                                       sample_type)
    try:
        time.sleep(seconds)
        counts, (_, lost) = sampling.counts()
    finally:
        sampling.close()
    _, status = pagemover._move_pages(pid, array.array('Q', [address]),
                                      None, 0)
    return {'counts': _counts_text(counts), 'lost': lost,
            'kernel_node': status[0]}


def _ram_window(pid, ram_bytes, offset_mb, size_mb):
    """The page addresses of part of a guest's RAM, as an array('Q')."""
    import array

    start = next(s for s in kernel_view(pid, ram_bytes)['ram_starts'])
    first = start + (offset_mb << 20)
    return array.array('Q', range(first, first + (size_mb << 20), 4096))


def ram_nodes(pid, ram_bytes, offset_mb, size_mb):
    """{node: pages} of part of a guest's RAM, as move_pages(2) says.

    The kernel's answer page by page (a query moves nothing), where
    numa_maps only counts a whole mapping's pages.
    """
    from agent.privsep import pagemover

    _, status = pagemover._move_pages(
        pid, _ram_window(pid, ram_bytes, offset_mb, size_mb), None, 0)
    counts = {}
    for node in status:
        counts[node] = counts.get(node, 0) + 1
    return {str(node): pages for node, pages in counts.items()}


def move_ram(pid, ram_bytes, offset_mb, size_mb, node):
    """Move part of a guest's RAM to ``node`` (move_pages(2), as root).

    Returns what :func:`ram_nodes` says of it after.
    """
    from agent.privsep import pagemover

    pagemover._move_pages(pid, _ram_window(pid, ram_bytes, offset_mb,
                                           size_mb),
                          node, pagemover.MPOL_MF_MOVE_ALL)
    return ram_nodes(pid, ram_bytes, offset_mb, size_mb)


def soft_dirty_probe():
    """What the agent's probe of soft-dirty bits says in this process."""
    from agent.backend import pagetemps

    return pagetemps.kernel_tracks_writes()


def _move_page_to(pid, page, node, timeout=10.0):
    """move_pages(2) until the kernel says the page is on ``node``.

    The kernel refuses, for the moment, a page it is busy with (locked
    while written, or marked by its NUMA balancing): once, in CI, the
    page stayed on node 1. The test still reads the page's node after
    sampling and fails if it is not ``node``.
    """
    from agent.privsep import pagemover

    deadline = time.monotonic() + timeout
    while True:
        pagemover._move_pages(pid, page, node, pagemover.MPOL_MF_MOVE_ALL)
        _, status = pagemover._move_pages(pid, page, None, 0)
        if status[0] == node or time.monotonic() > deadline:
            return
        time.sleep(0.1)


def sampled_page_moves(seconds, nodes=(1, 0)):
    """A page written by a process of its own, sampled on each of ``nodes``.

    The page is moved by move_pages(2) to each node in turn, then its
    writes sampled for ``seconds`` (:func:`sample_writes`). Returns the
    writer's pid and, per node, what was sampled and what the kernel said.
    """
    import array
    import subprocess
    import sys

    writer = subprocess.Popen([sys.executable, '-c', _PAGE_WRITER],
                              stdout=subprocess.PIPE)
    try:
        address = int(writer.stdout.readline())
        found = []
        for node in nodes:
            _move_page_to(writer.pid, array.array('Q', [address]), node)
            found.append(sample_writes(writer.pid, writer.pid, address,
                                       seconds))
        return {'pid': writer.pid, 'moves': found}
    finally:
        writer.kill()
        writer.wait()


def cpu_wide_samples(seconds):
    """Threads sampled by one software event per online CPU, as IBS is.

    The agent's per-CPU events and rings
    (:func:`agent.privsep.hwsampling.open_per_cpu`) on the CPU clock,
    which every CPU has: {tid: samples}.
    """
    from agent.privsep import hwsampling
    from agent.sensors import perfevents
    from agent.sensors import perfsamples
    from agent.sensors import sysfs

    event = perfevents.attr(perfevents.TYPE_SOFTWARE, config=0,
                            sample_period=1000000,
                            sample_type=perfsamples.SAMPLE_TID)
    rings = hwsampling.open_per_cpu(event, sysfs.online_cpus('/'))
    found = {}
    try:
        time.sleep(seconds)
        for ring in rings:
            samples, _ = perfsamples.decode(ring.drain(),
                                            perfsamples.SAMPLE_TID)
            for sample in samples:
                if sample.tid:  # 0: a CPU's idle task, no one's thread
                    found[str(sample.tid)] = found.get(str(sample.tid),
                                                       0) + 1
    finally:
        for ring in rings:
            ring.close()
    return {'samples': found, 'rings': len(rings)}


# -- SR-IOV (the sriov-nodes lab host's igb NIC) -------------------------

PCI_DEVICES = '/sys/bus/pci/devices'
SRIOV_DRIVER = '/sys/bus/pci/drivers/igb'
QEMU_CONF = '/etc/libvirt/qemu.conf'
# Lab departures for VFIO under emulation (doc/source/labhost.rst): the
# emulated IOMMU is started without interrupt remapping, which VFIO
# refuses unless told;
# and under the lab host's chroot libvirt's private /dev for QEMU lacked
# the VFIO group's node, so QEMU uses the lab host's /dev.
UNSAFE_INTERRUPTS = ('/sys/module/vfio_iommu_type1/parameters/'
                     'allow_unsafe_interrupts')
NO_NAMESPACES = 'namespaces = []  # lab host: VFIO under a chroot'


def _sh(*args):
    import subprocess
    return subprocess.run(args, check=True, capture_output=True,
                          text=True).stdout


def prepare_sriov(vfs):
    """The NIC's PF up with ``vfs`` VFs, ready for VFIO; its addresses.

    Idempotent: the lab host is shared by the tests of a process.
    """
    _sh('modprobe', 'igb')
    _sh('modprobe', 'vfio_iommu_type1')
    with open(UNSAFE_INTERRUPTS, 'w') as f:
        f.write('Y')
    _sh('modprobe', 'vfio-pci')
    (pf_address,) = [name for name in os.listdir(SRIOV_DRIVER)
                     if name.count(':') == 2]
    device = os.path.join(PCI_DEVICES, pf_address)
    (pf,) = os.listdir(os.path.join(device, 'net'))
    _sh('ip', 'link', 'set', pf, 'up')
    if int(read_file(os.path.join(device, 'sriov_numvfs'))) != vfs:
        with open(os.path.join(device, 'sriov_numvfs'), 'w') as f:
            f.write('0')
        with open(os.path.join(device, 'sriov_numvfs'), 'w') as f:
            f.write(str(vfs))
    if NO_NAMESPACES not in (read_file(QEMU_CONF) or ''):
        with open(QEMU_CONF, 'a') as f:
            f.write(NO_NAMESPACES + '\n')
        _restart_libvirtd()
    return {'pf': pf, 'pf_address': pf_address}


def sriov_view(pf_address):
    """A PF's VFs: as the kernel links and reports them, as the agent reads.

    The kernel's report is iproute2's (``ip -j -s link``), a reader other
    than the agent's own rtnetlink request.
    """
    import json

    from agent.sensors import vfstats

    device = os.path.join(PCI_DEVICES, pf_address)
    (pf,) = os.listdir(os.path.join(device, 'net'))
    links = {name[len('virtfn'):]: os.path.basename(
        os.readlink(os.path.join(device, name)))
        for name in os.listdir(device) if name.startswith('virtfn')}
    (link,) = json.loads(_sh('ip', '-j', '-s', 'link', 'show', 'dev', pf))
    return {'pf': pf, 'links': links,
            'iproute2': link.get('vfinfo_list', []),
            'mapped': {address: vfstats.vf_of('/', address)
                       for address in [*links.values(), pf_address]},
            'agent': vfstats.query(pf)}


def sriov_uplinks(device_specs):
    """What the agent makes of nova's ``[pci] device_spec`` values here.

    The agent's own matching against this kernel's sysfs: (physnet, PF
    address) pairs.
    """
    from agent.sensors import discovery

    return [list(pair) for pair in discovery.sriov_uplinks(device_specs,
                                                           '/')]


def observe_with_vf_reads(uuid):
    """One observation by the agent's libvirt backend, its VF reads kept.

    The PFs it asked the kernel about (rtnetlink, as the agent does),
    their answers, and what it observed of guest ``uuid``.
    """
    from agent.backend import connection
    from agent.backend import libvirt_backend
    from agent.backend import settings
    from agent.sensors import vfstats

    asked = {}

    def recorded(pf):
        asked[pf] = vfstats.query(pf)
        return asked[pf]

    backend = libvirt_backend.LibvirtBackend(
        connection.Connection(SYSTEM_URI),
        helpers=settings.Helpers(vf_traffic=recorded))
    (inst,) = [i for i in backend.observe().instances if i.uuid == uuid]
    return {'asked': asked, 'io_rate': inst.io_rate,
            'hands_off_reason': inst.hands_off_reason}


# -- the I/O path (tests/host/test_iopath.py) ------------------------------

IRQBALANCE_RUN_DIR = '/run/irqbalance'


def nic_interrupts(nic):
    """The raw texts of ``nic``'s interrupt vectors, as the kernel has them.

    The vectors are the MSI-X ones of the PCI function under the net
    device (a virtio NIC's ``device`` is the virtio device; its parent is
    the function), each with its affinity, effective affinity and
    ``/proc/interrupts`` line.
    """
    device = os.path.realpath(f'/sys/class/net/{nic}/device')
    function = device if os.path.isdir(f'{device}/msi_irqs') \
        else os.path.dirname(device)
    lines = {line.split(':', 1)[0].strip(): line
             for line in read_file('/proc/interrupts').splitlines()[1:]}
    irqs = {}
    for irq in sorted(os.listdir(f'{function}/msi_irqs'), key=int):
        irqs[irq] = {
            'affinity': read_file(f'/proc/irq/{irq}/smp_affinity_list') or '',
            'effective': read_file(
                f'/proc/irq/{irq}/effective_affinity_list') or '',
            'line': lines.get(irq, '')}
    return {'cpus': read_file('/proc/interrupts').splitlines()[0],
            'irqs': irqs}


def set_irq_affinity(irq, cpus):
    """Route ``irq`` to ``cpus`` ('0-1'), as an operator or boot would."""
    with open(f'/proc/irq/{irq}/smp_affinity_list', 'w') as f:
        f.write(cpus)


def start_irqbalance(command, interval=1):
    """irqbalance as its systemd unit runs it, rebalancing every second.

    ``command`` is the program (:mod:`tests.labhost.tools`). Its run
    directory first, which the unit's RuntimeDirectory makes: without it
    irqbalance falls back to an abstract socket.
    """
    import subprocess
    os.makedirs(IRQBALANCE_RUN_DIR, exist_ok=True)
    process = subprocess.Popen(
        [command, '--foreground', f'--interval={interval}'],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    socket_path = f'{IRQBALANCE_RUN_DIR}/irqbalance{process.pid}.sock'
    deadline = time.monotonic() + 30
    while not os.path.exists(socket_path):
        if time.monotonic() > deadline or process.poll() is not None:
            raise RuntimeError(f'irqbalance gave no socket at {socket_path}')
        time.sleep(0.1)
    return {'pid': process.pid, 'socket': socket_path}


def irqbalance_says(socket_path, command):
    """irqbalance's answer to one command on its socket (root only)."""
    import socket
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(socket_path)
        sock.sendall(command.encode())
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return b''.join(chunks).decode()
            chunks.append(chunk)


def stop_irqbalance():
    import subprocess
    subprocess.run(['pkill', '-x', 'irqbalance'], check=False)
    while subprocess.run(['pidof', 'irqbalance'],
                         stdout=subprocess.DEVNULL).returncode == 0:
        time.sleep(0.1)
