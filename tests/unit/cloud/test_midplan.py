"""How the libvirtd scenario reads a plan's end in the agent's log."""

import fixtures

from tests import base as test_base
from tests.cloud.faults import midplan

UUID = '6f1c1bd2-7d7a-4f0e-9d55-2d1f1b0a9c11'
OTHER = '0b3d7c44-1b1e-4c0a-8f7e-7a1e7b6f2e90'
PREFIX = '2026-11-29 11:00:00.000 123 INFO nova_numa_policy.x [-] '


def lines(*texts):
    return [PREFIX + text + '\n' for text in texts]


class PlanReaderTest(test_base.TestCase):

    def read(self, texts, steps=3):
        reader = midplan.PlanReader(UUID, steps)
        taken = [reader.read(line) for line in lines(*texts)]
        return reader, taken

    def test_every_step_logged_is_applied(self):
        reader, _ = self.read([
            f'PinVcpu on {UUID}: policy: home: keep vCPUs on nodes [1]',
            f'PinVcpu on {UUID}: policy: home: keep vCPUs on nodes [1]',
            f'PinEmulator on {UUID}: policy: home: keep vCPUs on nodes [1]'])
        self.assertEqual('applied', reader.ending)
        self.assertEqual(3, reader.done)

    def test_a_step_short_is_not_an_ending(self):
        reader, _ = self.read([
            f'PinVcpu on {UUID}: policy: home: keep vCPUs on nodes [1]'])
        self.assertIsNone(reader.ending)

    def test_a_failed_step_ends_once_every_change_is_undone(self):
        reader, _ = self.read([
            f'PinVcpu on {UUID}: policy: home: x',
            f'PinVcpu on {UUID} failed (libvirtd went away); rolling back '
            f'2 change(s)',
            f'Roll back on {UUID} interrupted (lost); 2 step(s) left for '
            f'the next period',
            f'PinVcpu on {UUID}: roll back: policy: home: x'])
        self.assertIsNone(reader.ending)
        reader.read(lines(
            f'PinVcpu on {UUID}: roll back: policy: home: x')[0])
        self.assertEqual('rolled back', reader.ending)
        self.assertEqual(1, reader.done)

    def test_a_roll_back_given_up_is_its_ending(self):
        reader, _ = self.read([
            f'PinVcpu on {UUID}: policy: home: x',
            f'PinVcpu on {UUID} failed (lost); rolling back 2 change(s)',
            f'Gave up rolling back {UUID} after 5 periods: 2 step(s) were '
            f'not carried out'])
        self.assertEqual('roll back abandoned', reader.ending)

    def test_other_guests_and_lines_are_not_taken(self):
        reader, taken = self.read([
            f'PinVcpu on {OTHER}: policy: home: x',
            'Report sent',
            f'Instance {UUID}: home not enforced now: busy'])
        self.assertEqual([False, False, False], taken)
        self.assertEqual([], reader.lines)


class LoggedSecondsTest(test_base.TestCase):

    def test_from_the_first_line_to_the_last(self):
        self.assertEqual(11.5, midplan.logged_seconds([
            '2026-11-29 10:57:45.331 412 WARNING x [-] failed',
            '2026-11-29 10:57:50.000 412 INFO x [-] between',
            '2026-11-29 10:57:56.831 412 INFO x [-] rolled back']))


class LinesTest(test_base.TestCase):

    def test_a_line_is_given_once_whole(self):
        path = self.useFixture(fixtures.TempDir()).join('agent.log')
        with open(path, 'w') as writer, open(path) as log:
            whole = midplan._lines(log)
            self.assertIsNone(next(whole))
            writer.write('half a li')
            writer.flush()
            self.assertIsNone(next(whole))
            writer.write('ne\nnext\n')
            writer.flush()
            self.assertEqual('half a line\n', next(whole))
            self.assertEqual('next\n', next(whole))
            self.assertIsNone(next(whole))


class InotifyTest(test_base.TestCase):

    def test_a_write_wakes_the_waiter_once(self):
        path = self.useFixture(fixtures.TempDir()).join('agent.log')
        with open(path, 'w') as writer:
            watcher = midplan.Inotify(path)
            self.addCleanup(watcher.close)
            self.assertFalse(watcher.wait(0))
            writer.write('a line\n')
            writer.flush()
            self.assertTrue(watcher.wait(10))
            self.assertFalse(watcher.wait(0))
