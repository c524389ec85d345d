"""The house's rules: which room may import which, read from the code.

Every module of the three shipped packages and of the lab (a
distribution of its own, ``lab/``) is parsed (imports inside functions
included) and each import of one of our rooms, of ``nova.tests``, or of
what only an extra or the lab installs (numpy, highspy), is checked
against :data:`MAY_IMPORT` and :data:`EXTRA_IMPORTS`. A room is a
folder: the folder a module stands in says its room, so the tree a
reader opens is the map. The same table is the map in
``doc/source/architecture.rst``; a test below keeps the two in step.
"""

import ast
import pathlib
import re
import sys

from tests import base as test_base


ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ('nova_numa_policy', 'agent', 'placement_filters')
# The lab's package and the folder it stands in.
LAB_PACKAGE = 'numa_policy_lab'
LAB_DIR = ROOT / 'lab' / LAB_PACKAGE

# Folders of nova_numa_policy/ that are rooms of their own (the folder's
# name is the room's), and those that make up the clients' room.
BASE_ROOMS = ('contracts', 'objects', 'decisions', 'scheduling', 'loops',
              'api')
SERVICE_ROOMS = ('conf', 'virt', 'collector', 'rest', 'launcher')
CLIENT_MODULES = ('restclient', 'osc', 'dashboard', 'tempest_plugin')
AGENT_ROOMS = ('sensors', 'privsep', 'backend', 'service')
PRIVILEGED_ROOM = 'agent.privsep'

# Room -> rooms it may import (its own room always). Read from the top
# down: nothing below a room imports it.
MAY_IMPORT = {
    'conf': set(),
    'contracts': set(),
    'objects': {'contracts', 'conf'},
    'decisions': {'contracts', 'objects'},
    'scheduling': {'contracts', 'objects'},
    'loops': {'contracts', 'decisions', 'conf'},
    'api': {'contracts'},
    'virt': {'contracts', 'decisions', 'conf'},
    'agent.sensors': {'contracts'},
    # The privileged room reads the kernel and nothing else of ours.
    'agent.privsep': {'agent.sensors'},
    'agent.backend': {'agent.privsep', 'agent.sensors', 'contracts',
                      'decisions', 'virt'},
    # oslo.service's launch of a service, and nothing of ours.
    'launcher': set(),
    'agent.service': {'agent.backend', 'agent.privsep', 'agent.sensors',
                      'contracts', 'objects', 'decisions', 'loops', 'conf',
                      'launcher'},
    'placement_filters': {'contracts', 'objects', 'scheduling', 'conf'},
    'collector': {'contracts', 'objects', 'conf', 'launcher'},
    'rest': {'contracts', 'objects', 'scheduling', 'conf', 'collector'},
    'clients': set(),
    'lab': {'conf', 'contracts', 'objects', 'decisions', 'scheduling',
            'loops', 'api', 'virt', 'agent.sensors', 'agent.privsep',
            'agent.backend', 'agent.service', 'placement_filters',
            'collector', 'rest', 'clients', 'launcher'},
}
# Third-party packages that only an extra (setup.cfg [extras]) or the lab
# (lab/pyproject.toml) installs -> the rooms that may import them. A plain
# `pip install .` into nova's environment brings neither.
AGENT_EXTRA_ROOMS = {'loops', 'agent.sensors', 'agent.privsep',
                     'agent.backend', 'agent.service', 'lab'}
EXTRA_IMPORTS = {'numpy': AGENT_EXTRA_ROOMS, 'highspy': {'lab'}}
# Third-party packages the configuration room may import besides the
# standard library: it is read by every service and by the generators.
CONF_MAY_IMPORT = {'oslo_config'}


