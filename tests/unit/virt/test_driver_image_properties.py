"""Image properties the driver extension reports as ignored."""

from nova_numa_policy.virt import driver
from tests import base as test_base


class IgnoredImagePropertiesTest(test_base.TestCase):

    # (what the instance's system metadata holds, what is reported)
    CASES = [
        ({}, []),
        (None, []),
        ({'image_hw_disk_bus': 'scsi', 'image_min_ram': '0'}, []),
        ({'image_hw_numa_policy': 'interleave'},
         ['hw_numa_policy=interleave']),
        ({'image_hw_numa_nic_locality': 'required',
          'image_hw_numa_io_intensity': 'high'},
         ['hw_numa_nic_locality=required', 'hw_numa_io_intensity=high']),
        # nova's own NUMA properties are nova's business, not ignored.
        ({'image_hw_numa_nodes': '2'}, []),
    ]

    def test_cases(self):
        for system_metadata, expected in self.CASES:
            self.assertEqual(
                expected, driver.ignored_image_properties(system_metadata),
                system_metadata)
