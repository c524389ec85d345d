"""The lab host's own code that runs without one: paths it binds, polling."""

import os
import sys
import tempfile

import fixtures
import testtools

from nova_numa_policy.loops import runner
from tests import base as test_base
from tests.labhost import machine
from tests.labhost import server


class ScratchPathsTest(test_base.TestCase):

    def test_only_the_outermost_path_under_scratch_is_kept(self):
        self.assertEqual(
            ['/tmp/ci/repo'],
            machine.under_scratch(['/tmp/ci/repo', '/tmp/ci/repo/.tox/host',
                                   '/usr/bin/python3', '/tmpfoo/x']))

    def test_var_tmp_is_scratch_too(self):
        self.assertEqual(['/var/tmp/a'], machine.under_scratch(['/var/tmp/a']))

    def test_a_closed_directory_above_a_kept_clone_is_not_reopened(self):
        # mkdtemp makes a directory only its owner enters, as CI's clones.
        scratch = tempfile.mkdtemp(dir='/tmp')
        self.addCleanup(os.rmdir, scratch)
        repo = os.path.join(scratch, 'repo')
        os.mkdir(repo)
        self.addCleanup(os.rmdir, repo)
        self.assertIn(scratch, machine.closed_directories([repo]))
        self.assertNotIn(scratch, machine.reopened_directories([repo]))

    def test_a_closed_directory_elsewhere_is_reopened(self):
        home = tempfile.mkdtemp(dir=os.path.expanduser('~'))
        self.addCleanup(os.rmdir, home)
        self.assertIn(home, machine.reopened_directories(
            [os.path.join(home, 'venv', 'bin', 'python')]))


class AgentConfigTest(test_base.TestCase):
    """The host tier's agent configuration, as its tests extend it."""

    def test_options_appended_by_tests_land_in_the_loops_section(self):
        # test_loops and test_locality append loop thresholds to it; in
        # another section the agent would silently run on the defaults.
        from oslo_config import cfg

        from tests.host import base
        text = base.LabTestCase.agent_config(
            None, loops=('carrefour',)) + 'pages_per_second = 1000\n'
        sections = {}
        with tempfile.NamedTemporaryFile('w', suffix='.conf') as f:
            f.write(text)
            f.flush()
            cfg.ConfigParser(f.name, sections).parse()
        self.assertEqual(['1000'],
                         sections['numa_policy_loops']['pages_per_second'])


# What PreloadTest's named function was called with.
PRELOADED = []


def record_a_preload():
    PRELOADED.append('called')


class PreloadTest(test_base.TestCase):
    """What the server holds before it forks, every call has."""

    def test_a_module_is_imported_and_a_named_function_called(self):
        self.addCleanup(PRELOADED.clear)
        self.addCleanup(sys.modules.pop, 'xml.dom.pulldom', None)
        sys.modules.pop('xml.dom.pulldom', None)
        server.preload(['xml.dom.pulldom',
                        f'{__name__}:record_a_preload'])
        self.assertIn('xml.dom.pulldom', sys.modules)
        self.assertEqual(['called'], PRELOADED)

    def test_the_lab_hosts_calls_run_and_read_the_loops(self):
        called = [name for name in machine.DEFAULT_PRELOAD if ':' in name]
        self.assertEqual(['nova_numa_policy.loops.runner:registry'], called)
        server.preload(called)
        self.assertEqual(1, runner._entry_points.cache_info().currsize)
        self.assertIn('carrefour', runner.registry())


class ServerPollingTest(test_base.TestCase):
    """The lab host's request server polls fast only while talked to."""

    def test_it_backs_off_while_idle_down_to_its_slowest(self):
        interval, seen = server.POLL_INTERVAL, []
        for _ in range(20):
            interval = server.next_poll_interval(interval, active=False)
            seen.append(interval)
        self.assertEqual(sorted(seen), seen)
        self.assertGreater(seen[1], seen[0])
        self.assertEqual(server.IDLE_POLL_INTERVAL, seen[-1])
        # A test's next request after a pause waits under a second.
        self.assertLess(server.IDLE_POLL_INTERVAL, 1.0)

    def test_a_request_brings_it_back_to_its_fastest(self):
        self.assertEqual(server.POLL_INTERVAL, server.next_poll_interval(
            server.IDLE_POLL_INTERVAL, active=True))


class ReadRequestTest(test_base.TestCase):
    """A bad request is answered with an error, never ends the server."""

    def _file(self, name, text):
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        path = os.path.join(directory.name, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def test_a_request_without_an_id_is_named_by_its_file(self):
        request, error = server.read_request(self._file(
            'x1.json', '{"kind": "sh", "cmd": "true"}'))
        self.assertIsNone(error)
        self.assertEqual('x1', request['id'])

    def test_a_request_keeps_its_own_id(self):
        request, error = server.read_request(self._file(
            '7.json', '{"id": 7, "kind": "call", "target": "m:f"}'))
        self.assertEqual((7, None), (request['id'], error))

    def test_what_is_not_a_request_gets_an_error_under_its_name(self):
        for text, why in (('{"kind": "sh"', 'not JSON'),
                          ('[1, 2]', 'not a JSON object'),
                          ('{"kind": "rm"}', "unknown kind 'rm'")):
            request, error = server.read_request(self._file('bad.json', text))
            self.assertEqual('bad', request['id'])
            self.assertIn(why, error)


class UndoneOnErrorTest(test_base.TestCase):

    def test_a_failed_block_is_undone_and_its_error_raised(self):
        undone = []
        with testtools.ExpectedException(ValueError):
            with machine.undone_on_error(lambda: undone.append(True)):
                raise ValueError('boot failed')
        self.assertEqual([True], undone)

    def test_an_interrupted_block_is_undone_too(self):
        undone = []
        with testtools.ExpectedException(KeyboardInterrupt):
            with machine.undone_on_error(lambda: undone.append(True)):
                raise KeyboardInterrupt()
        self.assertEqual([True], undone)

    def test_a_block_that_ends_well_is_kept(self):
        undone = []
        with machine.undone_on_error(lambda: undone.append(True)):
            pass
        self.assertEqual([], undone)


class AcceleratorTest(test_base.TestCase):

    CPUINFO = ('processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\n'
               'flags\t\t: fpu sse4_2 {extra}popcnt\nbugs\t\t: spectre_v1\n')

    def test_vt_x_or_svm_is_hardware_virtualisation(self):
        self.assertTrue(machine.has_virtualisation(
            self.CPUINFO.format(extra='vmx ')))
        self.assertTrue(machine.has_virtualisation(
            self.CPUINFO.format(extra='svm ')))

    def test_neither_flag_is_none(self):
        # "vmx flags" lines and flags that merely contain the letters do
        # not count.
        text = self.CPUINFO.format(extra='vmxnet ') + 'vmx flags\t: vnmi\n'
        self.assertFalse(machine.has_virtualisation(text))

    def test_no_probe_boot_where_the_cpu_cannot_virtualise(self):
        cpuinfo = os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'cpuinfo')
        with open(cpuinfo, 'w') as f:
            f.write(self.CPUINFO.format(extra=''))
        self.useFixture(fixtures.MockPatch('os.access', return_value=True))
        self.assertFalse(machine._kvm_usable(cpuinfo))
        with open(cpuinfo, 'w') as f:
            f.write(self.CPUINFO.format(extra='vmx '))
        self.assertTrue(machine._kvm_usable(cpuinfo))
