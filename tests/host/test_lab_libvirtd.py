"""The lab host's libvirtd keeps a client that is slow to answer.

nova-compute answers libvirtd's keepalive requests on its libvirt event
thread, which also runs its lifecycle handlers. Under emulation a
handler has taken longer than the 30 s libvirtd waits by default
(keepalive_interval 5 s, keepalive_count 5): libvirtd closed
nova-compute's connection, and nova-compute hung on its own connection
lock (cloud.rst, "A libvirt connection closed under load"). The lab
host's libvirtd sends no keepalive requests (tests/labhost/libvirt-up.sh).
"""

from tests.host import base

# Longer than libvirtd's default keepalive wait, 5 s * (5 + 1).
SILENCE = 40


class SlowClientTest(base.LabTestCase):

    def test_a_client_silent_past_the_default_keepalive_keeps_its_connection(
            self):
        connection = self.lab.call(
            'tests.labhost.inside:silent_client_connection', SILENCE,
            timeout=SILENCE + 60)
        self.assertEqual({'open': True, 'error': None}, connection)
