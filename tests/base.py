"""The base of every test class of ours (tests/unit, functional, host).

It reads tox.ini's variables: ``OS_TEST_TIMEOUT`` (seconds a test may
take before it fails with a timeout: a hung test fails instead of
holding CI until the job's own limit), ``OS_STDOUT_CAPTURE`` and
``OS_STDERR_CAPTURE`` (a test's output becomes a detail of its result,
shown with its traceback when it fails) and ``OS_LOG_CAPTURE`` (likewise
its log records; ``OS_DEBUG`` sets their level). oslotest's fixtures do
the reading, as in every OpenStack project.

Not oslotest's ``BaseTestCase`` itself: it also gives each test a
temporary directory of its own as ``tempfile``'s default and a
temporary ``HOME``, both removed when the test ends. A lab host
(tests/labhost) outlives the test that boots it, its working files in
the temporary directory and its emulator in ``~/.cache``, so the host
tier would lose them after its first test.

Classes built on nova's test bases keep nova's: it reads the same
variables.
"""

from oslotest import log
from oslotest import output
from oslotest import timeout
import testtools


class TestCase(testtools.TestCase):
    """A test with the timeout and the capture tox.ini asks for."""

    def setUp(self):
        super().setUp()
        # The timeout first, so that it also covers the set-ups below
        # and the subclass's own.
        self.useFixture(timeout.Timeout())
        self.useFixture(output.CaptureOutput())
        self.useFixture(log.ConfigureLogging())
