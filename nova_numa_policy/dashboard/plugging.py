"""Our panel added to Horizon's settings after Horizon enabled its own.

Horizon's settings module runs ``update_dashboards`` on its own enabled
files at import; settings that import it and add ours (the panel's
tests, the lab's cloud) run it again with ours added, its results reset
first and de-duplicated after (a repeated app label is an error for
Django). A deployment needs none of this: devstack copies our enabled
file among Horizon's own (devstack/lib/horizon).
"""


def add_our_panel(horizon_config, installed_apps):
    """Re-run Horizon's dashboards update with ours; the apps to install."""
    import openstack_dashboard.enabled
    from openstack_dashboard.utils import settings as settings_utils

    from nova_numa_policy.dashboard import enabled as numa_enabled

    horizon_config.pop('dashboards', None)
    horizon_config.pop('default_dashboard', None)
    apps = list(installed_apps)
    settings_utils.update_dashboards(
        [openstack_dashboard.enabled, numa_enabled], horizon_config, apps)
    for key in ('angular_modules', 'js_files', 'js_spec_files', 'scss_files',
                'xstatic_modules', 'plugins'):
        horizon_config[key] = list(dict.fromkeys(horizon_config[key]))
    return list(dict.fromkeys(apps))
