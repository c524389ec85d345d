"""[numa_policy_loops]: options register and build the loops' configs."""

from importlib import metadata
import os
import sys

import fixtures
from oslo_config import cfg
from stevedore import extension

from nova_numa_policy.conf import loops as conf_loops
from nova_numa_policy.loops import auto
from nova_numa_policy.loops import enforce
from nova_numa_policy.loops import options as loop_options
from nova_numa_policy.loops import runner
from nova_numa_policy.loops import settings as loop_settings
from tests import base as test_base


class BuildConfigsTest(test_base.TestCase):

    def _conf(self, **overrides):
        conf = cfg.ConfigOpts()
        loop_options.register_opts(conf)
        conf([])
        # The OptGroup object is shared: undo overrides for the next test.
        self.addCleanup(conf.clear_override_all
                        if hasattr(conf, 'clear_override_all') else
                        lambda: [conf.clear_override(
                            o.name, group='numa_policy_loops')
                            for o in _group_opts()])
        for name, value in overrides.items():
            conf.set_override(name, value, group='numa_policy_loops')
        return conf

    def test_defaults_are_the_dataclass_defaults(self):
        s = loop_settings.build_configs(self._conf().numa_policy_loops)
        self.assertEqual(('carrefour', 'brm', 'vnuioa', 'auto', 'tiering'),
                         s.loops)
        self.assertEqual(auto.Config(), s.configs['auto'])
        self.assertEqual(runner.Budget(), s.budget)
        self.assertFalse(s.dry_run)
        self.assertTrue(s.guard.enabled)
        for name, cls in runner.registry().items():
            self.assertEqual(cls.Config(), s.configs[name], name)

    def test_each_option_reaches_its_config(self):
        conf = self._conf(
            carrefour_mc_imbalance=0.5, brm_probability_step=10,
            vnuioa_io_threshold=800.0, vnuioa_node_load=0.7, auto_low=0.8,
            auto_high=1.5, hysteresis_pin_count=4, pages_per_second=1000,
            vcpu_moves_per_period=3, dry_run=True, enabled_loops=['brm'],
            do_no_harm_tolerance=0.02)
        s = loop_settings.build_configs(conf.numa_policy_loops, period_s=10.0)
        self.assertEqual(0.5, s.configs['carrefour'].mc_imbalance)
        self.assertEqual(0.5, s.configs['auto'].page_rebalancer.mc_imbalance)
        self.assertEqual(10, s.configs['brm'].prob_step)
        self.assertEqual(800.0, s.configs['vnuioa'].io_threshold_rps)
        self.assertEqual(0.7, s.configs['vnuioa'].node_load_threshold)
        self.assertEqual(4, s.configs['vnuioa'].max_pin_count)
        self.assertEqual((0.8, 1.5, 4), (s.configs['auto'].low,
                                         s.configs['auto'].high,
                                         s.configs['auto'].max_pin_count))
        self.assertEqual(runner.Budget(1000, 3, 10.0), s.budget)
        self.assertEqual(('brm',), s.loops)
        self.assertTrue(s.dry_run)
        self.assertEqual(0.02, s.guard.tolerance)

    def test_auto_bounds_out_of_order_are_refused(self):
        conf = self._conf(auto_low=1.4, auto_high=1.3)
        self.assertRaises(ValueError, loop_settings.build_configs,
                          conf.numa_policy_loops)

    def test_unknown_loop_name_is_refused(self):
        conf = self._conf()
        self.assertRaises(ValueError, conf.set_override, 'enabled_loops',
                          ['sideways'], group='numa_policy_loops')

    def test_every_option_documents_possible_values(self):
        for opt in _group_opts():
            self.assertIn('Possible values', opt.help, opt.name)

    def test_a_loop_without_options_gets_its_default_config(self):
        conf = self._conf()
        self.assertEqual(enforce.PolicyEnforcement.Config(),
                         enforce.PolicyEnforcement.config_from(
                             conf.numa_policy_loops, 5.0))


