"""Where a guest's requested policy comes from, read from its XML."""

from nova_numa_policy.contracts import policy
from nova_numa_policy.virt import metadata

from agent.backend import domxml
from tests import base as test_base
from tests import fixtures as host_fixtures

UUID = '11111111-1111-4111-8111-111111111111'


def record(value, mode=None, nodes=()):
    return metadata.render(metadata.PolicyRecord(
        policy.resolve({policy.POLICY_KEY: value}), mode, frozenset(nodes)))


class DomainXmlTest(test_base.TestCase):

    def parse(self, **kwargs):
        return domxml.parse(host_fixtures.domain_xml(1, UUID, **kwargs))

    def test_our_metadata_wins_over_nova_flavor_specs(self):
        facts = self.parse(policy=record('interleave', 'interleave', {0, 1}),
                           numatune=('interleave', '0-1'),
                           nova_specs={policy.POLICY_KEY: 'home'})
        self.assertEqual('interleave', facts.requested.value)
        self.assertEqual(domxml.SOURCE_AGENT_METADATA, facts.source)
        self.assertEqual(('interleave', frozenset({0, 1})),
                         (facts.memory_mode, facts.memory_nodes))

    def test_nova_flavor_extra_specs_without_our_metadata(self):
        facts = self.parse(nova_specs={policy.POLICY_KEY: 'home',
                                       'hw:cpu_cores': '2'})
        self.assertEqual('home', facts.requested.value)
        self.assertEqual(domxml.SOURCE_NOVA_FLAVOR, facts.source)
        self.assertIsNone(facts.memory_mode)

    def test_no_policy_anywhere(self):
        facts = self.parse(nova_specs={})
        self.assertEqual((None, None), (facts.requested, facts.source))
        facts = self.parse()
        self.assertIsNone(facts.requested)

    def test_an_invalid_value_is_reported_not_guessed(self):
        facts = self.parse(nova_specs={policy.POLICY_KEY: 'bogus'})
        self.assertIsNone(facts.requested)
        self.assertIn('unusable', facts.source)

    def test_nova_topology_is_hands_off(self):
        facts = self.parse(nova_topology=True,
                           nova_specs={policy.POLICY_KEY: 'first-touch',
                                       'hw:numa_nodes': '1'})
        self.assertIn('nova owns', facts.hands_off_reason)
        self.assertTrue(facts.requested.within_nova_topology)

    def test_memory_and_vcpus(self):
        facts = self.parse(vcpus=4, memory_mb=2048)
        self.assertEqual((UUID, 4, 2048),
                         (facts.uuid, facts.vcpus, facts.memory_mb))

    def test_metadata_round_trip(self):
        text = record('home', 'strict', {1})
        from xml.etree import ElementTree
        parsed = metadata.parse_element(ElementTree.fromstring(text))
        self.assertEqual(('home', 'strict', frozenset({1})),
                         (parsed.policy.value, parsed.mode, parsed.nodes))
