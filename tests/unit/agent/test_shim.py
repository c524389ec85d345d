"""The shim that lets nova-compute load the driver extension."""

import importlib.util
import pathlib
import re

import fixtures

from nova_numa_policy.virt import driver
from nova_numa_policy.virt import shim
from tests import base as test_base


class ShimTest(test_base.TestCase):

    def test_the_shim_exports_the_driver_and_is_idempotent(self):
        virt_dir = self.useFixture(fixtures.TempDir()).path
        path = shim.install(virt_dir)
        self.assertEqual(path, shim.install(virt_dir))
        spec = importlib.util.spec_from_file_location('shimmed', path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.assertIs(driver.NumaPolicyLibvirtDriver,
                      module.NumaPolicyLibvirtDriver)
        self.assertEqual('numa_policy.NumaPolicyLibvirtDriver',
                         shim.COMPUTE_DRIVER)

    def test_supported_nova_versions(self):
        self.assertTrue(driver.supported(driver.nova_major()))
        self.assertFalse(driver.supported(driver.MIN_NOVA_MAJOR - 1))
        self.assertFalse(driver.supported(driver.MAX_NOVA_MAJOR + 1))


class DocumentedValueTest(test_base.TestCase):
    """Each place telling an operator what to set names the shim's value.

    nova loads ``nova.virt.<value>``; only the shim's module exists there.
    """

    PLACES = ('doc/source/devstack.rst', 'doc/source/agent.rst',
              'nova_numa_policy/virt/driver.py',
              'nova_numa_policy/virt/shim.py', 'devstack/settings')

    def test_every_documented_compute_driver_is_the_shims(self):
        root = pathlib.Path(__file__).resolve().parents[3]
        for place in self.PLACES:
            text = ' '.join((root / place).read_text().split())
            values = re.findall(
                r'compute_driver\s*=\s*`*([A-Za-z_][\w.]*\w)', text)
            values += re.findall(
                r'COMPUTE_DRIVER:-([A-Za-z_][\w.]*\w)', text)
            self.assertNotEqual([], values, place)
            self.assertEqual({shim.COMPUTE_DRIVER}, set(values), place)
