"""How the cloud tests read a domain's tune from its live XML."""

from tests import base as test_base
from tests.cloud import test_servers

XML = """<domain type='qemu'>
  <vcpu placement='static' cpuset='{cpuset}'>2</vcpu>
  <cputune>{pins}</cputune>
</domain>"""


def tune(cpuset='0-3', pins=''):
    return test_servers.domain_tune(XML.format(cpuset=cpuset, pins=pins))


class VcpuPinsTest(test_base.TestCase):

    def test_no_pin_is_no_pins(self):
        self.assertEqual((), tune().vcpu_pins)

    def test_each_pin_by_its_vcpu(self):
        pins = ("<vcpupin vcpu='1' cpuset='2-3'/>"
                "<vcpupin vcpu='0' cpuset='0-1'/>")
        self.assertEqual((frozenset({0, 1}), frozenset({2, 3})),
                         tune(pins=pins).vcpu_pins)

    def test_a_vcpu_left_unpinned_runs_where_the_vcpu_cpuset_says(self):
        # A loop moved vCPU 0 alone (seen in the cloud with 2 vCPUs).
        pins = "<vcpupin vcpu='0' cpuset='0-1'/>"
        self.assertEqual((frozenset({0, 1}), frozenset({0, 1, 2, 3})),
                         tune(pins=pins).vcpu_pins)