def _group_opts():
    return conf_loops.OPTS + loop_options.loop_opts()


class LoopNamesTest(test_base.TestCase):

    def test_the_options_name_the_loops_the_entry_points_find(self):
        # Configuration imports nothing of ours: its list of loop names
        # must be the entry points' (setup.cfg).
        self.assertEqual(sorted(conf_loops.LOOP_NAMES),
                         sorted(runner.registry()))

    def test_each_loop_declares_its_own_options(self):
        # The loops' thresholds are theirs, not configuration's: each
        # loop lists its own, and no two loops or the shared options name
        # one option twice.
        shared = {o.name for o in conf_loops.OPTS}
        seen = set()
        for name, cls in runner.registry().items():
            own = {o.name for o in cls.OPTS}
            self.assertTrue(own, f'{name} declares no option')
            self.assertTrue(all(o.startswith(name + '_') for o in own),
                            f'{name}: {sorted(own)}')
            self.assertEqual(set(), own & (shared | seen), name)
            seen |= own
        self.assertEqual(sorted(seen),
                         sorted(o.name for o in loop_options.loop_opts()))

    def test_the_loops_list_their_options_through_their_entry_point(self):
        [ep] = [e for e in metadata.entry_points(group='oslo.config.opts')
                if e.name == 'nova_numa_policy.loops']
        [(group, opts)] = ep.load()()
        self.assertEqual(conf_loops.GROUP, group)
        self.assertEqual([o.name for o in loop_options.loop_opts()],
                         [o.name for o in opts])


def _installed(path, entry_points):
    """A distribution under ``path`` whose entry points are ``entry_points``.

    What pip leaves on disk: a ``.dist-info`` with its metadata and the
    ``entry_points.txt`` stevedore reads, found once ``path`` is on
    ``sys.path``.
    """
    info = os.path.join(path, 'extra_loops-1.0.dist-info')
    os.mkdir(info)
    with open(os.path.join(info, 'METADATA'), 'w') as f:
        f.write('Metadata-Version: 2.1\nName: extra-loops\nVersion: 1.0\n')
    with open(os.path.join(info, 'entry_points.txt'), 'w') as f:
        f.write(f'[{runner.LOOPS_NAMESPACE}]\n')
        f.writelines(f'{name} = {target}\n'
                     for name, target in entry_points.items())


class LoopPluginsTest(test_base.TestCase):
    """Loops are stevedore plugins of one namespace, read once."""

    def setUp(self):
        super().setUp()
        self.path = self.useFixture(fixtures.TempDir()).path
        # Another sys.path is another set of distributions to stevedore;
        # the registry is read afresh before and after.
        self.useFixture(fixtures.MonkeyPatch(
            'sys.path', [self.path] + sys.path))
        self.forget_what_was_read()
        self.addCleanup(self.forget_what_was_read)

    @staticmethod
    def forget_what_was_read():
        # The registry's and stevedore's per-process memory of the
        # namespace: both assume what is installed does not change.
        runner._entry_points.cache_clear()
        extension.ExtensionManager.ENTRY_POINT_CACHE.pop(
            runner.LOOPS_NAMESPACE, None)

    def test_a_loop_another_distribution_installs_is_found(self):
        _installed(self.path,
                   {'twin': 'nova_numa_policy.loops.carrefour:Carrefour'})
        found = runner.registry()
        self.assertIs(found['carrefour'], found['twin'])
        self.assertEqual(set(conf_loops.LOOP_NAMES) | {'twin'}, set(found))

    def test_a_loop_that_does_not_load_stops_the_agent(self):
        # stevedore would log and leave it out; an enabled loop silently
        # missing is worse than an agent that does not start.
        _installed(self.path, {'broken': 'no_such_module_for_loops:Loop'})
        self.assertRaises(ImportError, runner.registry)
