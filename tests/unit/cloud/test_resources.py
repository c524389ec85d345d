"""The cloud's test image as glance's and nova's inspectors read it."""

import os
import tempfile

from oslo_utils.imageutils import format_inspector

from tests import base as test_base
from tests.cloud import resources


class HaltingImageTest(test_base.TestCase):

    def _image(self, **kwargs):
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        path = os.path.join(directory.name, 'disk.raw')
        return resources.make_raw_image(path, **kwargs)

    def test_its_size_is_asked_for_and_it_boots_into_a_halt(self):
        path = self._image(mib=2)
        self.assertEqual(2 * 1024 * 1024, os.path.getsize(path))
        with open(path, 'rb') as f:
            sector = f.read(512)
        # cli; hlt; and a jump back to the hlt.
        self.assertEqual(b'\xfa\xf4\xeb\xfd', sector[:4])
        self.assertEqual(b'\x55\xaa', sector[510:])

    def test_the_inspectors_take_it_for_a_whole_disk(self):
        # glance (location.py) and nova (virt/images.py) accept a 'raw'
        # image detected as 'gpt' (an MBR) once its safety checks pass.
        inspector = format_inspector.detect_file_format(self._image())
        self.assertEqual('gpt', str(inspector))
        inspector.safety_check()

    def test_its_one_partition_fills_the_disk_after_the_first_mib(self):
        with open(self._image(mib=4), 'rb') as f:
            entry = f.read(512)[446:462]
        self.assertEqual(0x80, entry[0])
        self.assertEqual(0x83, entry[4])
        self.assertEqual(2048, int.from_bytes(entry[8:12], 'little'))
        self.assertEqual(4 * 2048 - 2048,
                         int.from_bytes(entry[12:16], 'little'))

    def test_a_signature_without_a_partition_is_refused(self):
        # Why the image has a partition at all.
        path = self._image()
        with open(path, 'r+b') as f:
            f.seek(446)
            f.write(bytes(16))
        inspector = format_inspector.detect_file_format(path)
        self.assertRaises(format_inspector.SafetyCheckFailed,
                          inspector.safety_check)
