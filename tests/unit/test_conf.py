"""Options: groups listed once; the sample is current and complete."""

import os
import re
import subprocess
import sys
import tempfile

from oslo_config import cfg
import oslo_messaging
from oslo_privsep import capabilities
from oslo_privsep import priv_context
import testtools

from agent import privsep
from agent.service import traits
from nova_numa_policy.conf import opts
from nova_numa_policy.conf import policy as policy_conf
from nova_numa_policy.conf import reports
from nova_numa_policy.contracts import messaging
from nova_numa_policy.contracts import policy
from nova_numa_policy.decisions import enforcement
from nova_numa_policy.objects import report as report_obj
from tests import base as test_base
from tests.unit import conf_fixture

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
GENERATOR_CONFIG = os.path.join(
    ROOT, 'etc', 'oslo-config-generator', 'nova-numa-policy.conf')
SAMPLE = os.path.join(ROOT, 'etc', 'nova-numa-policy.conf.sample')


class ListOptsTest(test_base.TestCase):

    def test_each_group_listed_once_with_documented_options(self):
        pairs = opts.list_opts()
        names = [group.name for group, _ in pairs]
        self.assertEqual(len(names), len(set(names)))
        for group, group_opts in pairs:
            self.assertTrue(group.help, group.name)
            for opt in group_opts:
                self.assertIn('Possible values', opt.help,
                              f'[{group.name}] {opt.name}')

    def test_options_register_on_a_fresh_config(self):
        conf = cfg.ConfigOpts()
        for module in opts.GROUP_MODULES:
            module.register_opts(conf)
        conf([])
        self.assertEqual('numa_policy_reports',
                         conf.numa_policy_reports.topic)
        self.assertIsNone(conf.numa_policy.default_policy)

    def test_bad_default_policy_is_refused_at_start(self):
        conf = cfg.ConfigOpts()
        for module in opts.GROUP_MODULES:
            module.register_opts(conf)
        conf([])
        exc = self.assertRaises(
            ValueError, conf.set_override, 'default_policy', 'sideways',
            group='numa_policy')
        self.assertIn('interleave', str(exc))


class PrivateConfTest(test_base.TestCase):
    """An override on a test's own ConfigOpts ends with the test."""

    def test_an_override_does_not_reach_a_later_test(self):
        class SetsAnOverride(test_base.TestCase):
            def test(inner):
                conf = inner.useFixture(conf_fixture.ProjectConf()).conf
                conf.set_override('io_path_steering', True,
                                  group='numa_policy_agent')
                inner.assertTrue(conf.numa_policy_agent.io_path_steering)

        result = testtools.TestResult()
        SetsAnOverride('test').run(result)
        self.assertTrue(result.wasSuccessful(), result.failures)
        later = self.useFixture(conf_fixture.ProjectConf()).conf
        self.assertFalse(later.numa_policy_agent.io_path_steering)


class SampleIsCurrentTest(test_base.TestCase):

    def test_committed_sample_matches_the_generator(self):
        with tempfile.TemporaryDirectory() as tmp:
            output = os.path.join(tmp, 'sample.conf')
            subprocess.run(
                [sys.executable, '-m', 'oslo_config.generator',
                 '--config-file', GENERATOR_CONFIG,
                 '--output-file', output],
                check=True, cwd=ROOT, capture_output=True)
            with open(output) as generated, open(SAMPLE) as committed:
                self.assertEqual(
                    generated.read(), committed.read(),
                    'etc/nova-numa-policy.conf.sample is stale: run '
                    '"tox -e genconfig" and commit the result')


def sample_sections():
    """{section: {option: default as written}} of the committed sample."""
    sections = {}
    with open(SAMPLE) as sample:
        for line in sample:
            header = re.match(r'\[(\w+)\]$', line)
            if header:
                options = sections.setdefault(header.group(1), {})
                continue
            option = re.match(r'#(\w+) = (.*)$', line)
            if option:
                options[option.group(1)] = option.group(2)
    return sections


class AgentLibraryOptionsTest(test_base.TestCase):
    """The sample lists the library options the agent registers itself."""

    def listed(self, section):
        sections = sample_sections()
        self.assertIn(section, sections, 'section missing from the sample')
        return sections[section]

    def test_privileged_context_options(self):
        section = privsep.pages.cfg_section
        listed = self.listed(section)
        # What every PrivContext registers in its section, with the
        # context's capabilities as the default, and the agent's own.
        self.assertEqual({opt.dest for opt in priv_context.OPTS}
                         | {opt.dest for opt in privsep.OPTS}, set(listed))
        names = [capabilities.CAPS_BYVALUE[cap]
                 for cap in privsep.CAPABILITIES]
        self.assertEqual(','.join(names), listed['capabilities'])

    def test_placement_options(self):
        conf = cfg.ConfigOpts()
        traits.register_placement_opts(conf)
        listed = self.listed(traits.PLACEMENT_GROUP)
        self.assertLessEqual(set(conf[traits.PLACEMENT_GROUP]), set(listed))
        self.assertEqual(conf[traits.PLACEMENT_GROUP].service_type,
                         listed['service_type'])
        # The password plugin's options, which nova.conf's [placement]
        # usually has.
        self.assertLessEqual(
            {'auth_url', 'username', 'password', 'project_name',
             'user_domain_name', 'project_domain_name'}, set(listed))


class ExchangeTest(test_base.TestCase):

    def test_our_services_default_to_novas_exchange(self):
        conf = cfg.ConfigOpts()
        messaging.use_nova_exchange()
        transport = oslo_messaging.get_notification_transport(
            conf, url='fake:/')
        self.addCleanup(transport.cleanup)
        self.assertEqual('nova', conf.control_exchange)


class ConstantsTest(test_base.TestCase):
    """Configuration imports nothing of ours: its copies must agree."""

    def test_the_default_report_version_is_the_newest_written(self):
        self.assertEqual(report_obj.NumaHostReport.VERSION,
                         reports.REPORT_VERSION)

    def test_the_policy_choices_are_the_policies(self):
        self.assertEqual(policy.POLICY_VALUES, policy_conf.POLICY_VALUES)

    def test_the_large_guest_share_is_the_deciders(self):
        self.assertEqual(enforcement.LARGE_GUEST_SHARE,
                         policy_conf.LARGE_GUEST_SHARE)
