"""Compute lab hosts: their network, libvirt between them, nova-compute.

Each class boots its lab hosts once (under TCG, about half a minute
each). Where a lab host cannot boot the tests are skipped, or fail
with NUMA_POLICY_REQUIRE_LAB=1, as in the host tier.

What leaves a lab host reaches this machine's 127.0.0.1 only, through
QEMU's per-connection forwards (tests/labhost/network.py).
"""

import http.server
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid

import testtools
from testtools import content

from tests.cloud import compute
from tests.cloud import endpoints
from tests.labhost import initramfs
from tests.labhost import machine
from tests.labhost import network

GATEWAY = endpoints.GUEST_GATEWAY
# A RabbitMQ virtual host of this test's own, made and removed by it:
# nova-compute's RPC meets no other tier's, and no control plane's.
PROBE_VHOST = 'numa-cloud-compute-probe'


def _boot(lab):
    # boot() shuts the lab host down itself when it fails.
    try:
        return lab.boot()
    except initramfs.LabUnavailable as exc:
        if machine.required():
            raise
        raise testtools.TestCase.skipException(str(exc))


def _port_open(port):
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((endpoints.HOST_ADDRESS, port)) == 0


def _free_cloud_port():
    """A port of the cloud's that nothing on 127.0.0.1 answers now."""
    for name, port in endpoints.PORTS.items():
        if name != 'rabbitmq' and not _port_open(port):
            return port
    return None


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


def _serve(port, body):
    """An HTTP server on 127.0.0.1:``port`` answering ``body``."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            data = body.encode()
            self.send_response(200)
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = _Server((endpoints.HOST_ADDRESS, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class CloudNicTest(testtools.TestCase):
    """A lab host reaches 127.0.0.1's services at the gateway, only them."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.lab = machine.LabHost(
            network=network.cloud_network(endpoints.PORTS.values()),
            hostname='lab-cloud-nic')
        _boot(cls.lab)

    @classmethod
    def tearDownClass(cls):
        cls.lab.shutdown()
        super().tearDownClass()

    def test_the_cloud_nic_has_its_address_the_numa_nic_its_name(self):
        links = self.lab.run('ip -br addr').stdout
        self.assertRegex(links, r'(?m)^cloud0\s+UP\s+10\.0\.2\.15/24')
        # The topology's NIC keeps its name and stays down, as the host
        # tier expects it.
        self.assertRegex(links, r'(?m)^eth0\s+DOWN')

    def test_a_forward_reaches_a_service_on_this_machines_loopback(self):
        port = _free_cloud_port()
        if port is None:
            self.skipTest('every port of the cloud is in use here')
        marker = uuid.uuid4().hex
        server = _serve(port, marker)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        status, body = self.lab.call('tests.cloud.compute:http_get',
                                     f'http://{GATEWAY}:{port}/')
        self.assertEqual((200, marker), (status, body))

    def test_a_forward_to_a_closed_port_is_closed(self):
        port = _free_cloud_port()
        if port is None:
            self.skipTest('every port of the cloud is in use here')
        self.assertRaises(machine.CallFailed, self.lab.call,
                          'tests.cloud.compute:http_get',
                          f'http://{GATEWAY}:{port}/', timeout=120)

    def test_no_other_address_is_reachable(self):
        # QEMU's own address, this machine's DNS and a public address: the
        # restricted network routes nothing out of the lab host.
        for address in ('10.0.2.2', '10.0.2.3', '192.0.2.1'):
            result = self.lab.run(
                f'busybox nc -w 3 {address} 80 < /dev/null', check=False)
            self.assertNotEqual(0, result.rc, address)

    def test_amqp_through_the_forward(self):
        if not _port_open(endpoints.PORTS['rabbitmq']):
            self.skipTest('no RabbitMQ on 127.0.0.1')
        # The default virtual host: a handshake, no message sent.
        port = endpoints.PORTS['rabbitmq']
        server = self.lab.call('tests.cloud.compute:amqp_handshake',
                               f'amqp://guest:guest@{GATEWAY}:{port}//')
        self.addDetail('broker', content.text_content(repr(server)))
        self.assertEqual('RabbitMQ', server['product'])


