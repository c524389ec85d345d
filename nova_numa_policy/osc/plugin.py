"""The ``openstack.cli.extension`` entry point of python-openstackclient.

OSC reads the module attributes below, adds the ``--os-numa-policy-api-
version`` option and loads the commands of ``openstack.numa_policy.v1``.
The endpoint is the catalog's ``numa-policy`` service, or the
``numa_policy_endpoint_override`` of clouds.yaml
(``OS_NUMA_POLICY_ENDPOINT_OVERRIDE``) when there is no catalog.
"""

from keystoneauth1 import adapter
from osc_lib import utils

from nova_numa_policy import restclient

API_NAME = 'numa_policy'
API_VERSION_OPTION = 'os_numa_policy_api_version'
DEFAULT_API_VERSION = '1'
API_VERSIONS = {'1': 'nova_numa_policy.restclient.Client'}


def make_client(instance):
    """The API client of an osc_lib ClientManager."""
    override = instance.get_configuration().get(
        restclient.SERVICE_TYPE.replace('-', '_') + '_endpoint_override')
    return restclient.Client(adapter.Adapter(
        session=instance.session, service_type=restclient.SERVICE_TYPE,
        region_name=instance.region_name, interface=instance.interface,
        endpoint_override=override))


def build_option_parser(parser):
    parser.add_argument(
        '--os-numa-policy-api-version',
        metavar='<numa-policy-api-version>',
        default=utils.env('OS_NUMA_POLICY_API_VERSION',
                          default=DEFAULT_API_VERSION),
        choices=sorted(API_VERSIONS),
        help='nova-numa-policy API version, default=%s '
             '(Env: OS_NUMA_POLICY_API_VERSION)' % DEFAULT_API_VERSION)
    return parser