def room_of(module):
    """The room a dotted module name belongs to, or None if not ours."""
    parts = module.split('.')
    if parts[0] == 'placement_filters':
        return parts[0]
    if parts[0] == LAB_PACKAGE:
        return 'lab'
    if parts[0] == 'agent':
        if len(parts) > 1 and parts[1] in AGENT_ROOMS:
            return 'agent.' + parts[1]
        raise AssertionError(f'{module}: in no room of the agent; put it '
                             f'in one of agent/{{{",".join(AGENT_ROOMS)}}}')
    if parts[0] != 'nova_numa_policy':
        return None
    top = parts[1] if len(parts) > 1 else None
    if top in BASE_ROOMS + SERVICE_ROOMS:
        return top
    if top in CLIENT_MODULES:
        return 'clients'
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
    roots = [(ROOT, ROOT / package) for package in PACKAGES]
    roots.append((LAB_DIR.parent, LAB_DIR))
    for base, root in roots:
        for path in sorted(root.rglob('*.py')):
            parts = path.relative_to(base).with_suffix('').parts
            if parts[-1] == '__init__':
                parts = parts[:-1]
            yield '.'.join(parts), path


def is_test_module(module):
    # Test code shipped inside the plugins (Horizon's and tempest's test
    # packages) follows the rules of the room it tests.
    return '.tests' in module


def shipped_modules():
    """(module, path) of every module that stands in a room."""
    for module, path in modules():
        if not is_test_module(module) and not is_package_face(module):
            yield module, path


def is_package_face(module):
    # A package's own name ("from agent import privsep") is its room's
    # face; importing it says nothing a module's name would not.
    return module in ('agent', 'nova_numa_policy')


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
        if is_package_face(name):
            continue
        target = room_of(name)
        if target is None:
            top = name.split('.')[0]
            if room not in EXTRA_IMPORTS.get(top, {room}):
                found.append(f'{module} ({room}) imports {name}: only '
                             f'{", ".join(sorted(EXTRA_IMPORTS[top]))} '
                             'may (an extra or the lab installs it)')
            elif (room == 'conf' and top not in sys.stdlib_module_names
                    and top not in CONF_MAY_IMPORT):
                found.append(f'{module} imports {name}: configuration '
                             'imports oslo.config only')
            continue
        if target not in allowed:
            found.append(f'{module} ({room}) imports {name} ({target})')
    return found


def is_privsep_entrypoint(decorator):
    """``@<context>.entrypoint``: oslo.privsep's mark of a privileged call."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(target, ast.Attribute) and target.attr == 'entrypoint'


def makes_privsep_context(node):
    """A call of ``PrivContext(...)``, however it was imported."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(
        func, 'id', None)
    return name == 'PrivContext'


