"""What every option module shares.

How a group is registered and listed, and how an option's help names its
possible values and related options.
"""


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


def help_text(text, values, related=None):
    """An option's help in nova's layout: what, possible values, related."""
    out = f'\n{text}\n\nPossible values:\n\n* {values}\n'
    if related:
        out += f'\nRelated options:\n\n* {related}\n'
    return out
