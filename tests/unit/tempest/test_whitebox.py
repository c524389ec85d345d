"""Parsing of libvirt domain XML for the domain XML checks."""

from nova_numa_policy.tempest_plugin import whitebox
from tests import base as test_base


def domain(numatune=''):
    return (f"<domain type='kvm'><name>instance-00000001</name>"
            f"<memory unit='KiB'>524288</memory>{numatune}</domain>")


class ParseNodesetTest(test_base.TestCase):

    def test_single_nodes_and_ranges(self):
        self.assertEqual({0, 1, 2, 5}, whitebox.parse_nodeset('0-2,5'))

    def test_exclusions_apply_to_the_whole_set(self):
        self.assertEqual({0, 2, 3}, whitebox.parse_nodeset('0-3,^1'))

    def test_spaces_and_empty_items_are_ignored(self):
        self.assertEqual({0, 1}, whitebox.parse_nodeset(' 0, ,1 '))


class MemoryTuneTest(test_base.TestCase):

    def test_interleave_over_two_nodes(self):
        xml = domain("<numatune><memory mode='interleave' nodeset='0-1'/>"
                     "</numatune>")
        self.assertEqual(('interleave', {0, 1}), whitebox.memory_tune(xml))

    def test_memory_without_mode_is_strict(self):
        xml = domain("<numatune><memory nodeset='1'/></numatune>")
        self.assertEqual(('strict', {1}), whitebox.memory_tune(xml))

    def test_no_numatune_leaves_the_kernel_default(self):
        self.assertEqual((None, None), whitebox.memory_tune(domain()))

    def test_memnode_only_numatune_has_no_guest_wide_mode(self):
        # nova's per-cell binding: <memnode> elements, no <memory>.
        xml = domain("<numatune><memnode cellid='0' mode='strict' "
                     "nodeset='0'/></numatune>")
        self.assertEqual((None, None), whitebox.memory_tune(xml))
