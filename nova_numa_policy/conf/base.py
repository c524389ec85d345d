"""What every option module shares: how its group is registered and listed."""


def group_functions(group, opts):
    """``register_opts(conf)`` and ``list_opts()`` of one option group.

    ``register_opts`` registers ``group`` and its ``opts`` on a
    ConfigOpts; ``list_opts`` returns them for the sample generator.
    """
    def register_opts(conf):
        conf.register_group(group)
        conf.register_opts(opts, group=group)

    def list_opts():
        return {group: opts}

    return register_opts, list_opts
