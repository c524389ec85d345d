"""Servers of each ``hw:numa_policy`` value, booted through nova's API.

One cloud for the test process (tests/cloud/cloud.py, ``shared``): the
control plane and two compute lab hosts, each with nova-compute, our
driver and our agent. For each of the six values a flavor, and a
server booted from the tiny raw image; once it is ACTIVE, in the lab
host nova placed it on:

* the domain XML our driver wrote (libvirt's live XML) carries the
  memory mode and CPUs the value asks for;
* the kernel's view of its QEMU process (numa_maps, the threads'
  Cpus_allowed_list, the cgroups' cpuset.mems) follows that XML,
  checked as the host tier checks it (tests/host/base.py);
* our REST API, with a keystone token, shows the server where nova put
  it and the policy applied; and its explanation, asked just before the
  server was created, passed the host nova chose (asked afterwards, the
  answer is about a host with more guests on it).

And a port hot-plugged into the running NIC server through nova's
``os-interface``: bound, wired and in the live XML, the guest still on
the NIC's node.
"""

import json
import os
import types
import urllib.parse
import uuid as uuid_mod
from xml.etree import ElementTree

from testtools import content

from nova_numa_policy.contracts import policy
from nova_numa_policy.decisions import enforcement
from tests import base as test_base
from tests.cloud import cloud as cloud_mod
from tests.cloud import endpoints
from tests.cloud import horizon
from tests.cloud import layout as lay
from tests.cloud import resources
from tests.host import base
from tests.labhost import kernel

# As many vCPUs as a lab host's node has CPUs: node-sized guests, at the
# scheduler's default load threshold (doc/source/scheduler.rst, "The
# load model").
VCPUS = 2
MEMORY_MB = 64
DISK_GB = 1
BOOT_TIMEOUT = 900
# The key of the home server with hw:numa_nic_locality=required.
NIC_REQUIRED = 'home+nic-required'
REPORT_TIMEOUT = 180
# An attached port wired by the compute's emulated Open vSwitch agent
# (seen: seven ports' plugged events over three minutes).
ATTACH_TIMEOUT = 300
# Reads of a guest's tune around the kernel's view before giving up on
# one that holds across it (our agent moves guests as loads change).
TUNED_VIEW_READS = 4
# How far our API's memory of a guest on a node may be from the kernel's
# count: the report rounds down to whole MiB, and QEMU's memory moves a
# little between the agent's read and the test's.
MEMORY_SLACK_MIB = 2
MEMORY_SLACK_SHARE = 0.05
# What each value's boot-time XML holds on a two-node host with nothing
# else on it: the memory modes allowed (None: no <numatune>, the
# kernel's first-touch).
BOOT_MODES = {
    'first-touch': (None, 'restrictive'),
    'first-touch+carrefour': (None, 'restrictive'),
    'interleave': ('interleave',),
    'interleave+carrefour': ('interleave',),
    'home': ('strict',),
    'auto': (None,),
}
# What the agent reports applied for each value once the guest runs.
APPLIED = {
    'first-touch': {'first-touch'},
    'first-touch+carrefour': {'first-touch', 'first-touch+carrefour'},
    'interleave': {'interleave'},
    'interleave+carrefour': {'interleave', 'interleave+carrefour'},
    'home': {'home'},
    'auto': None,
}

CLOUD = None


def setUpModule():
    global CLOUD
    CLOUD = cloud_mod.for_test_module()


def _nodeset(text):
    return kernel.cpulist(text or '')


def domain_memory_mb(xml):
    """The domain's ``<memory>`` in MiB."""
    found = ElementTree.fromstring(xml).find('./memory')
    scale = {'KiB': 1 / 1024, 'MiB': 1, 'GiB': 1024}
    return int(int(found.text) * scale[found.get('unit', 'KiB')])


def domain_iothreads(xml):
    """The domain's ``<iothreads>`` count (nova 34 gives each guest one)."""
    found = ElementTree.fromstring(xml).find('./iothreads')
    return int(found.text) if found is not None else 0


