"""[numa_policy_loops]: options register and build the loops' configs."""

from oslo_config import cfg
import testtools

from nova_numa_policy.conf import loops as conf_loops
from nova_numa_policy.loops import auto
from nova_numa_policy.loops import runner
from nova_numa_policy.loops import settings as loop_settings


class BuildConfigsTest(testtools.TestCase):

    def _conf(self, **overrides):
        conf = cfg.ConfigOpts()
        conf_loops.register_opts(conf)
        conf([])
        # The OptGroup object is shared: undo overrides for the next test.
        self.addCleanup(conf.clear_override_all
                        if hasattr(conf, 'clear_override_all') else
                        lambda: [conf.clear_override(
                            o.name, group='numa_policy_loops')
                            for o in conf_loops.OPTS])
        for name, value in overrides.items():
            conf.set_override(name, value, group='numa_policy_loops')
        return conf

    def test_defaults_are_the_dataclass_defaults(self):
        s = loop_settings.build_configs(self._conf().numa_policy_loops)
        self.assertEqual(('carrefour', 'brm', 'vnuioa', 'auto'), s.loops)
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
        for opt in conf_loops.OPTS:
            self.assertIn('Possible values', opt.help, opt.name)


class LoopNamesTest(testtools.TestCase):

    def test_the_options_name_the_loops_the_entry_points_find(self):
        # Configuration imports nothing of ours: its list of loop names
        # must be the entry points' (setup.cfg).
        self.assertEqual(sorted(conf_loops.LOOP_NAMES),
                         sorted(runner.registry()))
