"""A compute lab host's settings that need no lab host (pure)."""

import fixtures
from oslo_config import cfg
from vif_plug_ovs import ovs

from tests import base as test_base
from tests.cloud import compute
from tests.labhost import deploy


def _client_config(script):
    """The SSH client file that ``script`` writes, as written."""
    return script.split('<<"LAB_EOF"\n')[1].split('LAB_EOF')[0]


class MigrationSshTest(test_base.TestCase):

    def test_root_reaches_the_links_addresses_by_the_runs_key(self):
        script = compute.migration_ssh_commands('/tmp/run/id_ed25519',
                                                '192.168.77.2/24')
        self.assertIn('install -m 0600 /tmp/run/id_ed25519 '
                      f'{compute.MIGRATION_KEY}', script)
        config = _client_config(script)
        self.assertEqual('Host 192.168.77.*', config.splitlines()[0])
        self.assertIn(f'IdentityFile {compute.MIGRATION_KEY}', config)
        self.assertIn('IdentitiesOnly yes', config)

    def test_a_moves_ssh_and_scp_share_one_connection(self):
        script = compute.migration_ssh_commands('/k', '192.168.77.2/24')
        config = _client_config(script)
        self.assertIn('ControlMaster auto', config)
        self.assertIn(f'ControlPath {compute.SSH_CONTROL_PATH}', config)
        self.assertIn('ControlPersist', config)
        # On the lab host's own tmpfs: its root is read-only.
        self.assertTrue(compute.SSH_CONTROL_PATH.startswith('/tmp/'))

    def test_a_link_off_an_octet_boundary_is_refused(self):
        self.assertRaises(ValueError, compute.migration_ssh_commands,
                          '/k', '10.1.2.3/20')


class FilesScriptTest(test_base.TestCase):

    def test_each_file_in_its_directory_readable_by_all(self):
        script = deploy.files_script((('/etc/a/b.conf', '[x]\ny = 1'),))
        self.assertIn('mkdir -p /etc/a\n', script)
        self.assertIn('cat > /etc/a/b.conf <<"LAB_EOF"\n[x]\ny = 1\nLAB_EOF\n'
                      'chmod 0644 /etc/a/b.conf', script)


class OsVifTest(test_base.TestCase):

    def test_os_vif_reads_the_longer_ovsdb_wait(self):
        # Read back by os-vif's own option: a misspelt name or group
        # would leave its 120 s default.
        path = self.useFixture(fixtures.TempDir()).join('nova.conf')
        with open(path, 'w') as f:
            f.write(compute.render(compute.lab_settings('c1', '10.0.0.2')))
        conf = cfg.ConfigOpts()
        conf.register_opts(ovs.OvsPlugin.CONFIG_OPTS, group='os_vif_ovs')
        conf(args=[], default_config_files=[path])
        self.assertEqual(compute.OVSDB_TIMEOUT,
                         conf.os_vif_ovs.ovs_vsctl_timeout)
        self.assertGreater(compute.OVSDB_TIMEOUT, 120)
