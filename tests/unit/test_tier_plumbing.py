"""How the tiers are run and timed: the host tier's workers, CI's table
and what it prints of a failure."""

import ast
import importlib.util
import os
import re

import yaml

from tests import base as test_base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
WORKERS = os.path.join(ROOT, 'tests', 'host', 'workers.yaml')
HOST_TESTS = os.path.join(ROOT, 'tests', 'host')
# Each tier's CI subset (stestr --include-list) and the modules whose
# tests it picks from: (test id prefix, file) pairs.
SUBSETS = {
    'tests/cloud/ci.txt': ('tests.cloud', 'tests.cloud.faults'),
    'tests/host/ci.txt': ('tests.host',),
    'tests/functional/nova/ci.txt': ('nova.tests.functional.libvirt',),
}


def _load_ci(name):
    spec = importlib.util.spec_from_file_location(
        f'ci_{name}', os.path.join(ROOT, '.ci', f'{name}.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class HostWorkersTest(test_base.TestCase):
    """Every host test module runs, on exactly one of the two workers."""

    def test_each_module_is_matched_by_exactly_one_worker(self):
        with open(WORKERS) as f:
            workers = [w['worker'] for w in yaml.safe_load(f)]
        self.assertEqual(2, len(workers))
        modules = sorted(name[:-3] for name in os.listdir(HOST_TESTS)
                         if name.startswith('test_') and name.endswith('.py'))
        self.assertGreater(len(modules), 5)
        for module in modules:
            test_id = f'tests.host.{module}.SomeTest.test_something'
            matched = [i for i, regexes in enumerate(workers)
                       if any(re.search(r, test_id) for r in regexes)]
            self.assertEqual(1, len(matched), (module, matched))

    def test_a_module_named_like_another_is_not_taken_for_it(self):
        with open(WORKERS) as f:
            first, second = [w['worker'] for w in yaml.safe_load(f)]
        test_id = 'tests.host.test_locality_more.SomeTest.test_something'
        self.assertFalse(any(re.search(r, test_id) for r in first))
        self.assertTrue(any(re.search(r, test_id) for r in second))


TOX_OUTPUT = """\
unit: install_deps> python -I -m pip install -r requirements.txt
unit: commands[0]> stestr --test-path=./tests/unit run
======
Totals
======
 - Passed: 1030
 - Failed: 2
 - Skipped: 3
functional: commands[0]> stestr run --exclude-regex test_rabbitmq
 - Passed: 80
functional: commands[1]> stestr run --serial test_rabbitmq
 - Passed: 2
horizon: commands[0]> tests/horizon/run.sh
Ran 12 tests in 40.0s

OK (skipped=1)
docs: commands[0]> sphinx-build -W doc/source doc/build/html
  unit: FAIL code 1 (118.20=setup[4.10]+cmd[114.10] seconds)
  functional: OK (201.31=setup[3.00]+cmd[180.10,18.21] seconds)
  horizon: OK (95.70=setup[30.20]+cmd[65.50] seconds)
  docs: OK (40.00=setup[2.00]+cmd[38.00] seconds)
  evaluation failed :( (455.21 seconds)
"""


class TierTableTest(test_base.TestCase):
    """What .ci/run prints of each tier: its tests and its seconds."""

    def setUp(self):
        super().setUp()
        self.tiers = _load_ci('tiers')

    def test_each_tiers_tests_and_seconds(self):
        tallied = self.tiers.tally(TOX_OUTPUT.splitlines())
        self.assertEqual(
            {'unit': (1035, 118.2, 'FAIL'), 'functional': (82, 201.31, 'OK'),
             'horizon': (12, 95.7, 'OK'), 'docs': (None, 40.0, 'OK')},
            {name: (t['tests'], t['seconds'], t['status'])
             for name, t in tallied.items()})

    def test_the_table_has_a_row_per_tier_and_the_whole_run(self):
        text = self.tiers.table(self.tiers.tally(TOX_OUTPUT.splitlines()),
                                1320)
        rows = [line.split() for line in text.splitlines()]
        self.assertEqual(['tier', 'status', 'tests', 'seconds'], rows[0])
        self.assertEqual(['unit', 'FAIL', '1035', '118'], rows[1])
        self.assertEqual(['docs', 'OK', '-', '40'], rows[4])
        self.assertEqual(['whole', 'run', '1320'], rows[-1])


# As stestr prints a failure (a captured log before the traceback) and
# Django's runner one, between passing tests.
FAILING_OUTPUT = """\
{0} tests.host.test_a.T.test_ok [1.2s] ... ok
{1} tests.host.test_a.T.test_moves [43.7s] ... FAILED

Captured agent-log:
~~~~~~~~~~~~~~~~~~~
    2026-11-28 INFO agent: Rebalancing loops started
a line of the log that no traceback has
ERROR: a log line, not a test

Captured traceback:
~~~~~~~~~~~~~~~~~~~
    Traceback (most recent call last):

      File "tests/host/test_a.py", line 7, in test_moves
    self.assertIn(x, y)

    testtools.matchers._impl.MismatchError: 'MovePages' not in []

{0} tests.host.test_a.T.test_after [2.0s] ... ok

==============================
Failed 1 tests - output below:
==============================

tests.host.test_a.T.test_moves
------------------------------

Captured traceback:
~~~~~~~~~~~~~~~~~~~
    the same traceback again
======================================================================
FAIL: test_panel (numa.tests.PanelTest.test_panel)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "numa/tests.py", line 3, in test_panel
    self.assertContains(response, 'node 0')
AssertionError: False is not true : Couldn't find 'node 0'

----------------------------------------------------------------------
Ran 17 tests in 30.1s
"""


class FailureReportTest(test_base.TestCase):
    """What .ci/run prints last of each failing test: why it failed."""

    def setUp(self):
        super().setUp()
        self.failures = _load_ci('failures')

    def test_each_failure_once_with_its_traceback_and_no_log(self):
        found = self.failures.failures(FAILING_OUTPUT.splitlines())
        self.assertEqual(['tests.host.test_a.T.test_moves',
                          'test_panel (numa.tests.PanelTest.test_panel)'],
                         list(found))
        moves = '\n'.join(found['tests.host.test_a.T.test_moves'])
        self.assertIn("MismatchError: 'MovePages' not in []", moves)
        self.assertNotIn('Rebalancing loops', moves)
        self.assertNotIn('the same traceback again', moves)
        panel = found['test_panel (numa.tests.PanelTest.test_panel)']
        self.assertEqual("AssertionError: False is not true : Couldn't "
                         "find 'node 0'", panel[-2])
        self.assertNotIn('Ran 17 tests in 30.1s', panel)

    def test_the_report_keeps_each_tracebacks_end_cut_to_width(self):
        found = {'t.test_x': ['    Traceback (most recent call last):']
                 + [f'  frame {n}' for n in range(20)]
                 + ['', 'AssertionError: ' + 'x' * 1000]}
        lines = self.failures.report(found, lines_per_failure=3,
                                     width=100).splitlines()
        self.assertEqual('FAILED t.test_x', lines[0])
        self.assertEqual('    ... (19 lines of the traceback above)',
                         lines[1])
        self.assertEqual(['  frame 18', '  frame 19'], lines[2:4])
        self.assertTrue(lines[4].startswith('AssertionError: xxx'))
        self.assertTrue(lines[4].endswith(' ... (1016 characters)'))
        self.assertEqual(100 + len(' ... (1016 characters)'),
                         len(lines[4]))

    def test_no_failure_prints_nothing(self):
        passing = '{0} tests.host.test_a.T.test_ok [1.2s] ... ok\n'
        self.assertEqual('', self.failures.report(
            self.failures.failures(passing.splitlines())))


def _subset_regexes(path):
    """The regexes of a CI subset file, as stestr reads them."""
    with open(os.path.join(ROOT, path)) as f:
        lines = [line.split('#')[0].strip() for line in f]
    return [re.compile(line) for line in lines if line]


def _package_files(package):
    """(module id, file) of each test_*.py module of ``package``.

    Found without importing them or their packages (nova's package
    monkey-patches the process it is imported in).
    """
    top, *rest = package.split('.')
    folder = os.path.join(
        os.path.dirname(importlib.util.find_spec(top).origin), *rest)
    return [(f'{package}.{name[:-3]}', os.path.join(folder, name))
            for name in sorted(os.listdir(folder))
            if name.startswith('test_') and name.endswith('.py')]


def _test_ids(module_id, path):
    """Every test id of a module's source: its classes' test methods.

    A class inherits the test methods of the module's classes it names
    as bases (DiscoveryFourNodesTest runs DiscoveryTest's tests).
    """
    with open(path) as f:
        tree = ast.parse(f.read())
    classes = {node.name: node for node in tree.body
               if isinstance(node, ast.ClassDef)}

    def methods(cls):
        own = {item.name for item in cls.body
               if isinstance(item, ast.FunctionDef)
               and item.name.startswith('test_')}
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in classes:
                own |= methods(classes[base.id])
        return own

    return [f'{module_id}.{name}.{method}'
            for name, cls in classes.items() for method in methods(cls)]


class CiSubsetTest(test_base.TestCase):
    """Each line of a tier's CI subset picks tests that exist."""

    def test_every_line_matches_a_test_and_not_every_test_is_picked(self):
        for path, packages in SUBSETS.items():
            ids = [test_id for package in packages
                   for module_id, source in _package_files(package)
                   for test_id in _test_ids(module_id, source)]
            self.assertGreater(len(ids), 10, path)
            regexes = _subset_regexes(path)
            self.assertGreater(len(regexes), 3, path)
            for regex in regexes:
                self.assertTrue(any(regex.search(i) for i in ids),
                                f'{path}: {regex.pattern} picks no test')
            picked = [i for i in ids if any(r.search(i) for r in regexes)]
            self.assertLess(len(picked), len(ids), path)
