"""Options the tempest plugin adds to tempest.conf.

devstack's test-config phase writes them (devstack/lib/tempest); on another
cloud set them by hand.
"""

from oslo_config import cfg

service_option = cfg.BoolOpt(
    'numa_policy',
    default=False,
    help='Whether nova-numa-policy is deployed: its nova extra spec '
         'validators, scheduler plugins, agents, collector and REST API. '
         'Every test of this plugin is skipped while it is False.')

numa_policy_group = cfg.OptGroup(
    name='numa_policy',
    title='nova-numa-policy options')

NumaPolicyGroup = [
    cfg.StrOpt('catalog_type',
               default='numa-policy',
               help='Service type of the nova-numa-policy REST API in the '
                    'keystone catalog; the API endpoint is looked up by it.'),
    cfg.StrOpt('endpoint_type',
               default='public',
               choices=['public', 'admin', 'internal',
                        'publicURL', 'adminURL', 'internalURL'],
               help='Interface of the REST API endpoint to use.'),
    cfg.StrOpt('region',
               default='',
               help='Region of the REST API endpoint; empty uses '
                    '[identity] region.'),
    cfg.BoolOpt('driver_extension',
                default=False,
                help='Whether the computes run nova with '
                     'nova_numa_policy.virt.driver.NumaPolicyLibvirtDriver. '
                     'Only then does a guest start with the memory mode its '
                     'policy asks for; tests that check it are skipped '
                     'otherwise.'),
    cfg.IntOpt('report_timeout',
               default=180,
               min=1,
               help='Seconds to wait for the collector API to show what an '
                    'agent reported about a new instance: a few agent '
                    'periods plus the collector delay.'),
    cfg.IntOpt('report_interval',
               default=5,
               min=1,
               help='Seconds between two polls of the collector API.'),
    cfg.StrOpt('ssh_user',
               help='User tempest logs in as on the compute hosts to read '
                    'domain XML with virsh. Unset, the domain XML checks '
                    'are skipped.'),
    cfg.StrOpt('ssh_private_key_path',
               help='Private key of ssh_user. Unset, the domain XML checks '
                    'are skipped.'),
    cfg.PortOpt('ssh_port',
                default=22,
                help='SSH port of the compute hosts.'),
    cfg.DictOpt('ssh_hosts',
                default={},
                help='Address to SSH to for each nova compute host name, '
                     'as "host:address" pairs; a host not listed is reached '
                     'by its nova host name.'),
    cfg.StrOpt('virsh_command',
               default='sudo virsh',
               help='Command that runs virsh with access to the system '
                    'libvirt on a compute host.'),
]


def list_opts():
    return [(numa_policy_group.name, NumaPolicyGroup),
            ('service_available', [service_option])]
