"""A private ConfigOpts with the project's option groups, for one test.

oslo.config keeps an option's override in its group's table of options,
and every ConfigOpts that registers the same group object shares that
table: an override set on one "private" ConfigOpts is seen by every
later one in the same test process, config files notwithstanding. Which
tests share a process changes from run to run (stestr's workers), so a
leaked override fails some other test now and then. The fixture resets
overrides and defaults when its test ends.
"""

import fixtures
from oslo_config import cfg

from nova_numa_policy.conf import opts


class ProjectConf(fixtures.Fixture):
    """``self.conf``: ``modules``' groups (all the project's by default).

    ``call_kwargs`` go to the ConfigOpts call (no command-line arguments).
    """

    def __init__(self, modules=None, **call_kwargs):
        super().__init__()
        self.modules = opts.GROUP_MODULES if modules is None else modules
        self.call_kwargs = call_kwargs
        self.conf = None

    def _setUp(self):
        self.conf = cfg.ConfigOpts()
        for module in self.modules:
            module.register_opts(self.conf)
        self.conf([], **self.call_kwargs)
        self.addCleanup(self.conf.reset)
