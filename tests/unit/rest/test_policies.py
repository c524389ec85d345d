import os

from oslo_config import cfg
from oslo_context import context

from nova_numa_policy.rest import app
from nova_numa_policy.rest import policies
from tests import base as test_base

SAMPLE = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'etc',
                      'policy.yaml.sample')


def _enforcer():
    conf = cfg.ConfigOpts()
    conf([], default_config_files=[], default_config_dirs=[])
    return policies.make_enforcer(conf)


class PolicyDefaultsTest(test_base.TestCase):

    def test_every_rule_allows_admins_only(self):
        enforcer = _enforcer()
        cases = [
            (['admin'], True),
            (['admin', 'member'], True),
            (['member'], False),
            (['reader'], False),
            ([], False),
        ]
        for rule in policies.list_rules():
            for roles, allowed in cases:
                with self.subTest(f'{rule.name} {roles}'):
                    ctx = context.RequestContext(roles=roles,
                                                 project_id='p')
                    self.assertEqual(allowed, enforcer.authorize(
                        rule.name, {}, ctx, do_raise=False))

    def test_every_protected_route_is_documented_by_a_rule(self):
        documented = {op['path'] for rule in policies.list_rules()
                      for op in rule.operations}
        protected = {path for path, _action in app.ROUTES
                     if path not in app.PUBLIC_PATHS}
        self.assertEqual(protected, documented)

    def test_the_sample_file_lists_every_rule(self):
        with open(SAMPLE) as f:
            sample = f.read()
        for rule in policies.list_rules():
            self.assertIn(f'#"{rule.name}": "{rule.check_str}"', sample)