def domain_tune(xml):
    """The MemoryTune a domain's XML holds now.

    ``<numatune><memory>`` (mode, nodeset); the emulator's CPUs,
    ``<cputune><emulatorpin>`` where the agent pinned it, else ``<vcpu
    cpuset>`` (the driver's, at boot, for vCPUs and emulator alike); and
    ``<cputune><vcpupin>``. Live XML: after the agent moved a guest, its
    pins hold where ``<vcpu cpuset>`` still says where it booted.
    """
    root = ElementTree.fromstring(xml)
    memory = root.find('./numatune/memory')
    mode = nodes = None
    if memory is not None:
        mode = memory.get('mode', 'strict')
        nodes = _nodeset(memory.get('nodeset'))
    vcpu = root.find('./vcpu')
    emulator = root.find('./cputune/emulatorpin')
    if emulator is not None:
        cpus = _nodeset(emulator.get('cpuset'))
    else:
        cpus = (_nodeset(vcpu.get('cpuset')) if vcpu is not None
                else frozenset())
    return enforcement.MemoryTune(mode, nodes or frozenset(), cpus,
                                  _vcpu_pins(root, vcpu))


def _vcpu_pins(root, vcpu):
    """Each vCPU's CPUs, by index, where the agent pinned any; else ().

    The agent pins vCPUs one at a time (a loop may move one of two): a
    vCPU without a ``<vcpupin>`` of its own runs where ``<vcpu cpuset>``
    says, anywhere (an empty set) where that says nothing.
    """
    pinned = {int(pin.get('vcpu')): _nodeset(pin.get('cpuset'))
              for pin in root.findall('./cputune/vcpupin')}
    if not pinned:
        return ()
    count = int(vcpu.text) if vcpu is not None else max(pinned) + 1
    placed = (_nodeset(vcpu.get('cpuset')) if vcpu is not None
              and vcpu.get('cpuset') else frozenset())
    return tuple(pinned.get(index, placed) for index in range(count))


class Placed:
    """A server as nova placed it, and its QEMU domain there."""

    def __init__(self, server, compute, domain):
        self.server = server
        self.uuid = server['id']
        self.host = server['OS-EXT-SRV-ATTR:host']
        self.name = server['OS-EXT-SRV-ATTR:instance_name']
        self.compute = compute
        self.lab = compute.lab
        self.xml = domain['xml']
        self.pid = domain['pid']
        self.memory_mb = domain_memory_mb(self.xml)

    def read_xml(self):
        """The domain's live XML now (our agent may have changed it)."""
        self.xml = self.lab.call('tests.cloud.inlab:domain', self.name)['xml']
        return self.xml


