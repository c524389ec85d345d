"""The TempestPlugin tempest finds through the tempest.test_plugins entry
point."""

import os

from tempest.test_discover import plugins

from nova_numa_policy.tempest_plugin import config as plugin_config

# The tests, relative to the directory that holds the nova_numa_policy
# package: tempest discovers them with that directory as the top level, so
# their ids start with nova_numa_policy.tempest_plugin.tests.
TESTS_PATH = os.path.join('nova_numa_policy', 'tempest_plugin', 'tests')


class NumaPolicyTempestPlugin(plugins.TempestPlugin):

    def load_tests(self):
        package_dir = os.path.dirname(os.path.abspath(__file__))
        top_level = os.path.dirname(os.path.dirname(package_dir))
        return os.path.join(top_level, TESTS_PATH), top_level

    def register_opts(self, conf):
        conf.register_opt(plugin_config.service_option,
                          group='service_available')
        conf.register_group(plugin_config.numa_policy_group)
        conf.register_opts(plugin_config.NumaPolicyGroup,
                           group=plugin_config.numa_policy_group)

    def get_opt_lists(self):
        return plugin_config.list_opts()
