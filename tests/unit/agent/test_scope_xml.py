"""Which domains the agent manages and which CPUs nova allows, from XML."""

from xml.etree import ElementTree

from nova.virt.libvirt import config as vconfig

from nova_numa_policy.contracts import policy
from nova_numa_policy.contracts import scope
from nova_numa_policy.decisions import enforcement
from nova_numa_policy.virt import driver
from nova_numa_policy.virt import metadata

from agent.backend import domxml
from tests import base as test_base
from tests import fixtures as host_fixtures

UUID = '11111111-1111-4111-8111-111111111111'
ASKED = {policy.POLICY_KEY: 'first-touch'}
HOSTDEV = ("<hostdev mode='subsystem' type='pci' managed='yes'><source>"
           "<address domain='0x0000' bus='0x81' slot='0x00' "
           "function='0x1'/></source></hostdev>")
VF = ("<interface type='hostdev' managed='yes'><source><address "
      "type='pci' domain='0x0000' bus='0x81' slot='0x10' function='0x2'/>"
      "</source></interface>")
VDPA = ("<interface type='vdpa'><source dev='/dev/vhost-vdpa-0'/>"
        "</interface>")


def with_devices(xml, devices):
    return xml.replace('</domain>', f'<devices>{devices}</devices></domain>')


def with_cpuset(xml, cpuset):
    return xml.replace('<vcpu>', f"<vcpu cpuset='{cpuset}'>")


def parse(xml, **choices):
    return domxml.parse(xml, scope.Scope(**choices))


class ManagementScopeTest(test_base.TestCase):

    def test_a_nova_guest_that_asked_is_managed(self):
        facts = parse(host_fixtures.domain_xml(1, UUID, nova_specs=ASKED))
        self.assertIsNone(facts.hands_off_reason)

    def test_a_nova_guest_that_asked_nothing_is_left_alone(self):
        xml = host_fixtures.domain_xml(1, UUID, nova_specs={})
        self.assertEqual(scope.NO_POLICY, parse(xml).hands_off_reason)
        self.assertIsNone(
            parse(xml, guests_without_policy=True).hands_off_reason)

    def test_a_domain_nova_did_not_define_is_left_alone(self):
        xml = host_fixtures.domain_xml(1, UUID)  # no metadata at all
        self.assertEqual(scope.NOT_NOVA, parse(xml).hands_off_reason)
        # Managing foreign domains still needs them to ask, or the
        # operator to manage guests without a policy too.
        self.assertEqual(scope.NO_POLICY,
                         parse(xml, foreign_domains=True).hands_off_reason)
        self.assertIsNone(parse(xml, foreign_domains=True,
                                guests_without_policy=True).hands_off_reason)

    def test_our_record_alone_marks_a_guest_the_driver_defined(self):
        record = metadata.render(metadata.PolicyRecord(policy.resolve(ASKED)))
        facts = parse(host_fixtures.domain_xml(1, UUID, policy=record))
        self.assertIsNone(facts.hands_off_reason)

    def test_an_unusable_record_alone_is_left_alone_not_raised(self):
        # Our element with a value no longer valid, and no nova metadata:
        # the driver defined it, but what it asks cannot be known.
        record = (f'<numapolicy:policy xmlns:numapolicy="'
                  f'{metadata.NAMESPACE}" value="no-such-policy"/>')
        facts = parse(host_fixtures.domain_xml(1, UUID, policy=record))
        self.assertIsNone(facts.requested)
        self.assertEqual(scope.NO_POLICY, facts.hands_off_reason)

    def test_passthrough_devices_make_a_guest_hands_off(self):
        for device in (HOSTDEV, VF, VDPA):
            xml = with_devices(
                host_fixtures.domain_xml(1, UUID, nova_specs=ASKED), device)
            self.assertEqual(scope.PASSTHROUGH, parse(xml).hands_off_reason,
                             device)
            self.assertIsNone(
                parse(xml, passthrough_guests=True).hands_off_reason, device)

    def test_an_ordinary_interface_is_not_passthrough(self):
        xml = with_devices(
            host_fixtures.domain_xml(1, UUID, nova_specs=ASKED),
            "<interface type='bridge'><source bridge='br0'/></interface>")
        self.assertIsNone(parse(xml).hands_off_reason)


class AllowedCpusTest(test_base.TestCase):

    def test_nova_cpuset_is_the_bound(self):
        xml = with_cpuset(
            host_fixtures.domain_xml(1, UUID, nova_specs=ASKED), '0-5,^2')
        self.assertEqual({0, 1, 3, 4, 5}, parse(xml).allowed_cpus)

    def test_no_cpuset_is_no_bound(self):
        xml = host_fixtures.domain_xml(1, UUID, nova_specs=ASKED)
        self.assertEqual(frozenset(), parse(xml).allowed_cpus)

    def test_the_record_keeps_nova_bound_after_the_driver_narrowed_it(self):
        # The driver pinned the guest to node 0 (0-3) out of nova's
        # cpu_shared_set 0-5: the agent may still use 4 and 5.
        record = metadata.render(metadata.PolicyRecord(
            policy.resolve(ASKED), allowed_cpus=frozenset(range(6))))
        xml = with_cpuset(host_fixtures.domain_xml(1, UUID, policy=record),
                          '0-3')
        self.assertEqual(frozenset(range(6)), parse(xml).allowed_cpus)

    def test_a_record_of_no_bound_is_not_the_narrowed_cpuset(self):
        # nova set no <vcpu cpuset>; the driver kept the guest on 0-3.
        record = metadata.render(metadata.PolicyRecord(
            policy.resolve(ASKED), allowed_cpus=frozenset()))
        xml = with_cpuset(host_fixtures.domain_xml(1, UUID, policy=record),
                          '0-3')
        self.assertEqual(frozenset(), parse(xml).allowed_cpus)

    def test_an_older_record_falls_back_to_the_cpuset(self):
        # A record written before the bound was recorded: the cpuset may
        # be the driver's narrowed one, which is never wider than nova's.
        record = metadata.render(metadata.PolicyRecord(policy.resolve(ASKED)))
        self.assertNotIn('allowed-cpus', record)
        xml = with_cpuset(host_fixtures.domain_xml(1, UUID, policy=record),
                          '0-3')
        self.assertEqual(frozenset(range(4)), parse(xml).allowed_cpus)

    def test_the_driver_records_novas_bound_before_narrowing_it(self):
        for nova_cpuset, recorded in ((None, frozenset()),
                                      ({0, 1, 2, 5}, {0, 1, 2, 5})):
            guest = vconfig.LibvirtConfigGuest()
            guest.cpuset = nova_cpuset
            plan = enforcement.BootPlan(enforcement.MemoryTune(
                mode='strict', nodes=frozenset({0}), cpus=frozenset({0, 1})))
            driver.write_policy(guest, policy.resolve(ASKED), plan)
            self.assertEqual({0, 1}, guest.cpuset)  # the driver narrowed it
            written = metadata.render(guest.metadata[-1].record)
            self.assertEqual(recorded, metadata.parse_element(
                ElementTree.fromstring(written)).allowed_cpus)

    def test_the_record_round_trips_its_bound(self):
        record = metadata.PolicyRecord(policy.resolve(ASKED), 'strict',
                                       frozenset({1}), frozenset({2, 3, 9}))
        element = host_fixtures.domain_xml(1, UUID,
                                           policy=metadata.render(record))
        self.assertEqual(record, metadata.find_record(
            ElementTree.fromstring(element)))
