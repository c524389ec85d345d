"""oslo.config options, one module per group."""

from oslo_config import cfg

from nova_numa_policy.conf import opts

CONF = cfg.CONF

for _module in opts.GROUP_MODULES:
    _module.register_opts(CONF)