def privileged_places(tree):
    """(line, what) of each privsep entry point or context in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(is_privsep_entrypoint(d) for d in node.decorator_list):
                yield node.lineno, f'entry point {node.name}'
        elif makes_privsep_context(node):
            yield node.lineno, 'privsep context'
        elif (isinstance(node, ast.Call)
              and isinstance(node.func, ast.Attribute)
              and node.func.attr == 'entrypoint'):
            # context.entrypoint(func): the decorator called by hand.
            yield node.lineno, 'entry point made by a call'


def privileged_outside_the_room(module, tree):
    if room_of(module) == PRIVILEGED_ROOM:
        return []
    return [f'{module}:{line}: {what} outside agent/privsep/'
            for line, what in privileged_places(tree)]


class LayersTest(test_base.TestCase):

    def test_no_import_runs_up_the_house(self):
        found = []
        for module, path in shipped_modules():
            names = set(imported_names(ast.parse(path.read_text())))
            found.extend(violations(module, sorted(names)))
        self.assertEqual([], found)

    def test_every_module_stands_in_a_room(self):
        # room_of raises for a module in no room: a new loose module in
        # the base or the agent must choose its folder.
        for module, _ in shipped_modules():
            self.assertIsNotNone(room_of(module), module)

    def test_every_privileged_entry_point_lives_in_the_privileged_room(self):
        # A reviewer audits one folder: every function oslo.privsep runs
        # in a daemon, and every context that starts one, is there.
        found = []
        entry_points = 0
        for module, path in shipped_modules():
            tree = ast.parse(path.read_text())
            found.extend(privileged_outside_the_room(module, tree))
            if room_of(module) == PRIVILEGED_ROOM:
                entry_points += sum(what.startswith('entry point')
                                    for _, what in privileged_places(tree))
        self.assertEqual([], found)
        # The search itself must see the room's entry points, or the
        # check above passes on nothing.
        self.assertGreater(entry_points, 0)

    def test_the_check_catches_each_kind_of_breach(self):
        # The rules above are only worth having if they fail.
        breaches = [
            ('nova_numa_policy.loops.runner', 'agent.service.manager'),
            ('nova_numa_policy.conf.agent', 'agent.privsep'),
            ('nova_numa_policy.conf.loops', 'numpy'),
            ('nova_numa_policy.virt.driver', 'nova.tests.fixtures'),
            ('placement_filters.cache', 'numa_policy_lab.sim'),
            ('nova_numa_policy.rest.app', 'numa_policy_lab'),
            # numpy is the agent's extra, highspy the lab's alone.
            ('placement_filters.weights', 'numpy'),
            ('nova_numa_policy.scheduling.scoring', 'numpy'),
            ('nova_numa_policy.loops.brm', 'highspy'),
            ('agent.service.manager', 'placement_filters.cache'),
            # The base imports no loop: loops are plugins above it.
            ('nova_numa_policy.decisions.reporting',
             'nova_numa_policy.loops.auto'),
            ('nova_numa_policy.contracts.policy',
             'nova_numa_policy.decisions.enforcement'),
            ('nova_numa_policy.objects.report',
             'nova_numa_policy.decisions.reporting'),
            ('nova_numa_policy.api.extra_specs',
             'nova_numa_policy.decisions.enforcement'),
            ('agent.sensors.sysfs', 'agent.privsep.trust'),
            ('agent.privsep.pagemover', 'agent.backend.pageplan'),
            ('agent.backend.libvirt_backend', 'agent.service.manager'),
        ]
        for module, name in breaches:
            self.assertEqual(1, len(violations(module, [name])),
                             f'{module} -> {name}')
        self.assertEqual([], violations(
            'numa_policy_lab.sandbox.nova',
            ['nova.tests.fixtures', 'agent.service.manager', 'highspy']))
        self.assertEqual([], violations(
            'nova_numa_policy.loops.brm', ['numpy']))
        self.assertEqual([], violations(
            'nova_numa_policy.conf.agent', ['os', 'oslo_config.cfg']))
        self.assertRaises(AssertionError, room_of, 'agent.loose_module')
        self.assertRaises(AssertionError, room_of,
                          'nova_numa_policy.loose_module')

    def test_the_entry_point_check_sees_each_form(self):
        source = '\n'.join([
            'from oslo_privsep import priv_context',
            'ctx = priv_context.PrivContext("agent", cfg_section="x")',
            '@ctx.entrypoint',
            'def decorated(): pass',
            'def plain(): pass',
            'called = ctx.entrypoint(plain)',
        ])
        found = privileged_outside_the_room('agent.backend.anything',
                                            ast.parse(source))
        self.assertEqual(3, len(found), found)
        self.assertEqual([], privileged_outside_the_room(
            'agent.privsep.anything', ast.parse(source)))

    def test_the_architecture_page_lists_every_room_and_rule(self):
        page = (ROOT / 'doc/source/architecture.rst').read_text()
        table = page.split('.. rooms-begin')[1].split('.. rooms-end')[0]
        rows = {}
        for line in table.splitlines():
            match = re.match(r'\s*``([\w.]+)``\s+(.*)$', line)
            if match:
                rows[match.group(1)] = set(re.findall(r'``([\w.]+)``',
                                                      match.group(2)))
        self.assertEqual(MAY_IMPORT, rows)
