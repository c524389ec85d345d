"""The module OSC loads through ``openstack.cli.extension``."""

import argparse

from openstack import config as os_config
from osc_lib import clientmanager

from nova_numa_policy.osc import plugin
from tests.unit.collector import fakes
from tests.unit.osc import base


class PluginTest(base.CliTestCase):

    def _client_manager(self, **config):
        region = os_config.OpenStackConfig(
            load_yaml_config=False, load_envvars=False).get_one(
                auth_type='none', auth={'endpoint': base.API_URL}, **config)
        manager = clientmanager.ClientManager(
            cli_options=region, api_version={plugin.API_NAME: '1'})
        manager.setup_auth()
        return manager

    def test_osc_finds_what_it_reads_from_a_plugin(self):
        # python-openstackclient's shell reads these names of every plugin.
        self.assertEqual('numa_policy', plugin.API_NAME)
        self.assertEqual('1', plugin.DEFAULT_API_VERSION)
        self.assertTrue(plugin.API_VERSION_OPTION.startswith('os_'))
        parser = plugin.build_option_parser(argparse.ArgumentParser())
        parsed = parser.parse_args([])
        self.assertEqual('1', getattr(parsed, plugin.API_VERSION_OPTION))

    def test_unknown_api_version_is_refused(self):
        parser = plugin.build_option_parser(argparse.ArgumentParser())
        self.assertRaises(SystemExit, parser.parse_args,
                          ['--os-numa-policy-api-version', '2'])

    def test_make_client_uses_the_endpoint_override(self):
        self.api.storage.store_report(fakes.make_report(), fakes.at(100))
        manager = self._client_manager(
            numa_policy_endpoint_override=base.API_URL)
        numa = plugin.make_client(manager)
        self.assertEqual(['compute-1'],
                         [h['host'] for h in numa.list_hosts().items])