class LinkTest(testtools.TestCase):
    """Two lab hosts on one link: ping, and libvirt over TCP."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.dir = tempfile.mkdtemp(prefix='numa-link-')
        cls.ends = network.link_ends(os.path.join(cls.dir, 'link.sock'))
        cls.labs = [machine.LabHost(network=network.LabNetwork(link=end),
                                    hostname=f'lab-link-{i}')
                    for i, end in enumerate(cls.ends, 1)]
        try:
            # The listening end first: the other's QEMU connects at start.
            for lab in cls.labs:
                _boot(lab)
                lab.start_libvirtd()
        except BaseException:
            cls._clean()
            raise

    @classmethod
    def _clean(cls):
        for lab in cls.labs:
            lab.shutdown()
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def tearDownClass(cls):
        cls._clean()
        super().tearDownClass()

    def test_each_pings_the_other(self):
        for lab, other in ((self.labs[0], self.ends[1]),
                           (self.labs[1], self.ends[0])):
            out = lab.run(f'busybox ping -c 3 -W 5 {other.ip}').stdout
            self.assertIn('3 packets received', out)

    def test_libvirt_of_the_other_over_tcp(self):
        for i, (lab, other) in enumerate(((self.labs[0], self.ends[1]),
                                          (self.labs[1], self.ends[0]))):
            uri = f'qemu+tcp://{other.ip}/system'
            name = lab.run(f'virsh -c {uri} hostname').stdout.strip()
            self.assertEqual(f'lab-link-{2 - i}', name)
            lab.run(f'virsh -c {uri} list --all')

    def test_libvirt_listens_on_the_link_only(self):
        listening = self.labs[0].run('ss -ltnH').stdout
        self.assertIn(f'{self.ends[0].ip}:16509', listening)
        self.assertNotIn('0.0.0.0:16509', listening)


class NovaComputeTest(testtools.TestCase):
    """nova-compute with our driver starts in a lab host and finds RPC.

    Against this test's own RabbitMQ virtual host, where no conductor
    answers: nova-compute's first RPC call goes out through the forward
    and waits for one, which is as far as a compute gets without the
    control plane.
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not _port_open(endpoints.PORTS['rabbitmq']):
            raise cls.skipException('no RabbitMQ on 127.0.0.1')
        if shutil.which('rabbitmqctl') is None:
            raise cls.skipException('no rabbitmqctl to make a vhost with')
        python = os.environ.get('NUMA_CLOUD_PYTHON')
        cls._rabbitmqctl('add_vhost', PROBE_VHOST)
        cls._rabbitmqctl('set_permissions', '-p', PROBE_VHOST, 'guest',
                         '.*', '.*', '.*')
        cls.compute = compute.ComputeHost(
            'lab-compute-probe', python=python,
            settings=compute.stand_in_settings(vhost=PROBE_VHOST),
            start_timeout=300)
        started = time.monotonic()
        try:
            _boot(cls.compute)
        except BaseException:
            cls._clean()
            raise
        cls.boot_seconds = time.monotonic() - started

    @staticmethod
    def _rabbitmqctl(*args):
        subprocess.run(['rabbitmqctl', '-q', *args], check=True,
                       capture_output=True, timeout=120)

    @classmethod
    def _clean(cls):
        cls.compute.shutdown()
        try:
            cls._rabbitmqctl('delete_vhost', PROBE_VHOST)
        except subprocess.CalledProcessError:
            pass

    @classmethod
    def tearDownClass(cls):
        cls._clean()
        super().tearDownClass()

    def test_nova_conf_has_ours_as_the_plugin_writes_them(self):
        conf = self.compute.nova_conf
        self.assertIn('compute_driver = numa_policy.NumaPolicyLibvirtDriver',
                      conf)
        self.assertIn('virt_type = qemu', conf)
        self.assertIn(f'transport_url = rabbit://guest:guest@{GATEWAY}:5672/'
                      f'{PROBE_VHOST}', conf)
        self.assertIn('uplinks_file = /tmp/nova/numa-policy-uplinks.json',
                      conf)
        # The plugin ran the driver shim, as on a compute node.
        self.assertIn(('numa-policy-nova-driver-shim',),
                      self.compute.plugin_calls)

    def test_nova_compute_starts_and_waits_for_the_conductor(self):
        imports = self.compute.lab.call('tests.cloud.compute:import_seconds',
                                        timeout=600)
        self.compute.start()
        options = self.compute.wait_for_log(r'log_opt_values')
        waiting = self.compute.wait_for_log(
            r'Timed out waiting for nova-conductor')
        log = self.compute.log()
        self.addDetail('timings', content.text_content(
            f'lab host boot and libvirtd: {self.boot_seconds:.1f} s\n'
            f'import of the compute manager and drivers: {imports:.1f} s\n'
            f'nova-compute start to its options logged: {options:.1f} s\n'
            f'start to the first wait for the conductor: {waiting:.1f} s'))
        self.assertTrue(self.compute.running())
        self.assertIsNone(re.search(r'AMQP server .* is unreachable', log))
        self.assertRegex(
            log, r'compute_driver\s+= numa_policy\.NumaPolicyLibvirtDriver')


class NovaPrivsepTest(testtools.TestCase):
    """nova's privileged helper starts in a compute lab host and works.

    nova-compute's root helper is nova's rootwrap through sudo
    (compute.install_rootwrap); its sys_admin daemon then touches a file
    of the lab host, as it does an image cache entry for a new server.
    No control plane: nothing here speaks RPC.
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.compute = compute.ComputeHost(
            'lab-compute-privsep',
            python=os.environ.get('NUMA_CLOUD_PYTHON'))
        _boot(cls.compute)

    @classmethod
    def tearDownClass(cls):
        cls.compute.shutdown()
        super().tearDownClass()

    def test_the_root_helper_finds_rootwrap_and_the_helper(self):
        lab = self.compute.lab
        conf = lab.read('/etc/nova/rootwrap.conf')
        bin_dir = os.path.dirname(self.compute.python)
        self.assertRegex(conf, r'(?m)^filters_path=/etc/nova/rootwrap\.d$')
        self.assertRegex(conf, rf'(?m)^exec_dirs={re.escape(bin_dir)},')
        self.assertEqual(
            os.path.join(bin_dir, 'nova-rootwrap'),
            lab.run('readlink /usr/bin/nova-rootwrap').stdout.strip())

    def test_utime_through_novas_privsep_daemon(self):
        lab = self.compute.lab
        path = '/tmp/nova/privsep-utime'
        lab.run(f'mkdir -p /tmp/nova && touch -d 2001-01-01 {path}')
        before = int(lab.run(f'stat -c %Y {path}').stdout)
        answer = lab.call('tests.cloud.compute:privsep_utime',
                          compute.GUEST_SHARE + '/' + compute.SHARE_DIR
                          + '/nova.conf', path, timeout=900)
        self.addDetail('stderr', content.text_content(answer['stderr']))
        self.assertEqual(0, answer['rc'], answer['stderr'])
        self.assertIn('Spawned new privsep daemon via rootwrap',
                      answer['stderr'])
        after = int(lab.run(f'stat -c %Y {path}').stdout)
        self.assertGreater(after, before)
