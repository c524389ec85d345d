"""Why the daemon checks its own configuration (agent.privsep).

oslo.rootwrap adds a filter admitting ``privsep-helper`` with any
arguments to whatever filters a deployment installs, so no rootwrap
rule can hold the helper to one command line; sudo's can (proven with
the real sudo, as the agent's user, in tests/host/test_privileged.py).
If this test fails, oslo.rootwrap changed: doc/source/security.rst says
rootwrap cannot narrow the command line, and must be revised.
"""

import os

import fixtures
from oslo_rootwrap import wrapper

from tests import base as test_base


class RootwrapAdmitsAnyHelperLineTest(test_base.TestCase):

    def test_an_appended_config_file_passes_even_an_exact_filter(self):
        directory = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(directory, 'agent.filters'), 'w') as f:
            f.write('[Filters]\nexact: RegExpFilter, privsep-helper, root, '
                    'privsep-helper, --privsep_context, '
                    r'agent\.privsep\.pages' '\n')
        filters = wrapper.load_filters([directory])
        line = ['privsep-helper', '--config-file', '/home/nova/evil.conf',
                '--privsep_context', 'agent.privsep.pages']
        try:
            matched = wrapper.match_filter(filters, line,
                                           exec_dirs=[directory])
        except wrapper.FilterMatchNotExecutable as exc:
            matched = exc.match
        self.assertEqual('privsep-helper', matched.name)
