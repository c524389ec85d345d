"""The whole cloud's compute lab hosts: network, link, nova-compute.

The cloud is tests/cloud/cloud.py's, shared by the modules of the test
process: these tests read its computes as they run, they boot nothing
of their own. What leaves a lab host reaches this machine's 127.0.0.1
only, through QEMU's per-connection forwards (tests/labhost/network.py).
"""

import http.server
import os
import re
import threading
import uuid

from testtools import content

from tests import base as test_base
from tests.cloud import cloud as cloud_mod
from tests.cloud import endpoints
from tests.cloud import layout as lay
from tests.labhost import machine

GATEWAY = endpoints.GUEST_GATEWAY
FIRST, SECOND = (name for name, _ in cloud_mod.COMPUTES)
CLOUD = None


def setUpModule():
    global CLOUD
    CLOUD = cloud_mod.for_test_module()


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


class CloudNicTest(test_base.TestCase):
    """A compute reaches 127.0.0.1's services at the gateway, only them."""

    def setUp(self):
        super().setUp()
        self.lab = CLOUD.computes[FIRST].lab

    def test_the_cloud_nic_has_its_address_the_numa_nic_its_name(self):
        links = self.lab.run('ip -br addr').stdout
        self.assertRegex(links, r'(?m)^cloud0\s+UP\s+10\.0\.2\.15/24')
        # The topology's NIC keeps its name: the OVS agent's bridge
        # takes it as its port under that name.
        self.assertRegex(links, r'(?m)^eth0\s')

    def test_a_forward_reaches_a_service_on_this_machines_loopback(self):
        # The probe port: forwarded like a service's, served by no one
        # but this test.
        marker = uuid.uuid4().hex
        server = _serve(endpoints.PROBE_PORT, marker)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        status, body = self.lab.call(
            'tests.cloud.compute:http_get',
            f'http://{GATEWAY}:{endpoints.PROBE_PORT}/')
        self.assertEqual((200, marker), (status, body))

    def test_a_forward_to_a_closed_port_is_closed(self):
        self.assertRaises(machine.CallFailed, self.lab.call,
                          'tests.cloud.compute:http_get',
                          f'http://{GATEWAY}:{endpoints.PROBE_PORT}/',
                          timeout=120)

    def test_no_other_address_is_reachable(self):
        # QEMU's own address, this machine's DNS and a public address: the
        # restricted network routes nothing out of the lab host.
        for address in ('10.0.2.2', '10.0.2.3', '192.0.2.1'):
            result = self.lab.run(
                f'busybox nc -w 3 {address} 80 < /dev/null', check=False)
            self.assertNotEqual(0, result.rc, address)

    def test_amqp_through_the_forward(self):
        # The cloud's virtual host, kombu's URL of it: a handshake, no
        # message sent.
        url = lay.transport_url(GATEWAY).replace('rabbit://', 'amqp://', 1)
        server = self.lab.call('tests.cloud.compute:amqp_handshake', url)
        self.addDetail('broker', content.text_content(repr(server)))
        self.assertEqual('RabbitMQ', server['product'])


class LinkTest(test_base.TestCase):
    """The two computes on one link: ping, and libvirt over TCP."""

    def setUp(self):
        super().setUp()
        self.hosts = [CLOUD.computes[FIRST], CLOUD.computes[SECOND]]

    def _pairs(self):
        first, second = self.hosts
        return ((first, second), (second, first))

    def test_each_pings_the_other(self):
        for host, other in self._pairs():
            out = host.lab.run(
                f'busybox ping -c 3 -W 5 {other.link.ip}').stdout
            self.assertIn('3 packets received', out)

    def test_libvirt_of_the_other_over_tcp(self):
        for host, other in self._pairs():
            uri = f'qemu+tcp://{other.link.ip}/system'
            name = host.lab.run(f'virsh -c {uri} hostname').stdout.strip()
            self.assertEqual(other.name, name)
            host.lab.run(f'virsh -c {uri} list --all')

    def test_libvirt_listens_on_the_link_only(self):
        for host in self.hosts:
            listening = host.lab.run('ss -ltnH').stdout
            self.assertIn(f'{host.link.ip}:16509', listening)
            self.assertNotIn('0.0.0.0:16509', listening)


class NovaComputeTest(test_base.TestCase):
    """nova-compute with our driver, as the devstack plugin set it up."""

    def test_nova_conf_has_ours_as_the_plugin_writes_them(self):
        for name in (FIRST, SECOND):
            host = CLOUD.computes[name]
            conf = host.nova_conf
            self.assertIn(
                'compute_driver = numa_policy.NumaPolicyLibvirtDriver', conf)
            self.assertIn('virt_type = qemu', conf)
            self.assertIn(f'transport_url = {lay.transport_url(GATEWAY)}',
                          conf)
            self.assertIn(
                'uplinks_file = /tmp/nova/numa-policy-uplinks.json', conf)
            # The plugin ran the driver shim, as on a compute node.
            self.assertIn(('numa-policy-nova-driver-shim',),
                          host.plugin_calls)

    def test_nova_compute_runs_our_driver_and_is_up(self):
        # What it runs with, as it logged its options at start, and how
        # its start went (not what a fault scenario run before this test
        # added); and up in nova's API, so its RPC reached the conductor.
        services = {s['host']: s for s in CLOUD.nova().compute_services()}
        for name in (FIRST, SECOND):
            host = CLOUD.computes[name]
            log = CLOUD.logs_at_start[name]
            self.assertTrue(host.running())
            self.assertIsNone(re.search(r'AMQP server .* is unreachable',
                                        log))
            self.assertRegex(
                log,
                r'compute_driver\s+= numa_policy\.NumaPolicyLibvirtDriver')
            self.assertEqual('up', services[name]['state'], services[name])


class NovaPrivsepTest(test_base.TestCase):
    """nova's root helper in a compute: rootwrap through sudo.

    compute.install_rootwrap puts it there; tests/cloud/test_servers.py
    shows nova-compute's privileged daemon started through it.
    """

    def setUp(self):
        super().setUp()
        self.compute = CLOUD.computes[FIRST]

    def test_the_root_helper_finds_rootwrap_and_the_helper(self):
        lab = self.compute.lab
        conf = lab.read('/etc/nova/rootwrap.conf')
        bin_dir = os.path.dirname(self.compute.python)
        self.assertRegex(conf, r'(?m)^filters_path=/etc/nova/rootwrap\.d$')
        self.assertRegex(conf, rf'(?m)^exec_dirs={re.escape(bin_dir)},')
        self.assertEqual(
            os.path.join(bin_dir, 'nova-rootwrap'),
            lab.run('readlink /usr/bin/nova-rootwrap').stdout.strip())
