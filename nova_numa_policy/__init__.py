"""nova-numa-policy: per-instance NUMA memory policies for OpenStack Nova."""

import pbr.version

version_info = pbr.version.VersionInfo('nova-numa-policy')
__version__ = version_info.version_string()