class ServersTest(test_base.TestCase):
    """Each value on a server booted through nova's API."""

    # The host tier's checks of a QEMU process against a tune read the
    # shape of the host the guest runs on (placed() sets it).
    TOPOLOGY = cloud_mod.COMPUTES[0][1]
    assert_kernel_follows = base.LabTestCase.assert_kernel_follows
    assert_interleaved = base.LabTestCase.assert_interleaved
    node_cpus = base.LabTestCase.node_cpus
    eventually = base.LabTestCase.eventually
    settled_view = base.LabTestCase.settled_view

    servers = {}
    # Our API's explanation for each value, asked just before its boot.
    explained = {}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if CLOUD is None:
            raise cls.skipException('no cloud')
        cls.nova = CLOUD.nova()
        session = CLOUD.session()
        cls.workdir = CLOUD.workdir
        cls.session = session
        image_path = resources.make_raw_image(
            os.path.join(cls.workdir, 'raw.img'))
        cls.image = resources.upload_image(session, image_path)
        cls.network = resources.provider_network(session)
        cls.flavors = {
            value: cls.nova.create_flavor(
                f'numa-{value.replace("+", "-")}-{uuid_mod.uuid4().hex[:6]}',
                VCPUS, MEMORY_MB, DISK_GB, {policy.POLICY_KEY: value})
            for value in policy.POLICY_VALUES}
        cls.networks = [{'uuid': cls.network['id']}]
        created = {}
        # The NIC's server first: its node must have room for it, and
        # every running guest adds to its node's load.
        cls.explained[NIC_REQUIRED] = cls.explanation(
            'home', nic_locality='required')
        created[NIC_REQUIRED] = cls.nova.create_server(
            'numa-home-nic', cls._nic_flavor()['id'], cls.image['id'],
            cls.networks)
        # The policy servers have no port: neither the policy nor its
        # checks read one, and each port waits on the lab's emulated
        # Open vSwitch agent, which wires them one after another (seen:
        # seven ports' plugged events spread over three minutes). The
        # port path is the NIC server's, the migrations' and tempest's.
        for value in policy.POLICY_VALUES:
            cls.explained[value] = cls.explanation(value)
            created[value] = cls.nova.create_server(
                f'numa-{value.replace("+", "-")}',
                cls.flavors[value]['id'], cls.image['id'], 'none')
        for value, server in created.items():
            cls.servers[value] = cls.nova.wait_server(
                server['id'], ['ACTIVE'], BOOT_TIMEOUT)

    @classmethod
    def tearDownClass(cls):
        if CLOUD is not None and CLOUD.computes:
            for server in cls.servers.values():
                cls.nova.delete_server(server['id'])
            CLOUD.wait_all_deleted(
                cls.nova, [server['id'] for server in cls.servers.values()])
        super().tearDownClass()

    # -- reading -----------------------------------------------------------

    def placed(self, value):
        server = self.servers[value]
        self.addDetail('server', content.text_content(
            json.dumps(server, indent=1, sort_keys=True)))
        CLOUD.assert_active(self, server)
        compute = CLOUD.computes[server['OS-EXT-SRV-ATTR:host']]
        # The computes differ: the checks read the chosen one's shape.
        self.TOPOLOGY = compute.topology
        domain = compute.lab.call('tests.cloud.inlab:domain',
                                  server['OS-EXT-SRV-ATTR:instance_name'])
        self.assertIsNotNone(domain, 'no libvirt domain for the server')
        self.assertTrue(domain['active'])
        self.assertEqual(server['id'], domain['uuid'])
        placed = Placed(server, compute, domain)
        self.addDetail('domain-xml', content.text_content(placed.xml))
        return placed

    def view(self, guest):
        # The guest's RAM told by its size (the flavor's, or a resize's).
        return kernel.guest_view(guest.lab.call(
            'tests.labhost.inside:kernel_view', guest.pid,
            ram_bytes=guest.memory_mb * 1024 * 1024))

    def collector_instance(self, guest):
        """Our REST API's record of the server, once the agent sent it."""
        def read():
            return CLOUD.numa_api(f'/v1/instances/{guest.uuid}')

        status, body = resources.wait_for(
            read, lambda answer: answer[0] == 200,
            f'instance {guest.uuid} in the collector', REPORT_TIMEOUT,
            interval=3)
        return body['instance']

    @classmethod
    def explanation(cls, value, nic_locality=None):
        """Our API's explanation of every host for this value's flavor."""
        specs = {policy.POLICY_KEY: value}
        if nic_locality:
            specs[policy.NIC_LOCALITY_KEY] = nic_locality
        query = urllib.parse.urlencode({
            'vcpus': VCPUS, 'memory_mb': MEMORY_MB,
            'extra_specs': json.dumps(specs)})
        status, body = CLOUD.numa_api(f'/v1/explain?{query}')
        if status != 200:
            raise AssertionError(f'explain: {status} {body}')
        return body

    @classmethod
    def _nic_flavor(cls):
        return cls.nova.create_flavor(
            f'numa-home-nic-{uuid_mod.uuid4().hex[:6]}', VCPUS, MEMORY_MB,
            DISK_GB, {policy.POLICY_KEY: 'home',
                      policy.NIC_LOCALITY_KEY: 'required'})

    # -- the check ---------------------------------------------------------

    def tuned_view(self, guest):
        """The guest's tune and the kernel's settled view, read as one.

        Our agent's loops move guests as loads change: while the seven
        servers boot, vnuioa and brm pin vCPUs and Carrefour moves pages
        (seen in the cloud's action records). A tune read before such a
        move and a kernel view read after it disagree, so the XML is
        read again after the view, and the pair counts only when the
        tune held across it.
        """
        tunes = [domain_tune(guest.xml)]
        for _ in range(TUNED_VIEW_READS):
            view = self.settled_view(guest)
            tunes.append(domain_tune(guest.read_xml()))
            if tunes[-1] == tunes[-2]:
                self.addDetail('tune', content.text_content(repr(tunes[-1])))
                self.addDetail('domain-xml', content.text_content(guest.xml))
                return tunes[-1], view
        self.fail(f'the domain changed during each of {TUNED_VIEW_READS} '
                  f'reads of the kernel: {tunes}')

    def assert_memory_is_the_kernels(self, guest):
        """Our API's memory per node of the guest is the kernel's count.

        Our agent reads the QEMU process's numa_maps (through its
        privileged helper: the process is not nova's to read) and sends
        the sum per node; the collector keeps its last report. The test
        reads the same file and sums it its own way
        (:func:`tests.labhost.kernel.memory_mib_per_node`); every mapping
        counts, the libraries' pages too, wherever the page cache holds
        them, so the guest's RAM alone is not what is compared.
        """
        def read():
            reported = {int(node): mib for node, mib in
                        self.collector_instance(guest)[
                            'memory_mb_per_node'].items()}
            counted = kernel.memory_mib_per_node(self.view(guest).numa_maps)
            return reported, counted

        def agree(pair):
            reported, counted = pair
            return sum(counted.values()) > 0 and all(
                abs(reported.get(node, 0) - counted.get(node, 0))
                <= MEMORY_SLACK_MIB + MEMORY_SLACK_SHARE * counted.get(node, 0)
                for node in set(reported) | set(counted))

        reported, counted = self.eventually(
            read, agree, "our API's memory per node within "
            f"{MEMORY_SLACK_MIB} MiB and {MEMORY_SLACK_SHARE:.0%} of the "
            "kernel's numa_maps", REPORT_TIMEOUT)
        self.addDetail('memory-per-node', content.text_content(
            f'reported {reported}\nkernel {counted}'))

    def check(self, value):
        guest = self.placed(value)
        tune, view = self.tuned_view(guest)
        # What the value asks for, in the XML our driver wrote.
        self.assertIn(tune.mode, BOOT_MODES[value])
        if tune.mode == 'interleave':
            self.assertEqual(frozenset(range(self.TOPOLOGY.nodes)),
                             tune.nodes)
        if tune.mode == 'strict':
            # home: the fewest nodes holding the vCPUs, its CPUs theirs.
            self.assertEqual(1, len(tune.nodes))
            self.assertEqual(self.node_cpus(*tune.nodes), tune.cpus)
        # What the kernel does with it.
        self.addDetail('kernel-view', content.text_content(
            describe(view)))
        # The computes back guest RAM with base pages (compute.py,
        # THP_ENABLED): interleaved page by page.
        self.assert_kernel_follows(view, tune, domain_iothreads(guest.xml))
        # Where the collector says it went, and why.
        record = self.collector_instance(guest)
        self.addDetail('collector-instance', content.text_content(
            json.dumps(record, indent=1, sort_keys=True)))
        self.assertEqual(guest.host, record['host'])
        self.assertEqual(value, record['requested_policy'])
        if APPLIED[value] is not None:
            self.assertIn(record['applied_policy'], APPLIED[value])
        if value == 'auto' or record['applied_policy'] == value:
            self.assertTrue(record['policy_applied'], record)
        self.assert_memory_is_the_kernels(guest)
        explained = self.explained[value]
        self.addDetail('explain-before-boot', content.text_content(
            json.dumps(explained, indent=1, sort_keys=True)))
        hosts = {h['host']: h for h in explained['hosts']}
        self.assertTrue(hosts[guest.host]['passed'], hosts[guest.host])
        return guest, view, record

    def test_network_of_the_servers(self):
        """The NIC server's port on physnet1, bound by its compute's agent.

        ML2's Open vSwitch mechanism binds a port on a host whose agent
        maps the port's physnet to a bridge: ``ovs`` on the server's own
        compute. The policy servers asked for no network: no port.
        """
        ports = self.session.get(
            f'{endpoints.url("neutron")}/v2.0/ports',
            params={'network_id': self.network['id']}).json()['ports']
        self.addDetail('ports', content.text_content(
            json.dumps(ports, indent=1, sort_keys=True)))
        bound = {p['device_id']: (p['binding:host_id'], p['binding:vif_type'])
                 for p in ports}
        self.assertEqual(lay.PHYSNET,
                         self.network['provider:physical_network'])
        for value, server in self.servers.items():
            expected = ((server['OS-EXT-SRV-ATTR:host'], 'ovs')
                        if value == NIC_REQUIRED else None)
            self.assertEqual(expected, bound.get(server['id']), value)

    def test_interface_attached_to_the_nic_server_while_it_runs(self):
        """A second port on physnet1, hot-plugged through nova's API.

        nova's ``os-interface`` creates the port and its compute binds
        it and plugs it into the running domain (nova's libvirt code
        under our driver); the compute's Open vSwitch agent wires it
        (ACTIVE); the live domain XML holds an interface of its MAC;
        and the guest stays where its policy put it, as the kernel
        shows, on the NIC's node. No detach: a hot unplug waits for the
        guest to release the device (ACPI), and the tiny image runs no
        OS to do it; the port goes with the server at the class's end.
        tempest's interface tests log in to the guest
        (``run_validation``) and skip in this cloud.
        """
        guest = self.placed(NIC_REQUIRED)
        answer = self.nova.post(
            f'/servers/{guest.uuid}/os-interface',
            {'interfaceAttachment': {'net_id': self.network['id']}},
            raise_exc=False)
        # What nova answered and what the compute logged, not only
        # keystoneauth's "Unrecognized schema" of a 500.
        self.assertEqual(200, answer.status_code, '\n'.join(
            [answer.text[:500]] + CLOUD.compute_errors(guest.uuid)))
        attached = answer.json()['interfaceAttachment']
        self.addDetail('attached', content.text_content(
            json.dumps(attached, indent=1, sort_keys=True)))
        listed = self.nova.get(
            f'/servers/{guest.uuid}/os-interface')['interfaceAttachments']
        self.assertEqual(2, len(listed), listed)
        self.assertIn(attached['port_id'], [i['port_id'] for i in listed])
        port = self.eventually(
            lambda: self.session.get(
                f"{endpoints.url('neutron')}/v2.0/ports/"
                f"{attached['port_id']}").json()['port'],
            lambda p: p['status'] == 'ACTIVE',
            'the attached port ACTIVE', ATTACH_TIMEOUT,
            describe=lambda p: repr({k: p[k] for k in (
                'binding:host_id', 'status', 'binding:vif_type')}))
        self.assertEqual((guest.host, 'ovs'),
                         (port['binding:host_id'], port['binding:vif_type']))
        macs = [mac.get('address') for mac in ElementTree.fromstring(
            guest.read_xml()).findall('./devices/interface/mac')]
        self.assertIn(attached['mac_addr'], macs)
        self.assertEqual(2, len(macs), macs)
        tune, view = self.tuned_view(guest)
        nic_node = CLOUD.computes[guest.host].topology.nic_node
        self.assertEqual(('strict', frozenset({nic_node})),
                         (tune.mode, tune.nodes))
        self.addDetail('kernel-view', content.text_content(describe(view)))
        self.assert_kernel_follows(view, tune, domain_iothreads(guest.xml))

    def test_novas_privileged_daemon_started_through_rootwrap(self):
        """nova-compute's privsep daemon, started through rootwrap and sudo.

        A boot needs it (the image cache's files, the guest's disk and
        tap): each compute that booted a server says it started it.
        """
        hosts = {s['OS-EXT-SRV-ATTR:host'] for s in self.servers.values()}
        self.assertTrue(hosts)
        for name in sorted(hosts):
            log = CLOUD.computes[name].log()
            self.assertIn('Spawned new privsep daemon via rootwrap', log,
                          name)
            self.assertRegex(log, r'privsep daemon running as pid \d+',
                             name)

    def test_first_touch(self):
        self.check('first-touch')

    def test_home(self):
        self.check('home')

    def test_interleave(self):
        self.check('interleave')

    def test_first_touch_with_carrefour(self):
        self.check('first-touch+carrefour')

    def test_interleave_with_carrefour(self):
        self.check('interleave+carrefour')

    def test_auto(self):
        self.check('auto')

    def test_horizon_panel_shows_where_each_server_went(self):
        """Our panel in Horizon, logged in through keystone, lists them.

        Each server of setUpClass in the instances table, with the host
        nova chose and the policy it asked; both computes in the hosts
        table. Screenshots: ``.artifacts/cloud/horizon-cloud-*.png``.
        """
        shown = {value: server for value, server in self.servers.items()
                 if server['status'] == 'ACTIVE'}
        self.assertTrue(shown, 'no server is ACTIVE')
        for server in shown.values():
            # In the collector first: the panel shows what it stored.
            self.collector_instance(types.SimpleNamespace(uuid=server['id']))
        served = horizon.Horizon(CLOUD.workdir, horizon.venv()).start()
        self.addCleanup(served.stop)
        seen = served.browse('admin', lay.ADMIN_PASSWORD, lay.ARTIFACTS)
        index = seen['pages']['index']['text']
        self.addDetail('panel-index', content.text_content(index))
        for name in CLOUD.computes:
            self.assertIn(name, index)
        for value, server in shown.items():
            row = [line for line in index.splitlines()
                   if server['id'] in line]
            self.assertTrue(row, f'{value}: {server["id"]} not listed')
            self.assertIn(server['OS-EXT-SRV-ATTR:host'], row[0])
        self.assertEqual(len(CLOUD.computes), len(seen.get('host_urls', ())))
        for page in seen['pages'].values():
            self.assertTrue(os.path.getsize(page['png']) > 0, page['png'])

    def test_nic_locality_required_lands_on_the_nics_node(self):
        """``home`` with ``hw:numa_nic_locality=required`` on physnet1.

        neutron binds the port through the compute's Open vSwitch agent;
        our agent finds the uplink (the NUMA NIC under ``br-physnet1``)
        through OVSDB and reports its node; nova's scheduler keeps the
        hosts with that physnet's NIC; our driver binds the guest to the
        NIC's node, and the kernel shows it there.
        """
        guest = self.placed(NIC_REQUIRED)
        tune, view = self.tuned_view(guest)
        nic_node = CLOUD.computes[guest.host].topology.nic_node
        self.assertEqual('strict', tune.mode)
        self.assertEqual(frozenset({nic_node}), tune.nodes)
        self.assertEqual(self.node_cpus(nic_node), tune.cpus)
        self.addDetail('kernel-view', content.text_content(describe(view)))
        self.assert_kernel_follows(view, tune, domain_iothreads(guest.xml))
        status, body = CLOUD.numa_api(f'/v1/hosts/{guest.host}')
        self.addDetail('collector-host', content.text_content(
            json.dumps(body, indent=1, sort_keys=True)))
        self.assertEqual(200, status, body)
        # The uplink our agent found through OVSDB, on the NIC's node.
        self.assertIn(('eth0', nic_node, 'physnet1'),
                      [(nic['name'], nic['numa_node'], nic['physnet'])
                       for nic in body['host']['nics']], body)
        hosts = {h['host']: h for h in self.explained[NIC_REQUIRED]['hosts']}
        self.addDetail('explain-before-boot', content.text_content(
            json.dumps(hosts, indent=1, sort_keys=True)))
        self.assertTrue(hosts[guest.host]['passed'], hosts[guest.host])


def describe(view):
    """The kernel's view in a few lines, for the test's details."""
    lines = [f'pid {view.pid}; guest RAM: {view.ram.policy} '
             f'pages per node {view.ram.pages}']
    for thread in view.threads:
        lines.append(f'  thread {thread.tid} {thread.name!r}: '
                     f'Cpus_allowed_list {sorted(thread.cpus_allowed)}')
    for group, mems in sorted(view.cpuset_mems.items()):
        lines.append(f'  cgroup {group}: cpuset.mems {mems!r}')
    return '\n'.join(lines)
