"""The house's rules: which room may import which, read from the code.

Every module of the three shipped packages is parsed (imports inside
functions included) and each import of one of our rooms, or of
``nova.tests``, is checked against :data:`MAY_IMPORT`. The same table is
the map in ``doc/source/architecture.rst``; a test below keeps the two
in step.
"""

import ast
import pathlib
import re
import sys

import testtools

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ('nova_numa_policy', 'agent', 'placement_filters')

# Modules of the base: contracts and pure decisions.
BASE_MODULES = ('exception', 'errors', 'policy', 'scope', 'topology',
                'locality', 'backend', 'enforcement', 'execution',
                'messaging', 'reporting', 'objects', 'loops', 'scheduling',
                'api')
CLIENT_MODULES = ('restclient', 'osc', 'dashboard', 'tempest_plugin')

# Room -> rooms it may import (its own room always).
MAY_IMPORT = {
    'conf': set(),
    'base': {'conf'},
    'virt': {'base', 'conf'},
    'agent': {'base', 'conf', 'virt'},
    'placement_filters': {'base', 'conf'},
    'collector': {'base', 'conf'},
    'rest': {'base', 'conf', 'collector'},
    'clients': {'base', 'conf'},
    'lab': {'base', 'conf', 'virt', 'agent', 'placement_filters',
            'collector', 'rest', 'clients'},
}
# Third-party packages the configuration room may import besides the
# standard library: it is read by every service and by the generators.
CONF_MAY_IMPORT = {'oslo_config'}


def room_of(module):
    """The room a dotted module name belongs to, or None if not ours."""
    parts = module.split('.')
    if parts[0] in ('agent', 'placement_filters'):
        return parts[0]
    if parts[0] != 'nova_numa_policy':
        return None
    if len(parts) == 1:
        return 'base'
    top = parts[1]
    if top in BASE_MODULES:
        return 'base'
    if top in CLIENT_MODULES:
        return 'clients'
    if top in ('conf', 'virt', 'collector', 'rest', 'lab'):
        return top
    raise AssertionError(f'{module}: in no room; add it to test_layers '
                         'and to the architecture page')


def imported_names(tree):
    """Every module name an import statement of ``tree`` names."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level:
                raise AssertionError('relative import of ' + node.module)
            yield node.module
            # "from pkg import mod" names the module pkg.mod.
            yield from (f'{node.module}.{a.name}' for a in node.names)


def modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob('*.py')):
            parts = path.relative_to(ROOT).with_suffix('').parts
            if parts[-1] == '__init__':
                parts = parts[:-1]
            yield '.'.join(parts), path


def is_test_module(module):
    # Test code shipped inside the plugins (Horizon's and tempest's test
    # packages) follows the rules of the room it tests.
    return '.tests' in module


def violations(module, names):
    """Why each import in ``names`` breaks a rule for ``module``."""
    room = room_of(module)
    allowed = MAY_IMPORT[room] | {room}
    found = []
    for name in names:
        if (name == 'nova.tests' or name.startswith('nova.tests.')) \
                and room != 'lab':
            found.append(f'{module} imports {name}: only the lab may')
            continue
        target = room_of(name)
        if target is None:
            top = name.split('.')[0]
            if (room == 'conf' and top not in sys.stdlib_module_names
                    and top not in CONF_MAY_IMPORT):
                found.append(f'{module} imports {name}: configuration '
                             'imports oslo.config only')
            continue
        if target not in allowed:
            found.append(f'{module} ({room}) imports {name} ({target})')
    return found


class LayersTest(testtools.TestCase):

    def test_no_import_runs_up_the_house(self):
        found = []
        for module, path in modules():
            if is_test_module(module):
                continue
            names = set(imported_names(ast.parse(path.read_text())))
            found.extend(violations(module, sorted(names)))
        self.assertEqual([], found)

    def test_the_check_catches_each_kind_of_breach(self):
        # The rules above are only worth having if they fail.
        self.assertEqual(1, len(violations(
            'nova_numa_policy.loops.runner', ['agent.enforcer'])))
        self.assertEqual(1, len(violations(
            'nova_numa_policy.conf.agent', ['agent.privsep'])))
        self.assertEqual(1, len(violations(
            'nova_numa_policy.conf.loops', ['numpy'])))
        self.assertEqual(1, len(violations(
            'nova_numa_policy.virt.driver', ['nova.tests.fixtures'])))
        self.assertEqual(1, len(violations(
            'placement_filters.cache', ['nova_numa_policy.lab.sim'])))
        self.assertEqual(1, len(violations(
            'agent.service.manager', ['placement_filters.cache'])))
        self.assertEqual([], violations(
            'nova_numa_policy.lab.sandbox.nova',
            ['nova.tests.fixtures', 'agent.service.manager']))
        self.assertEqual([], violations(
            'nova_numa_policy.conf.agent', ['os', 'oslo_config.cfg']))

    def test_the_architecture_page_lists_every_room_and_rule(self):
        page = (ROOT / 'doc/source/architecture.rst').read_text()
        table = page.split('.. rooms-begin')[1].split('.. rooms-end')[0]
        rows = {}
        for line in table.splitlines():
            match = re.match(r'\s*``(\w+)``\s+(.*)$', line)
            if match:
                rows[match.group(1)] = set(re.findall(r'``(\w+)``',
                                                      match.group(2)))
        self.assertEqual(MAY_IMPORT, rows)
