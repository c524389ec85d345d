"""nova's own functional test modules, as nova ships them, our plugins on.

An operator enables our plugins by adding them to nova's defaults in
nova.conf; nothing else in nova changes. These suites do exactly that and
nothing more: each loads one of nova's test modules unmodified (no
subclass, no skipped or replaced test) and, around each of its tests,
sets the *defaults* of ``[filter_scheduler] available_filters``,
``enabled_filters`` and ``weight_classes`` to nova's own plus ours. A
test that overrides an option itself (``self.flags``, nova's
``HostNameWeigherFixture``) still wins, as it would over an operator's
nova.conf; nova's libvirt tests append their own filters to ours.

Defaults, not overrides, and set again before every test: nova's
configuration fixture resets every default and override when a test ends
(``ConfigOpts.reset``), so values set once at import would be gone from
the second test on.

``NUMA_POLICY_NOVA_PLUGINS=off`` loads the same tests without our
plugins: nova's stock outcome in the same environment, to compare with.
"""

import importlib
import os
import unittest

from oslo_config import cfg
import testtools

from nova.conf import scheduler as nova_scheduler_conf

CONF = cfg.CONF
GROUP = 'filter_scheduler'

OUR_FILTER_LOADER = 'placement_filters.all_filters'
OUR_FILTERS = ('NumaPolicyFilter', 'NumaNicLocalityFilter',
               'NumaNodeLoadFilter')
OUR_WEIGHER_LOADER = 'placement_filters.all_weighers'

PLUGINS_SWITCH = 'NUMA_POLICY_NOVA_PLUGINS'


def plugins_enabled():
    """False when nova's stock outcome is asked for (the switch is off)."""
    return os.environ.get(PLUGINS_SWITCH, 'on').lower() != 'off'


def nova_default(name):
    """nova's own default of a ``[filter_scheduler]`` option, as shipped."""
    for opt in nova_scheduler_conf.filter_scheduler_opts:
        if opt.name == name:
            return list(opt.default)
    raise LookupError(f'nova has no [{GROUP}] {name}')


def operator_defaults():
    """``[filter_scheduler]`` as an operator enabling our plugins sets it."""
    return {
        'available_filters': (nova_default('available_filters')
                              + [OUR_FILTER_LOADER]),
        'enabled_filters': nova_default('enabled_filters') + list(OUR_FILTERS),
        'weight_classes': (nova_default('weight_classes')
                           + [OUR_WEIGHER_LOADER]),
    }


def enable_our_plugins(result=None):
    for name, value in operator_defaults().items():
        CONF.set_default(name, value, group=GROUP)


def restore_nova_defaults(result=None):
    # nova's fixture has done it if the test got as far as setting it up;
    # a test that did not must not hand our defaults to the next one.
    for name in operator_defaults():
        CONF.clear_default(name, group=GROUP)


def with_our_plugins(case):
    """``case``, run with our plugins in nova's scheduler configuration."""
    return testtools.DecorateTestCaseResult(
        case, lambda result: result,
        before_run=enable_our_plugins, after_run=restore_nova_defaults)


def load_nova_module(loader, module_name, pattern=None):
    """Every test of nova's ``module_name``, loaded as nova loads them."""
    module = importlib.import_module(module_name)
    suite = loader.loadTestsFromModule(module, pattern=pattern)
    if not plugins_enabled():
        return suite
    return unittest.TestSuite(
        with_our_plugins(case) for case in testtools.iterate_tests(suite))


def load_nova_modules(loader, module_names, pattern=None):
    """Every test of each of nova's ``module_names``, in one suite."""
    suite = unittest.TestSuite()
    for name in module_names:
        suite.addTests(load_nova_module(loader, name, pattern))
    return suite


def loader_of(*module_names):
    """A module's ``load_tests`` that loads nova's ``module_names``."""
    def load_tests(loader, standard_tests, pattern):
        standard_tests.addTests(
            load_nova_modules(loader, module_names, pattern))
        return standard_tests
    return load_tests
